#version 460
// mul_mat for float weights (f32, f16, bf16: the type of llmrt_dequantize.glsl) with float
// activations: y[r, t] = Σ_i W[r, i] · x[i, t], one work-group per (row, column). As in the CPU
// reference every product is exact in double and summed in double: each invocation over
// i ≡ its index (mod the work-group size), then a fixed tree, so a column's result does not
// depend on how many columns run beside it.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"
#include "llmrt_dequantize.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_mul_mat_float_params {
    uint64_t w;
    uint64_t x;
    uint64_t y;
    uint64_t row_bytes;
    uint rows;
    uint k;
} p;

shared double partial[LLMRT_OPS_WG];

void main() {
    const uint r = llmrt_group_index(), t = gl_WorkGroupID.y, lane = gl_LocalInvocationID.x;
    if (r >= p.rows) return;  // the whole work-group leaves together
    const uint64_t row = p.w + uint64_t(r) * p.row_bytes;
    llmrt_op_f32 x = llmrt_op_f32(p.x + uint64_t(t) * p.k * 4u);
    double sum = 0.0;
    for (uint i = lane; i < p.k; i += LLMRT_OPS_WG)
        sum += double(llmrt_dequantize(row + uint64_t(i) * DQ_BLOCK_BYTES, 0u)) * double(x.v[i]);
    partial[lane] = sum;
    barrier();
    for (uint half_size = LLMRT_OPS_WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) partial[lane] += partial[lane + half_size];
        barrier();
    }
    if (lane == 0u) llmrt_op_f32(p.y).v[t * p.rows + r] = float(partial[0]);
}
