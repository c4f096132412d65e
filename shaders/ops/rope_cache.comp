#version 460
// The rope_cache step of the lowering (graph/lower.hpp) for one layer's attention inputs:
//   q' = rope(q)              written to q_out
//   K[pos] = rope(k)          (and to k_out when kept, address not 0)
//   V[pos] = v
// One invocation per element of a column's q, k and v (n_head·head_dim + 2·n_head_kv·head_dim of
// them), grid y = column. The rotation is llmrt_rope_rotate (ops_common.glsl), as rope.comp does
// it, and the cache writes follow set_rows.comp: converted to the cache's type by
// llmrt/half.glsl, the later of two tokens at one position wins, and a position outside the
// cache writes nothing (the host checks the positions before a run). q, k and v columns lie
// q_stride, k_stride and v_stride floats apart. YaRN as in rope.comp.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

// 128 bytes, the least push-constant room Vulkan promises: head counts, sizes and flags share
// words.
layout(push_constant) uniform llmrt_rope_cache_params {
    uint64_t q;
    uint64_t k;
    uint64_t v;
    uint64_t q_out;
    uint64_t k_out;      // 0: rope(k) is not kept
    uint64_t k_cache;
    uint64_t v_cache;
    uint64_t positions;  // int32 per token
    uint q_stride;
    uint k_stride;
    uint v_stride;
    uint heads;          // n_head | n_head_kv << 16
    uint dims;           // head_dim | n_rot << 16
    uint flags;          // bit 0: K cache f16, bit 1: V cache f16, bit 2: NeoX pair order
    float theta_scale;
    uint n_ctx;
    uint tokens;         // live columns
    float freq_scale;
    float ext_factor;    // YaRN's terms (llmrt_rope_yarn)
    float mscale;
    float corr_low;
    float corr_span;
    uint64_t factors;    // n_rot/2 floats, or 0: every factor 1
} p;

void main() {
    const uint e = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    const uint n_head = p.heads & 0xffffu, n_head_kv = p.heads >> 16, head_dim = p.dims & 0xffffu, n_rot = p.dims >> 16;
    const uint q_ne0 = n_head * head_dim, kv_ne0 = n_head_kv * head_dim;
    if (e >= q_ne0 + 2u * kv_ne0) return;
    llmrt_op_i32 positions = llmrt_op_i32(p.positions);
    const int position = positions.v[t];

    if (e >= q_ne0 + kv_ne0) {  // v: a copy into the cache
        const uint i = e - q_ne0 - kv_ne0;
        if (!llmrt_writes_cache_column(positions, t, p.tokens, p.n_ctx)) return;
        llmrt_store_cache(p.v_cache, (p.flags & 2u) != 0u, uint64_t(position) * kv_ne0 + i,
                    llmrt_op_f32(p.v + uint64_t(t) * p.v_stride * 4u).v[i]);
        return;
    }
    const bool is_q = e < q_ne0;
    const uint i = is_q ? e : e - q_ne0;  // the element in its vector
    llmrt_op_f32 x = llmrt_op_f32(is_q ? p.q + uint64_t(t) * p.q_stride * 4u : p.k + uint64_t(t) * p.k_stride * 4u);
    const uint r = i % head_dim;
    float value = x.v[i];
    if (r < n_rot) {
        uint pair;
        bool first;
        const uvec2 ab = (i - r) + llmrt_rope_pair(r, n_rot, (p.flags >> 2) & 1u, pair, first);
        const float factor = p.factors != 0ul ? llmrt_op_f32(p.factors).v[pair] : 1.0;
        value = llmrt_rope_rotate(x.v[ab.x], x.v[ab.y], first, position, pair, p.theta_scale, factor, p.freq_scale,
                                  llmrt_rope_yarn(p.ext_factor, p.mscale, p.corr_low, p.corr_span));
    }
    if (is_q) {
        llmrt_op_f32(p.q_out + uint64_t(t) * q_ne0 * 4u).v[i] = value;
        return;
    }
    if (p.k_out != 0ul) llmrt_op_f32(p.k_out + uint64_t(t) * kv_ne0 * 4u).v[i] = value;
    if (!llmrt_writes_cache_column(positions, t, p.tokens, p.n_ctx)) return;
    llmrt_store_cache(p.k_cache, (p.flags & 1u) != 0u, uint64_t(position) * kv_ne0 + i, value);
}
