#version 460
// The norm step of the lowering (graph/lower.hpp) as a dispatch of its own: the formula, the
// operands and the order of every operation are llmrt/norm_column.glsl's, whose one-work-group
// form the mat-vec before a norm runs in its last work-group (shaders/mmvq.comp, LLMRT_MMVQ_NORM).
// Here a column is split over ⌈ne0 / LLMRT_OPS_WG⌉ work-groups instead, each finishing its part.
//
// Q8_1 output: columns below `split` go to region A (qs_a, records_a), the rest to region B,
// column c − split there (the batches-of-8 and remainder regions of vulkan/ops/mul_mat.hpp).
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"
#include "llmrt/norm_column.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_norm_step_params {
    llmrt_norm_args n;  // n.first_column: 0
} p;

shared double partial[LLMRT_OPS_WG];
shared float staged[LLMRT_OPS_WG];

// s_i as llmrt_norm_sum_at takes it, through the plain view (nothing here is written concurrently).
float sum_at(uint64_t column, uint i) {
    const float a = llmrt_op_f32(p.n.a + column).v[i];
    return p.n.b != 0ul ? a + llmrt_op_f32(p.n.b + column).v[i] : a;
}

// Grid (⌈ne0 / WG⌉, columns): every work-group sums the squares of its whole column (the same
// sum, so the same scale, in each), then finishes the WG consecutive values it owns: one per
// invocation, staged in shared memory, where the first WG/32 invocations round a block each.
void main() {
    const uint t = gl_WorkGroupID.y, lane = gl_LocalInvocationID.x;
    const uint64_t column = uint64_t(t) * p.n.ne0 * 4u;  // byte offset of column t in every operand
    const uint i = gl_WorkGroupID.x * LLMRT_OPS_WG + lane;
    // The loads four at a time (in flight together), the additions in rms_norm.comp's order.
    // (Eight at a time measured slower on the H100: 0.70 against 0.38 ms per 8B token.)
    double sum = 0.0;
    uint j = lane;
    for (; j + 3u * LLMRT_OPS_WG < p.n.ne0; j += 4u * LLMRT_OPS_WG) {
        const float s0 = sum_at(column, j), s1 = sum_at(column, j + LLMRT_OPS_WG);
        const float s2 = sum_at(column, j + 2u * LLMRT_OPS_WG), s3 = sum_at(column, j + 3u * LLMRT_OPS_WG);
        sum += double(s0) * double(s0);
        sum += double(s1) * double(s1);
        sum += double(s2) * double(s2);
        sum += double(s3) * double(s3);
    }
    for (; j < p.n.ne0; j += LLMRT_OPS_WG) {
        const float s = sum_at(column, j);
        sum += double(s) * double(s);
    }
    partial[lane] = sum;
    barrier();
    for (uint half_size = LLMRT_OPS_WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) partial[lane] += partial[lane + half_size];
        barrier();
    }
    const float mean = float(partial[0] / double(p.n.ne0));
    const float scale = 1.0 / sqrt(mean + p.n.eps);

    if (i < p.n.ne0) {
        const float s = sum_at(column, i);
        if (p.n.sum_out != 0ul) llmrt_op_f32(p.n.sum_out + column).v[i] = s;
        const float n = s * scale;
        if (p.n.norm_out != 0ul) llmrt_op_f32(p.n.norm_out + column).v[i] = n;
        float v = n;
        if (p.n.w != 0ul) {
            v = n * llmrt_op_f32(p.n.w).v[i];
            if (p.n.product_out != 0ul) llmrt_op_f32(p.n.product_out + column).v[i] = v;
        }
        staged[lane] = v;
    }
    if (p.n.qs_a == 0ul) return;
    // The rounding (ne0 is a multiple of 32, and so is every work-group's first value).
    barrier();
    const uint block = (gl_WorkGroupID.x * LLMRT_OPS_WG) / 32u + lane;
    if (lane >= LLMRT_OPS_WG / 32u || block >= p.n.ne0 / 32u) return;
    float values[32];
    for (uint j = 0u; j < 32u; ++j) values[j] = staged[32u * lane + j];
    llmrt_q8_1_round_into(values, p.n.qs_a, p.n.records_a, p.n.qs_b, p.n.records_b, p.n.split, p.n.ne0, t, block);
}
