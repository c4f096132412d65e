// The fused steps of the lowering (graph/lower.hpp) on Vulkan, one dispatch each:
//   norm_step       [s = a + b] -> n = rms_norm(s) -> [p = n ⊙ w], and the Q8_1 rounding of the
//                   last one for the matvec step       (shaders/ops/norm_step.comp)
//   swiglu_round    y = silu(gate) ⊙ up and its rounding (shaders/ops/swiglu_round.comp)
//   rope_cache      q' = rope(q), K[pos] = rope(k), V[pos] = v (shaders/ops/rope_cache.comp)
//   attention_step  attention split over the cache and combined by the last work-group, with the
//                   rounding of the result (shaders/ops/attention_step.comp)
// The first three give the bits of their nodes' shaders run one by one; the attention step
// agrees with the three-dispatch attention (ops/attention.hpp) to rounding. An operand of 0
// bytes is one the step does not write (a result nobody reads) or does not have (no residual
// add, no product).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llmrt/core/qtype.hpp"
#include "llmrt/graph/node.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/mul_mat.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"
#include "llmrt/vulkan/ops/rope.hpp"
#include "llmrt/vulkan/ops/rows.hpp"

namespace llmrt::vulkan::ops {

namespace detail {
struct norm_step_push {
    uint64_t a, b, sum_out, norm_out, w, product_out, qs_a, records_a, qs_b, records_b;
    uint32_t ne0;
    float eps;
    uint32_t split, unused;
};
static_assert(sizeof(norm_step_push) == 96, "norm_step_push must match shaders/ops/norm_step.comp");

struct swiglu_round_push {
    uint64_t gate, up, y, qs_a, records_a, qs_b, records_b;
    uint32_t ne0, split, gate_stride, up_stride;
};
static_assert(sizeof(swiglu_round_push) == 72, "swiglu_round_push must match shaders/ops/swiglu_round.comp");

// 128 bytes (Vulkan's least push-constant room): head counts and sizes share words, as do flags.
struct rope_cache_push {
    uint64_t q = 0, k = 0, v = 0, q_out = 0, k_out = 0, k_cache = 0, v_cache = 0, positions = 0;
    uint32_t q_stride = 0, k_stride = 0, v_stride = 0;
    uint32_t heads = 0;  // n_head | n_head_kv << 16
    uint32_t dims = 0;   // head_dim | n_rot << 16
    uint32_t flags = 0;  // bit 0: K cache f16, bit 1: V cache f16, bit 2: NeoX
    float theta_scale = 0.0f;
    uint32_t n_ctx = 0, tokens = 0;
    float freq_scale = 0.0f;
    rope_yarn yarn;
    uint64_t factors = 0;
};
static_assert(sizeof(rope_cache_push) == 128, "rope_cache_push must match shaders/ops/rope_cache.comp");

// 128 bytes (Vulkan's least push-constant room): the cache type is a specialization constant,
// the groups per (token, head) follow from n_ctx (attention_groups).
struct attention_step_push {
    uint64_t q = 0, k = 0, v = 0, positions = 0, out = 0, partials = 0, counters = 0, qs_a = 0, records_a = 0, qs_b = 0,
             records_b = 0;
    uint64_t sinks = 0;  // one float per head, or 0
    uint32_t n_head = 0, n_head_kv = 0, head_dim = 0, n_ctx = 0;
    float scale = 0.0f;
    uint32_t split = 0, q_stride = 0;
    uint32_t window = 0;  // 0: every key up to the position
};
static_assert(sizeof(attention_step_push) == 128, "attention_step_push must match shaders/ops/attention_step.comp");

inline uint64_t address_or_0(const operand& o) { return o.bytes ? o.address : 0; }
inline uint64_t f32_bytes(int64_t values) { return uint64_t(values) * 4; }

// Declares a Q8_1 target's regions as written.
inline void add_rounding(std::vector<operand>& writes, const q8_1_activations* rounding) {
    if (!rounding) return;
    if (rounding->region_a.bytes) writes.push_back(rounding->region_a);
    if (rounding->region_b.bytes) writes.push_back(rounding->region_b);
}
}  // namespace detail

// Keys per tile of the attention step and the most work-groups one (token, head) is split over.
inline constexpr int64_t attention_tile = 128;
inline constexpr int64_t attention_max_groups = 32;  // shaders/ops/attention_step.comp holds 32 groups' m and l

// shaders/ops/attention_step.comp computes the same number from n_ctx.
inline uint32_t attention_groups(int64_t n_ctx) {
    return uint32_t(std::min<int64_t>(attention_max_groups, (n_ctx + attention_tile - 1) / attention_tile));
}

// Scratch of the attention step: (head_dim + 2) floats per (token, head, group).
inline std::size_t attention_step_scratch_bytes(int64_t max_tokens, int32_t n_head, int32_t head_dim, int64_t n_ctx) {
    return std::size_t(max_tokens) * std::size_t(n_head) * attention_groups(n_ctx) * std::size_t(head_dim + 2) * 4;
}
// Its counters: one uint32 per (token, head), zero between dispatches.
inline std::size_t attention_step_counter_bytes(int64_t max_tokens, int32_t n_head) {
    return std::size_t(max_tokens) * std::size_t(n_head) * 4;
}

// a, b, the outputs: cols columns of ne0 floats; w: one column. With `rounding`, ne0 is a multiple
// of 32 and the rounding is of p (or of n without w).
inline void record_norm_step(kernels& k, recorder& r, const operand& a, const operand& b, const operand& sum_out,
                             const operand& norm_out, const operand& w, const operand& product_out,
                             const q8_1_activations* rounding, int64_t ne0, int64_t cols, float eps) {
    const char* name = "vulkan::ops::norm_step";
    check(ne0 >= 1 && cols >= 1 && ne0 <= int64_t(UINT32_MAX) && (!rounding || (ne0 % 32 == 0 && rounding->k == ne0 &&
                                                                                  rounding->cols == cols)),
          errc::shape_mismatch, [&] {
              return std::string(name) + ": " + std::to_string(cols) + " columns of " + std::to_string(ne0) +
                     " values (rounded to Q8_1: a multiple of 32, the rounding's shape)";
          });
    const uint64_t bytes = detail::f32_bytes(ne0 * cols);
    require_bytes(a, bytes, name, "a");
    std::vector<operand> reads{a.part(0, bytes)}, writes;
    if (b.bytes) reads.push_back(b.part(0, bytes));
    if (w.bytes) reads.push_back(w.part(0, detail::f32_bytes(ne0)));
    for (const operand* o : {&sum_out, &norm_out, &product_out})
        if (o->bytes) writes.push_back(o->part(0, bytes));
    detail::add_rounding(writes, rounding);
    const q8_1_target q = rounding ? q8_1_target_of(*rounding) : q8_1_target{};
    const detail::norm_step_push push{a.address, detail::address_or_0(b), detail::address_or_0(sum_out),
                                      detail::address_or_0(norm_out), detail::address_or_0(w),
                                      w.bytes ? detail::address_or_0(product_out) : 0, q.qs_a, q.records_a, q.qs_b,
                                      q.records_b, uint32_t(ne0), eps, q.split, 0};
    const grid g = make_grid(k.device().info(), (uint64_t(ne0) + workgroup_size - 1) / workgroup_size, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": columns too long"; });
    r.access(reads, writes);
    r.dispatch(k.pipeline("norm_step", sizeof push), push, g);
}

