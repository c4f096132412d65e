#version 460
// Attention, step 3 of 3: out_h[i] = Σ_j prob_j · v_g[j][i] over j = 0 .. pos[t] (with a window
// w > 0, j = max(0, pos[t] − w + 1) .. pos[t]), with the
// probabilities of step 2 in scratch row (t · n_head + h). One invocation per element i, summing
// in float in position order as the CPU reference does (`precise`: no fused multiply-add). A
// position outside the cache gives NaN (the host checks positions it can see before a run).
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_attention_values_params {
    uint64_t probs;      // n_ctx floats per (token, head)
    uint64_t v;          // n_ctx columns of n_head_kv · head_dim (f32 or f16)
    uint64_t positions;  // int32 per token
    uint64_t out_;       // n_head · head_dim floats per token
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint n_ctx;
    uint kv_f16;
    uint window;         // 0: every key up to the position
} p;

void main() {
    const uint i = gl_GlobalInvocationID.x, h = gl_WorkGroupID.y, t = gl_WorkGroupID.z;
    if (i >= p.head_dim) return;
    const int position = llmrt_op_i32(p.positions).v[t];
    const uint at = t * p.n_head * p.head_dim + h * p.head_dim + i;
    if (position < 0 || uint(position) >= p.n_ctx) {
        llmrt_op_f32(p.out_).v[at] = LLMRT_NAN;
        return;
    }
    const uint g = h / (p.n_head / p.n_head_kv);
    const uint kv_ne0 = p.n_head_kv * p.head_dim;
    const uint element_bytes = p.kv_f16 != 0u ? 2u : 4u;
    llmrt_op_f32 probs = llmrt_op_f32(p.probs + uint64_t(t * p.n_head + h) * p.n_ctx * 4u);
    const uint64_t column0 = p.v + (uint64_t(g) * p.head_dim) * element_bytes;
    precise float sum = 0.0;
    const uint n_keys = uint(position) + 1u;
    const uint first = p.window != 0u && n_keys > p.window ? n_keys - p.window : 0u;
    for (uint j = first; j < n_keys; ++j)
        sum += probs.v[j] * llmrt_cache_at(column0 + uint64_t(j) * kv_ne0 * element_bytes, i, p.kv_f16);
    llmrt_op_f32(p.out_).v[at] = sum;
}
