#version 460
// Attention, step 1 of 3: the scores s_j = scale · q_h · k_g[j] of query head h of token t against
// cache positions j = 0 .. pos[t] (the causal mask; with a window w > 0 only pos[t] − w < j),
// g = h / (n_head / n_head_kv). One invocation
// per key; the dot is summed in double in element order, as the CPU reference sums it (every
// product of two floats is exact in double), so a score has the reference's bits. Scores go to
// scratch row (t · n_head + h) of n_ctx floats; steps 2 (softmax.comp) and 3
// (attention_values.comp) follow.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(constant_id = 0) const uint MAX_HEAD_DIM = 256;

layout(push_constant) uniform llmrt_attention_scores_params {
    uint64_t q;          // n_head · head_dim floats per token
    uint64_t k;          // n_ctx columns of n_head_kv · head_dim (f32 or f16)
    uint64_t positions;  // int32 per token
    uint64_t scores;     // n_ctx floats per (token, head)
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint n_ctx;
    uint kv_f16;
    float scale;
    uint window;         // 0: every key up to the position
    uint unused;         // pads the block to the C++ struct's size
} p;

shared float q_head[MAX_HEAD_DIM];

void main() {
    const uint h = gl_WorkGroupID.y, t = gl_WorkGroupID.z, lane = gl_LocalInvocationID.x;
    const uint j = gl_GlobalInvocationID.x;
    const uint q_ne0 = p.n_head * p.head_dim;
    llmrt_op_f32 q = llmrt_op_f32(p.q + (uint64_t(t) * q_ne0 + uint64_t(h) * p.head_dim) * 4u);
    for (uint i = lane; i < p.head_dim; i += LLMRT_OPS_WG) q_head[i] = q.v[i];
    barrier();
    const int position = llmrt_op_i32(p.positions).v[t];
    if (position < 0 || uint(position) >= p.n_ctx || j > uint(position)) return;
    if (p.window != 0u && uint(position) - j >= p.window) return;

    const uint g = h / (p.n_head / p.n_head_kv);
    const uint kv_ne0 = p.n_head_kv * p.head_dim;
    const uint element_bytes = p.kv_f16 != 0u ? 2u : 4u;
    const uint64_t key = p.k + (uint64_t(j) * kv_ne0 + uint64_t(g) * p.head_dim) * element_bytes;
    double dot = 0.0;
    for (uint i = 0u; i < p.head_dim; ++i) dot += double(q_head[i]) * double(llmrt_cache_at(key, i, p.kv_f16));
    llmrt_op_f32(p.scores).v[(t * p.n_head + h) * p.n_ctx + j] = float(dot) * p.scale;
}