// gate, up: cols columns of ne0 floats, gate_stride and up_stride floats apart; y (optional): dense.
inline void record_swiglu_round(kernels& k, recorder& r, const operand& gate, int64_t gate_stride, const operand& up,
                                int64_t up_stride, const operand& y, const q8_1_activations& rounding, int64_t ne0,
                                int64_t cols) {
    const char* name = "vulkan::ops::swiglu_round";
    check(ne0 >= 32 && ne0 % 32 == 0 && cols >= 1 && gate_stride >= ne0 && up_stride >= ne0 && rounding.k == ne0 &&
              rounding.cols == cols && gate_stride <= int64_t(UINT32_MAX) && up_stride <= int64_t(UINT32_MAX),
          errc::shape_mismatch, [&] {
              return std::string(name) + ": " + std::to_string(cols) + " columns of " + std::to_string(ne0) +
                     " values (a multiple of 32), strides " + std::to_string(gate_stride) + " and " + std::to_string(up_stride);
          });
    const uint64_t span_gate = detail::f32_bytes(gate_stride * (cols - 1) + ne0),
                   span_up = detail::f32_bytes(up_stride * (cols - 1) + ne0);
    require_bytes(gate, span_gate, name, "gate");
    require_bytes(up, span_up, name, "up");
    std::vector<operand> writes;
    if (y.bytes) writes.push_back(y.part(0, detail::f32_bytes(ne0 * cols)));
    detail::add_rounding(writes, &rounding);
    const q8_1_target q = q8_1_target_of(rounding);
    const detail::swiglu_round_push push{gate.address, up.address, detail::address_or_0(y), q.qs_a, q.records_a, q.qs_b,
                                         q.records_b, uint32_t(ne0), q.split, uint32_t(gate_stride), uint32_t(up_stride)};
    const grid g = make_grid(k.device().info(), (uint64_t(ne0) + workgroup_size - 1) / workgroup_size, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": columns too long"; });
    const std::vector<operand> reads{gate.part(0, span_gate), up.part(0, span_up)};
    r.access(reads, writes);
    r.dispatch(k.pipeline("swiglu_round", sizeof push), push, g);
}

