#version 460
// The attention step of the lowering (graph/lower.hpp): causal attention of query head h of token
// t over cache positions 0 .. pos[t] (with a window w > 0, max(0, pos − w + 1) .. pos), split over
// the cache and combined in one dispatch.
//
// Grid (max_groups, n_head, tokens), max_groups = min(32, ⌈n_ctx / 128⌉) (ops::attention_groups).
// The keys are cut into tiles of 128; `groups` =
// ⌈tiles / ⌈tiles / min(max_groups, tiles)⌉⌉ work-groups take consecutive runs of tiles (the
// others return at once). Over its tiles a work-group keeps the running maximum m, the sum
// l = Σ exp(s_j − m) and o = Σ exp(s_j − m) · v_j (flash decoding): per tile, one invocation per
// key computes s_j = scale · q · k_j, then come the tile's maximum and exponentials, and the
// values, each invocation summing a 16-byte unit of the heads of every (WG / units)-th key, the
// units' partial sums added in shared memory in a fixed order. Heads that are no whole number of
// 16-byte units take a scalar path.
// It writes (m, l, o) to `partials` and counts itself done on the (token, head)'s counter; the
// last one to finish combines all groups in group order,
//   M = max m_g,  out = Σ_g exp(m_g − M) · o_g / Σ_g exp(m_g − M) · l_g,
// with a sink, M = max(max m_g, sink_h) and exp(sink_h − M) added to the denominator last,
// so the result does not depend on which group finished last, nor on the batch the token runs
// in, and resets the counter for the next dispatch. With a Q8_1 target (head_dim a multiple of
// 32) it also writes the rounding of its head's blocks for the matvec step that reads `out`.
// A position outside the cache gives NaN (the host checks positions before a run).
//
// The sums run in float in tile order, not in the CPU reference's order: the result agrees with
// the reference to rounding, as the CUDA backend's split attention does.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "ops_common.glsl"
#include "llmrt/q8_1_round.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(constant_id = 0) const uint KV_F16 = 0u;  // 1: the caches hold f16, else f32

#define TILE LLMRT_OPS_WG
#define MAX_HEAD_DIM 256u

// Partials and counters pass between work-groups: coherent, so the last group reads what the
// others wrote before they counted themselves done.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer llmrt_shared_f32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer llmrt_shared_u32 { uint v[]; };

layout(push_constant) uniform llmrt_attention_step_params {
    uint64_t q;          // n_head · head_dim floats per token, q_stride floats apart
    uint64_t k;          // n_ctx columns of n_head_kv · head_dim (f32 or f16)
    uint64_t v;
    uint64_t positions;  // int32 per token
    uint64_t out_;       // n_head · head_dim floats per token; 0: not kept
    uint64_t partials;   // (head_dim + 2) floats per (token, head, group)
    uint64_t counters;   // one uint per (token, head), zero between dispatches
    uint64_t qs_a;       // 0: no rounding
    uint64_t records_a;
    uint64_t qs_b;
    uint64_t records_b;
    uint64_t sinks;      // 0: none; else one float per head
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint n_ctx;
    float scale;
    uint split;          // Q8_1 columns below it in region A, the rest in region B
    uint q_stride;
    uint window;         // 0: every key up to the position
} p;

shared float q_head[MAX_HEAD_DIM];
shared float tile[TILE];
shared float reduce_slot[LLMRT_OPS_WG];
shared float head_out[MAX_HEAD_DIM];
shared float unit_sums[LLMRT_OPS_WG * 8u];  // per (key group, element): a tile's partial values
shared bool is_last;
shared float group_m[32], group_l[32];  // the combine: per group m (then its weight) and l; max_groups <= 32

layout(buffer_reference, std430, buffer_reference_align = 16) buffer llmrt_cache_u128 { uvec4 v[]; };

float group_max(float x) {
    x = subgroupMax(x);
    if (subgroupElect()) reduce_slot[gl_SubgroupID] = x;
    barrier();
    float r = reduce_slot[0];
    for (uint s = 1u; s < gl_NumSubgroups; ++s) r = max(r, reduce_slot[s]);
    barrier();
    return r;
}

float group_sum(float x) {
    x = subgroupAdd(x);
    if (subgroupElect()) reduce_slot[gl_SubgroupID] = x;
    barrier();
    float r = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) r += reduce_slot[s];
    barrier();
    return r;
}

// One 16-byte unit of a cache row as 8 (f16) or 4 (f32) floats: every index below is a constant
// once the loops over a unit's 4 words unroll, so nothing is indexed at run time (which would put
// the arrays in local memory).
void unit_values_f16(uvec4 u, out float x[8]) {
    for (uint w = 0u; w < 4u; ++w) {
        const vec2 h = unpackHalf2x16(u[w]);
        x[2u * w] = h.x;
        x[2u * w + 1u] = h.y;
    }
}

