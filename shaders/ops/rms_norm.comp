#version 460
// rms_norm: y = x · 1/sqrt(Σx²/n + eps), one work-group per column. The sum of squares is kept in
// double, each invocation over elements i ≡ its index (mod the work-group size), then a tree over
// the work-group in a fixed order: the same bits on every run, and the CPU reference's mean
// (also summed in double) in all but rare last-bit cases.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_rms_norm_params {
    uint64_t x;
    uint64_t y;
    uint ne0;
    float eps;
} p;

shared double partial[LLMRT_OPS_WG];

void main() {
    const uint t = gl_WorkGroupID.y, lane = gl_LocalInvocationID.x;
    llmrt_op_f32 x = llmrt_op_f32(p.x + uint64_t(t) * p.ne0 * 4u);
    llmrt_op_f32 y = llmrt_op_f32(p.y + uint64_t(t) * p.ne0 * 4u);
    double sum = 0.0;
    for (uint i = lane; i < p.ne0; i += LLMRT_OPS_WG) sum += double(x.v[i]) * double(x.v[i]);
    partial[lane] = sum;
    barrier();
    for (uint half_size = LLMRT_OPS_WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) partial[lane] += partial[lane + half_size];
        barrier();
    }
    const float mean = float(partial[0] / double(p.ne0));
    const float scale = 1.0 / sqrt(mean + p.eps);
    for (uint i = lane; i < p.ne0; i += LLMRT_OPS_WG) y.v[i] = x.v[i] * scale;
}