// One layer's attention inputs: q (n_head heads), k and v (n_head_kv heads) of head_dim floats per
// column, q_stride, k_stride, v_stride floats apart; q_out dense; k_out optional; caches of n_ctx
// columns of n_head_kv · head_dim values of their types (f32 or f16).
struct rope_cache_operands {
    operand q, k, v, q_out, k_out, k_cache, v_cache, positions;
    int64_t q_stride = 0, k_stride = 0, v_stride = 0;
    qtype k_type = qtype::f16, v_type = qtype::f16;
    int64_t n_ctx = 0;
    int32_t n_head_kv = 0;
    operand factors;  // n_rot/2 frequency factors, or empty (every factor 1)
};

inline void record_rope_cache(kernels& k, recorder& r, const rope_cache_operands& o, int64_t cols, const graph::rope_params& p) {
    const char* name = "vulkan::ops::rope_cache";
    auto cache_type = [](qtype t) { return t == qtype::f32 || t == qtype::f16; };
    check(cache_type(o.k_type) && cache_type(o.v_type), errc::unsupported_type,
          [&] { return std::string(name) + ": caches are f32 or f16"; });
    const int64_t q_ne0 = int64_t(p.n_head) * p.head_dim, kv_ne0 = int64_t(o.n_head_kv) * p.head_dim;
    check(cols >= 1 && p.n_head >= 1 && o.n_head_kv >= 1 && p.n_head <= 65535 && o.n_head_kv <= 65535 && p.head_dim >= 2 &&
              p.head_dim <= 65535 && p.n_rot >= 2 && p.n_rot <= p.head_dim && p.n_rot % 2 == 0 && p.freq_base > 0.0f && p.freq_scale > 0.0f && o.q_stride >= q_ne0 && o.k_stride >= kv_ne0 && o.v_stride >= kv_ne0 &&
              o.n_ctx >= 1 && uint64_t(kv_ne0) * uint64_t(o.n_ctx) <= UINT32_MAX &&
              std::isfinite(p.ext_factor) && std::isfinite(p.attn_factor) && std::isfinite(p.corr_low) &&
              std::isfinite(p.corr_high),
          errc::shape_mismatch, [&] {
              return std::string(name) + ": n_head " + std::to_string(p.n_head) + ", n_head_kv " + std::to_string(o.n_head_kv) +
                     ", head_dim " + std::to_string(p.head_dim) + ", n_rot " + std::to_string(p.n_rot) + ", n_ctx " +
                     std::to_string(o.n_ctx) + ": need an even n_rot <= head_dim, head counts and head_dim below 65536, " +
                     "freq_base > 0, finite YaRN terms and strides of whole columns";
          });
    auto span = [&](int64_t stride, int64_t ne0) { return detail::f32_bytes(stride * (cols - 1) + ne0); };
    require_bytes(o.q, span(o.q_stride, q_ne0), name, "q");
    require_bytes(o.k, span(o.k_stride, kv_ne0), name, "k");
    require_bytes(o.v, span(o.v_stride, kv_ne0), name, "v");
    require_bytes(o.q_out, detail::f32_bytes(q_ne0 * cols), name, "q_out");
    const uint64_t k_cache_size = cache_bytes(o.k_type, kv_ne0, o.n_ctx), v_cache_size = cache_bytes(o.v_type, kv_ne0, o.n_ctx);
    require_bytes(o.k_cache, k_cache_size, name, "the k cache");
    require_bytes(o.v_cache, v_cache_size, name, "the v cache");
    require_bytes(o.positions, uint64_t(cols) * 4, name, "positions");
    std::vector<operand> writes{o.q_out.part(0, detail::f32_bytes(q_ne0 * cols)), o.k_cache.part(0, k_cache_size),
                                o.v_cache.part(0, v_cache_size)};
    if (o.k_out.bytes) writes.push_back(o.k_out.part(0, detail::f32_bytes(kv_ne0 * cols)));
    detail::rope_cache_push push;
    push.q = o.q.address;
    push.k = o.k.address;
    push.v = o.v.address;
    push.q_out = o.q_out.address;
    push.k_out = detail::address_or_0(o.k_out);
    push.k_cache = o.k_cache.address;
    push.v_cache = o.v_cache.address;
    push.positions = o.positions.address;
    push.q_stride = uint32_t(o.q_stride);
    push.k_stride = uint32_t(o.k_stride);
    push.v_stride = uint32_t(o.v_stride);
    push.heads = uint32_t(p.n_head) | uint32_t(o.n_head_kv) << 16;
    push.dims = uint32_t(p.head_dim) | uint32_t(p.n_rot) << 16;
    push.flags = (o.k_type == qtype::f16 ? 1u : 0u) | (o.v_type == qtype::f16 ? 2u : 0u) |
                 (p.order == graph::rope_order::neox ? 4u : 0u);
    push.theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));  // as ops/rope.hpp computes it
    push.n_ctx = uint32_t(o.n_ctx);
    push.tokens = uint32_t(cols);
    push.freq_scale = p.freq_scale;
    push.yarn = detail::yarn_of(p);
    push.factors = o.factors.bytes ? o.factors.address : 0;
    const uint64_t elements = uint64_t(q_ne0 + 2 * kv_ne0);
    const grid g = make_grid(k.device().info(), (elements + workgroup_size - 1) / workgroup_size, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": columns too long"; });
    std::vector<operand> reads{o.q.part(0, span(o.q_stride, q_ne0)), o.k.part(0, span(o.k_stride, kv_ne0)),
                               o.v.part(0, span(o.v_stride, kv_ne0)), o.positions.part(0, uint64_t(cols) * 4)};
    if (o.factors.bytes) {
        require_bytes(o.factors, uint64_t(p.n_rot / 2) * 4, name, "factors");
        reads.push_back(o.factors.part(0, uint64_t(p.n_rot / 2) * 4));
    }
    r.access(reads, writes);
    r.dispatch(k.pipeline("rope_cache", sizeof push), push, g);
}