void main() {
    const uint g = gl_WorkGroupID.x, h = gl_WorkGroupID.y, t = gl_WorkGroupID.z, lane = gl_LocalInvocationID.x;
    const uint hd = p.head_dim;
    const uint q_ne0 = p.n_head * hd, kv_ne0 = p.n_head_kv * hd;
    const int position = llmrt_op_i32(p.positions).v[t];
    if (position < 0 || uint(position) >= p.n_ctx) {
        if (g == 0u && p.out_ != 0ul)
            for (uint i = lane; i < hd; i += LLMRT_OPS_WG) llmrt_op_f32(p.out_).v[t * q_ne0 + h * hd + i] = LLMRT_NAN;
        return;
    }
    const uint n_keys = uint(position) + 1u;
    const uint first_key = p.window != 0u && n_keys > p.window ? n_keys - p.window : 0u;
    const uint max_groups = min(32u, (p.n_ctx + TILE - 1u) / TILE);
    const uint tiles = (n_keys - first_key + TILE - 1u) / TILE;
    const uint tiles_per_group = (tiles + min(max_groups, tiles) - 1u) / min(max_groups, tiles);
    const uint groups = (tiles + tiles_per_group - 1u) / tiles_per_group;
    if (g >= groups) return;
    const uint begin = first_key + g * tiles_per_group * TILE, end = min(n_keys, begin + tiles_per_group * TILE);

    for (uint i = lane; i < hd; i += LLMRT_OPS_WG) q_head[i] = llmrt_op_f32(p.q).v[t * p.q_stride + h * hd + i];
    barrier();
    const bool f16 = KV_F16 != 0u;
    const uint element_bytes = f16 ? 2u : 4u;
    const uint kv_head = h / (p.n_head / p.n_head_kv);
    const uint64_t k0 = p.k + uint64_t(kv_head) * hd * element_bytes;
    const uint64_t v0 = p.v + uint64_t(kv_head) * hd * element_bytes;
    const uint64_t row_bytes = uint64_t(kv_ne0) * element_bytes;
    // The vector path: a head is a whole number of 16-byte units (so every head starts 16-aligned).
    const uint unit_values = 16u / element_bytes;
    const bool vector = hd % unit_values == 0u;
    const uint units = hd / unit_values;
    const uint key_groups = vector ? LLMRT_OPS_WG / units : 1u;
    const uint unit = lane % units, key_group = lane / units;

    float m = uintBitsToFloat(0xff800000u);  // -inf
    float l = 0.0, o0 = 0.0, o1 = 0.0;       // o0, o1: elements lane and lane + WG of the head
    for (uint first = begin; first < end; first += TILE) {
        const uint n = min(TILE, end - first);
        float s = uintBitsToFloat(0xff800000u);
        if (lane < n) {
            const uint64_t row = k0 + uint64_t(first + lane) * row_bytes;
            float dot = 0.0;
            if (vector) {
                llmrt_cache_u128 r = llmrt_cache_u128(row);
                // Eight units' loads in flight at a time (a load's wait would otherwise come once
                // per unit).
                for (uint u0 = 0u; u0 < units; u0 += 8u) {
                    uvec4 w[8];
                    for (uint c = 0u; c < 8u; ++c) w[c] = u0 + c < units ? r.v[u0 + c] : uvec4(0u);
                    for (uint c = 0u; c < 8u; ++c) {
                        if (u0 + c >= units) break;
                        if (f16) {
                            float x[8];
                            unit_values_f16(w[c], x);
                            for (uint e = 0u; e < 8u; ++e) dot += q_head[8u * (u0 + c) + e] * x[e];
                        } else {
                            for (uint e = 0u; e < 4u; ++e) dot += q_head[4u * (u0 + c) + e] * uintBitsToFloat(w[c][e]);
                        }
                    }
                }
            } else {
                for (uint i = 0u; i < hd; ++i) dot += q_head[i] * llmrt_cache_at(row, i, KV_F16);
            }
            s = dot * p.scale;
        }
        const float m_new = max(m, group_max(s));
        const float carry = exp(m - m_new);
        const float e = lane < n ? exp(s - m_new) : 0.0;
        tile[lane] = e;
        l = l * carry + group_sum(e);  // its barriers make `tile` visible
        if (vector) {
            float acc[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            if (key_group < key_groups) {
                // Eight keys' loads in flight at a time, summed in key order.
                for (uint key0 = key_group; key0 < n; key0 += 8u * key_groups) {
                    uvec4 w[8];
                    for (uint c = 0u; c < 8u; ++c) {
                        const uint key = key0 + c * key_groups;
                        w[c] = key < n ? llmrt_cache_u128(v0 + uint64_t(first + key) * row_bytes).v[unit] : uvec4(0u);
                    }
                    for (uint c = 0u; c < 8u; ++c) {
                        const uint key = key0 + c * key_groups;
                        if (key >= n) break;
                        const float pk = tile[key];
                        if (f16) {
                            float x[8];
                            unit_values_f16(w[c], x);
                            for (uint j = 0u; j < 8u; ++j) acc[j] += pk * x[j];
                        } else {
                            for (uint j = 0u; j < 4u; ++j) acc[j] += pk * uintBitsToFloat(w[c][j]);
                        }
                    }
                }
                if (f16)
                    for (uint j = 0u; j < 8u; ++j) unit_sums[key_group * hd + 8u * unit + j] = acc[j];
                else
                    for (uint j = 0u; j < 4u; ++j) unit_sums[key_group * hd + 4u * unit + j] = acc[j];
            }
            barrier();
            float t0 = 0.0, t1 = 0.0;
            for (uint q = 0u; q < key_groups; ++q) {
                if (lane < hd) t0 += unit_sums[q * hd + lane];
                if (lane + LLMRT_OPS_WG < hd) t1 += unit_sums[q * hd + lane + LLMRT_OPS_WG];
            }
            o0 = o0 * carry + t0;
            o1 = o1 * carry + t1;
        } else {
            float t0 = 0.0, t1 = 0.0;
            for (uint key = 0u; key < n; ++key) {
                const uint64_t row = v0 + uint64_t(first + key) * row_bytes;
                if (lane < hd) t0 += tile[key] * llmrt_cache_at(row, lane, KV_F16);
                if (lane + LLMRT_OPS_WG < hd) t1 += tile[key] * llmrt_cache_at(row, lane + LLMRT_OPS_WG, KV_F16);
            }
            o0 = o0 * carry + t0;
            o1 = o1 * carry + t1;
        }
        m = m_new;
        barrier();  // `tile` and `unit_sums` are read before the next tile overwrites them
    }
    llmrt_shared_f32 partial = llmrt_shared_f32(p.partials + 4ul * uint64_t((t * p.n_head + h) * max_groups + g) * (hd + 2u));
    if (lane < hd) partial.v[2u + lane] = o0;
    if (lane + LLMRT_OPS_WG < hd) partial.v[2u + lane + LLMRT_OPS_WG] = o1;
    if (lane == 0u) {
        partial.v[0] = m;
        partial.v[1] = l;
    }
    memoryBarrierBuffer();
    barrier();
    llmrt_shared_u32 counters = llmrt_shared_u32(p.counters);
    if (lane == 0u) is_last = atomicAdd(counters.v[t * p.n_head + h], 1u) == groups - 1u;
    barrier();
    if (!is_last) return;
    memoryBarrierBuffer();
    if (lane == 0u) counters.v[t * p.n_head + h] = 0u;

    llmrt_shared_f32 all = llmrt_shared_f32(p.partials + 4ul * uint64_t((t * p.n_head + h) * max_groups) * (hd + 2u));
    // Each group's m and l once into shared memory, then its weight exp(m_g − M).
    if (lane < groups) {
        group_m[lane] = all.v[lane * (hd + 2u)];
        group_l[lane] = all.v[lane * (hd + 2u) + 1u];
    }
    barrier();
    float m_all = uintBitsToFloat(0xff800000u);
    for (uint q = 0u; q < groups; ++q) m_all = max(m_all, group_m[q]);
    const bool has_sink = p.sinks != 0ul;
    const float sink = has_sink ? llmrt_op_f32(p.sinks).v[h] : 0.0;
    if (has_sink) m_all = max(m_all, sink);
    barrier();
    if (lane < groups) group_m[lane] = exp(group_m[lane] - m_all);
    barrier();
    float l_all = 0.0;
    for (uint q = 0u; q < groups; ++q) l_all += group_m[q] * group_l[q];
    if (has_sink) l_all += exp(sink - m_all);
    for (uint i = lane; i < hd; i += LLMRT_OPS_WG) {
        // The groups' values in batches of 4 loads, added in group order.
        float o = 0.0;
        uint q = 0u;
        for (; q + 4u <= groups; q += 4u) {
            const float a0 = all.v[q * (hd + 2u) + 2u + i], a1 = all.v[(q + 1u) * (hd + 2u) + 2u + i];
            const float a2 = all.v[(q + 2u) * (hd + 2u) + 2u + i], a3 = all.v[(q + 3u) * (hd + 2u) + 2u + i];
            o += group_m[q] * a0;
            o += group_m[q + 1u] * a1;
            o += group_m[q + 2u] * a2;
            o += group_m[q + 3u] * a3;
        }
        for (; q < groups; ++q) o += group_m[q] * all.v[q * (hd + 2u) + 2u + i];
        const float result = o / l_all;
        if (p.out_ != 0ul) llmrt_op_f32(p.out_).v[t * q_ne0 + h * hd + i] = result;
        head_out[i] = result;
    }
    if (p.qs_a == 0ul) return;
    barrier();
    for (uint b = lane; b < hd / 32u; b += LLMRT_OPS_WG) {
        float values[32];
        for (uint j = 0u; j < 32u; ++j) values[j] = head_out[32u * b + j];
        llmrt_q8_1_round_into(values, p.qs_a, p.records_a, p.qs_b, p.records_b, p.split, q_ne0, t, h * hd / 32u + b);
    }
}
