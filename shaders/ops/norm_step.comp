#version 460
// The norm step of the lowering (graph/lower.hpp):
//   s = a + b  (or s = a)       n = s · 1/sqrt(Σs²/ne0 + eps)       p = n ⊙ w  (w: one column)
// writing each of s, n and p that is kept (address not 0) and, when asked, the Q8_1 rounding of
// the last one (p, or n without a product) for the matvec step that reads it. Every value has the
// bits of the add, rms_norm and mul shaders run one by one: the same float operations, the sum
// of squares in double in rms_norm.comp's order (each invocation over i ≡ its index mod the
// work-group size, then the same tree), and the rounding through llmrt/q8_1_round.glsl.
//
// Q8_1 output: columns below `split` go to region A (qs_a, records_a), the rest to region B,
// column c − split there (the batches-of-8 and remainder regions of vulkan/ops/mul_mat.hpp).
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"
#include "llmrt/q8_1_round.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_norm_step_params {
    uint64_t a;
    uint64_t b;            // 0: no residual add
    uint64_t sum_out;      // 0: s is not kept
    uint64_t norm_out;     // 0: n is not kept
    uint64_t w;            // 0: no product
    uint64_t product_out;  // 0: p is not kept
    uint64_t qs_a;         // 0: no rounding
    uint64_t records_a;
    uint64_t qs_b;
    uint64_t records_b;
    uint ne0;
    float eps;
    uint split;
    uint unused;
} p;

shared double partial[LLMRT_OPS_WG];
shared float staged[LLMRT_OPS_WG];

float sum_at(uint64_t column, uint i) {
    const float a = llmrt_op_f32(p.a + column).v[i];
    return p.b != 0ul ? a + llmrt_op_f32(p.b + column).v[i] : a;
}

// Grid (⌈ne0 / WG⌉, columns): every work-group sums the squares of its whole column (the same
// sum, so the same scale, in each), then finishes the WG consecutive values it owns: one per
// invocation, staged in shared memory, where the first WG/32 invocations round a block each.
void main() {
    const uint t = gl_WorkGroupID.y, lane = gl_LocalInvocationID.x;
    const uint64_t column = uint64_t(t) * p.ne0 * 4u;  // byte offset of column t in every operand
    const uint i = gl_WorkGroupID.x * LLMRT_OPS_WG + lane;
    // The loads four at a time (in flight together), the additions in rms_norm.comp's order.
    // (Eight at a time measured slower on the H100: 0.70 against 0.38 ms per 8B token.)
    double sum = 0.0;
    uint j = lane;
    for (; j + 3u * LLMRT_OPS_WG < p.ne0; j += 4u * LLMRT_OPS_WG) {
        const float s0 = sum_at(column, j), s1 = sum_at(column, j + LLMRT_OPS_WG);
        const float s2 = sum_at(column, j + 2u * LLMRT_OPS_WG), s3 = sum_at(column, j + 3u * LLMRT_OPS_WG);
        sum += double(s0) * double(s0);
        sum += double(s1) * double(s1);
        sum += double(s2) * double(s2);
        sum += double(s3) * double(s3);
    }
    for (; j < p.ne0; j += LLMRT_OPS_WG) {
        const float s = sum_at(column, j);
        sum += double(s) * double(s);
    }
    partial[lane] = sum;
    barrier();
    for (uint half_size = LLMRT_OPS_WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) partial[lane] += partial[lane + half_size];
        barrier();
    }
    const float mean = float(partial[0] / double(p.ne0));
    const float scale = 1.0 / sqrt(mean + p.eps);

    if (i < p.ne0) {
        const float s = sum_at(column, i);
        if (p.sum_out != 0ul) llmrt_op_f32(p.sum_out + column).v[i] = s;
        const float n = s * scale;
        if (p.norm_out != 0ul) llmrt_op_f32(p.norm_out + column).v[i] = n;
        float v = n;
        if (p.w != 0ul) {
            v = n * llmrt_op_f32(p.w).v[i];
            if (p.product_out != 0ul) llmrt_op_f32(p.product_out + column).v[i] = v;
        }
        staged[lane] = v;
    }
    if (p.qs_a == 0ul) return;
    // The rounding (ne0 is a multiple of 32, and so is every work-group's first value).
    barrier();
    const uint block = (gl_WorkGroupID.x * LLMRT_OPS_WG) / 32u + lane;
    if (lane >= LLMRT_OPS_WG / 32u || block >= p.ne0 / 32u) return;
    float values[32];
    for (uint j = 0u; j < 32u; ++j) values[j] = staged[32u * lane + j];
    llmrt_q8_1_round_into(values, p.qs_a, p.records_a, p.qs_b, p.records_b, p.split, p.ne0, t, block);
}