// q: cols columns of n_head · head_dim floats, q_stride apart; out (optional) dense; caches as for
// record_attention; scratch of attention_step_scratch_bytes(cols or more, ...); counters of
// attention_step_counter_bytes, zero; rounding (optional, head_dim a multiple of 32) of out;
// sinks: n_head floats, or an empty operand (none).
inline void record_attention_step(kernels& k, recorder& r, const operand& q, int64_t q_stride, qtype kv_type,
                                  const operand& k_cache, const operand& v_cache, int64_t n_ctx, const operand& positions,
                                  const operand& out, int64_t cols, const graph::attention_params& p, const operand& scratch,
                                  const operand& counters, const q8_1_activations* rounding, const operand& sinks = {}) {
    const char* name = "vulkan::ops::attention_step";
    check(kv_type == qtype::f32 || kv_type == qtype::f16, errc::unsupported_type,
          [&] { return std::string(name) + ": caches are f32 or f16, not " + graph::type_name(kv_type); });
    const int64_t q_ne0 = int64_t(p.n_head) * p.head_dim;
    check(cols >= 1 && n_ctx >= 1 && p.n_head >= 1 && p.n_head_kv >= 1 && p.head_dim >= 1 && p.head_dim <= 256 &&
              p.n_head % p.n_head_kv == 0 && p.window >= 0 && q_stride >= q_ne0 && (!rounding || (p.head_dim % 32 == 0 &&
                                                                                 rounding->k == q_ne0 && rounding->cols == cols)),
          errc::shape_mismatch, [&] {
              return std::string(name) + ": n_head " + std::to_string(p.n_head) + ", n_head_kv " +
                     std::to_string(p.n_head_kv) + ", head_dim " + std::to_string(p.head_dim) + ", n_ctx " +
                     std::to_string(n_ctx) + ", window " + std::to_string(p.window) +
                     ": n_head_kv must divide n_head, head_dim at most 256 (a multiple of 32 when rounded), the window "
                     ">= 0";
          });
    check(rounding || out.bytes, errc::invalid_argument, [&] { return std::string(name) + ": writes neither out nor its rounding"; });
    const uint64_t cache_size = cache_bytes(kv_type, int64_t(p.n_head_kv) * p.head_dim, n_ctx);
    const uint64_t q_span = detail::f32_bytes(q_stride * (cols - 1) + q_ne0);
    const uint64_t partial_bytes = attention_step_scratch_bytes(cols, p.n_head, p.head_dim, n_ctx);
    require_bytes(q, q_span, name, "q");
    require_bytes(k_cache, cache_size, name, "the k cache");
    require_bytes(v_cache, cache_size, name, "the v cache");
    require_bytes(positions, uint64_t(cols) * 4, name, "positions");
    require_bytes(scratch, partial_bytes, name, "the scratch");
    require_bytes(counters, attention_step_counter_bytes(cols, p.n_head), name, "the counters");
    std::vector<operand> writes{scratch.part(0, partial_bytes), counters.part(0, attention_step_counter_bytes(cols, p.n_head))};
    if (out.bytes) {
        require_bytes(out, detail::f32_bytes(q_ne0 * cols), name, "out");
        writes.push_back(out.part(0, detail::f32_bytes(q_ne0 * cols)));
    }
    detail::add_rounding(writes, rounding);
    const q8_1_target t = rounding ? q8_1_target_of(*rounding) : q8_1_target{};
    const uint32_t groups = attention_groups(n_ctx);
    const detail::attention_step_push push{
        q.address, k_cache.address, v_cache.address, positions.address, detail::address_or_0(out), scratch.address,
        counters.address, t.qs_a, t.records_a, t.qs_b, t.records_b, detail::address_or_0(sinks), uint32_t(p.n_head),
        uint32_t(p.n_head_kv), uint32_t(p.head_dim), uint32_t(n_ctx), p.scale, t.split, uint32_t(q_stride),
        uint32_t(p.window)};
    const grid g = make_grid(k.device().info(), groups, uint64_t(p.n_head), name, uint64_t(cols));
    check(g.z == uint32_t(cols), errc::shape_mismatch, [&] { return std::string(name) + ": too many work-groups"; });
    std::vector<operand> reads{q.part(0, q_span), k_cache.part(0, cache_size), v_cache.part(0, cache_size),
                               positions.part(0, uint64_t(cols) * 4)};
    if (sinks.bytes) {
        require_bytes(sinks, uint64_t(p.n_head) * 4, name, "the sinks");
        reads.push_back(sinks.part(0, uint64_t(p.n_head) * 4));
    }
    r.access(reads, writes);
    r.dispatch(k.pipeline("attention_step", sizeof push, {kv_type == qtype::f16 ? 1u : 0u}), push, g);
}

}  // namespace llmrt::vulkan::ops
