// Causal attention over the KV cache on Vulkan, grouped-query heads, in three dispatches over a
// scratch of n_ctx scores per (token, head):
//   1. attention_scores.comp  s_j = scale · q_h · k_g[j] for j = 0..pos (dot in double), or with
//                             a window w > 0 for j = max(0, pos − w + 1)..pos
//   2. softmax.comp           the scores of each (token, head) row, those keys; with sinks,
//                             exp(sink_h − m) joins the sum (m: the max of the scores and sink_h)
//   3. attention_values.comp  out_h = Σ_j p_j · v_g[j]  (float, in position order)
// the formulas and summation orders of the CPU reference (cpu/ops.hpp).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/core/qtype.hpp"
#include "llmrt/graph/node.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/norm.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"
#include "llmrt/vulkan/ops/rows.hpp"

namespace llmrt::vulkan::ops {

namespace detail {
struct attention_scores_push {
    uint64_t q = 0, k = 0, positions = 0, scores = 0;
    uint32_t n_head = 0, n_head_kv = 0, head_dim = 0, n_ctx = 0, kv_f16 = 0;
    float scale = 0.0f;
    uint32_t window = 0, unused = 0;
};
static_assert(sizeof(attention_scores_push) == 64, "attention_scores_push must match shaders/ops/attention_scores.comp");

struct attention_values_push {
    uint64_t probs = 0, v = 0, positions = 0, out = 0;
    uint32_t n_head = 0, n_head_kv = 0, head_dim = 0, n_ctx = 0, kv_f16 = 0, window = 0;
};
static_assert(sizeof(attention_values_push) == 56, "attention_values_push must match shaders/ops/attention_values.comp");
}  // namespace detail

// Scratch for `max_tokens` query columns of n_head heads against a cache of n_ctx positions.
inline std::size_t attention_scratch_bytes(int64_t max_tokens, int32_t n_head, int64_t n_ctx) {
    return std::size_t(max_tokens) * std::size_t(n_head) * std::size_t(n_ctx) * sizeof(float);
}

// q, out: cols columns of n_head · head_dim floats; k_cache, v_cache: n_ctx columns of
// n_head_kv · head_dim values of kv_type (f32 or f16); positions: one int32 per column; sinks:
// n_head floats, or an empty operand (none).
inline void record_attention(kernels& k, recorder& r, const operand& q, qtype kv_type, const operand& k_cache,
                             const operand& v_cache, int64_t n_ctx, const operand& positions, const operand& out,
                             int64_t cols, const graph::attention_params& p, const operand& scratch,
                             const operand& sinks = {}) {
    const char* name = "vulkan::ops::attention";
    check(kv_type == qtype::f32 || kv_type == qtype::f16, errc::unsupported_type,
          [&] { return std::string(name) + ": caches are f32 or f16, not type id " + std::to_string(uint32_t(kv_type)); });
    check(cols >= 1 && n_ctx >= 1 && p.n_head >= 1 && p.n_head_kv >= 1 && p.head_dim >= 1 && p.n_head % p.n_head_kv == 0 &&
              p.window >= 0,
          errc::shape_mismatch, [&] {
              return std::string(name) + ": n_head " + std::to_string(p.n_head) + ", n_head_kv " +
                     std::to_string(p.n_head_kv) + ", head_dim " + std::to_string(p.head_dim) + ", n_ctx " +
                     std::to_string(n_ctx) + ", window " + std::to_string(p.window) +
                     ": n_head_kv must divide n_head, the window be >= 0";
          });
    const device_info& device = k.device().info();
    check(uint64_t(p.head_dim) * 4 <= device.max_shared_memory, errc::missing_feature, [&] {
        return std::string(name) + ": head_dim " + std::to_string(p.head_dim) + " needs " + std::to_string(p.head_dim * 4) +
               " bytes of shared memory, the device has " + std::to_string(device.max_shared_memory);
    });
    const uint64_t q_bytes = uint64_t(p.n_head) * uint64_t(p.head_dim) * uint64_t(cols) * 4;
    const uint64_t cache_size = cache_bytes(kv_type, int64_t(p.n_head_kv) * p.head_dim, n_ctx);
    const uint64_t scratch_bytes = attention_scratch_bytes(cols, p.n_head, n_ctx);
    require_bytes(q, q_bytes, name, "q");
    require_bytes(out, q_bytes, name, "out");
    require_bytes(k_cache, cache_size, name, "the k cache");
    require_bytes(v_cache, cache_size, name, "the v cache");
    require_bytes(positions, uint64_t(cols) * 4, name, "positions");
    require_bytes(scratch, scratch_bytes, name, "the scratch");
    if (sinks.bytes) require_bytes(sinks, uint64_t(p.n_head) * 4, name, "the sinks");
    const uint32_t f16 = kv_type == qtype::f16 ? 1u : 0u;
    const operand pos = positions.part(0, uint64_t(cols) * 4), scores = scratch.part(0, scratch_bytes);

    const detail::attention_scores_push s{q.address, k_cache.address, positions.address, scratch.address,
                                          uint32_t(p.n_head), uint32_t(p.n_head_kv), uint32_t(p.head_dim),
                                          uint32_t(n_ctx), f16, p.scale, uint32_t(p.window), 0};
    const grid gs = make_grid(device, (uint64_t(n_ctx) + workgroup_size - 1) / workgroup_size, uint64_t(p.n_head), name,
                              uint64_t(cols));
    check(gs.z == uint32_t(cols), errc::shape_mismatch, [&] { return std::string(name) + ": n_ctx " + std::to_string(n_ctx) + " is too long"; });
    r.access({q.part(0, q_bytes), k_cache.part(0, cache_size), pos}, {scores});
    r.dispatch(k.pipeline("attention_scores", sizeof s, {uint32_t(p.head_dim)}), s, gs);

    const detail::softmax_push m{scratch.address, scratch.address, positions.address, sinks.bytes ? sinks.address : 0,
                                 uint32_t(n_ctx), uint32_t(n_ctx), uint32_t(p.n_head), uint32_t(p.window), 0, 0};
    const grid gm = make_grid(device, uint64_t(cols) * uint64_t(p.n_head), 1, name);
    check(gm.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": too many (token, head) rows"; });
    if (sinks.bytes)
        r.access({scores, pos, sinks.part(0, uint64_t(p.n_head) * 4)}, {scores});
    else
        r.access({scores, pos}, {scores});
    r.dispatch(k.pipeline("softmax", sizeof m), m, gm);

    const detail::attention_values_push v{scratch.address, v_cache.address, positions.address, out.address,
                                          uint32_t(p.n_head), uint32_t(p.n_head_kv), uint32_t(p.head_dim),
                                          uint32_t(n_ctx), f16, uint32_t(p.window)};
    const grid gv = make_grid(device, (uint64_t(p.head_dim) + workgroup_size - 1) / workgroup_size, uint64_t(p.n_head), name,
                              uint64_t(cols));
    r.access({scores, v_cache.part(0, cache_size), pos}, {out.part(0, q_bytes)});
    r.dispatch(k.pipeline("attention_values", sizeof v), v, gv);
}

}  // namespace llmrt::vulkan::ops
