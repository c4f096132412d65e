// How the Vulkan backend records each kind of fused step of the lowering (graph/lower.hpp), given
// where the program placed every tensor. Mechanism only: the plan decides which steps exist and
// where their memory lives; op steps (one node) are recorded by the backend itself.
//
//   norm        ops::record_norm_step: the kept results and the Q8_1 rounding of the last one
//   matvec      one mmvq dispatch per product on the rounding its producer wrote (or one it
//               quantizes first), with no barrier between the products
//   rope_cache  ops::record_rope_cache
//   attention   ops::record_attention_step (split over the cache, combined in the same dispatch),
//               rounding the result where the head is whole Q8_1 blocks, else a quantize after it
//   swiglu      ops::record_swiglu_round, or the element-wise swiglu when nothing is rounded
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/graph/graph.hpp"
#include "llmrt/graph/plan.hpp"
#include "llmrt/vulkan/mmvq.hpp"
#include "llmrt/vulkan/ops/elementwise.hpp"
#include "llmrt/vulkan/ops/fused.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/mul_mat.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::steps {

// What recording a step reads about the program.
struct context {
    const graph::graph* g = nullptr;
    const graph::plan* p = nullptr;
    ops::kernels* kernels = nullptr;
    vulkan::mmvq* mmvq = nullptr;
    int64_t max_batch = 1;
    std::function<ops::operand(int32_t)> operand_of;          // a planned tensor's bytes
    std::function<ops::operand(std::size_t)> scratch_of;      // a step's scratch (0 bytes: none)
    std::function<ops::operand(std::size_t)> rounded_of;      // the rounding a step writes
    ops::operand counters;                                    // zero between dispatches

    const graph::node& node(int32_t id) const { return g->nodes()[std::size_t(id)]; }
    bool kept(int32_t id) const { return p->where[std::size_t(id)] != graph::storage::fused; }
    ops::operand kept_or_none(int32_t id) const { return id >= 0 && kept(id) ? operand_of(id) : ops::operand{}; }
    int64_t cols(int32_t id, int64_t n) const { return node(id).batched ? n : node(id).ne1; }
    int64_t max_cols(int32_t id) const { return node(id).batched ? max_batch : node(id).ne1; }
    int64_t stride(int32_t id) const { return p->col_stride[std::size_t(id)]; }
};

// The Q8_1 activations step `s` writes for its matvec step (st.rounds), at n tokens.
inline ops::q8_1_activations rounding_of(const context& cx, std::size_t s, int64_t n) {
    const int32_t id = cx.p->steps[s].rounds;
    const graph::node& nd = cx.node(id);
    return ops::q8_1_regions(ops::operand{}, nd.ne0, cx.cols(id, n), cx.rounded_of(s), cx.max_cols(id));
}

inline void norm(const context& cx, ops::recorder& r, std::size_t s, int64_t n) {
    const graph::step& st = cx.p->steps[s];
    const graph::node& nd = cx.node(st.node);
    const int64_t cols = cx.cols(st.node, n);
    const int32_t a = st.sum >= 0 ? cx.node(st.sum).src[0] : nd.src[0];
    const ops::operand b = st.sum >= 0 ? cx.operand_of(cx.node(st.sum).src[1]) : ops::operand{};
    const ops::operand w = st.product >= 0 ? cx.operand_of(cx.node(st.product).src[1]) : ops::operand{};
    ops::q8_1_activations rounded;
    if (st.rounds >= 0) {
        check(st.rounds == (st.product >= 0 ? st.product : st.node), errc::invalid_argument,
              "vulkan backend: a norm step rounds its last result only");
        rounded = rounding_of(cx, s, n);
    }
    ops::record_norm_step(*cx.kernels, r, cx.operand_of(a), b, cx.kept_or_none(st.sum), cx.kept_or_none(st.node), w,
                          cx.kept_or_none(st.product), st.rounds >= 0 ? &rounded : nullptr, nd.ne0, cols, nd.eps);
}

inline void matvec(const context& cx, ops::recorder& r, std::size_t s, int64_t n) {
    const graph::step& st = cx.p->steps[s];
    const graph::node& x = cx.node(st.x);
    const int64_t k = x.ne0, cols = cx.cols(st.x, n);
    check(!st.stacked && st.carries < 0, errc::invalid_argument,
          "vulkan backend: a matvec step with stacked products or a carried step (not among its lowering's fusions)");
    const ops::q8_1_activations a =
        st.rounded_by >= 0
            ? ops::q8_1_regions(cx.kept_or_none(st.x), k, cols, cx.rounded_of(std::size_t(st.rounded_by)), cx.max_cols(st.x))
            : ops::record_quantize_activations(*cx.mmvq, r, cx.operand_of(st.x), k, cols, cx.scratch_of(s), cx.max_cols(st.x));
    for (int32_t id : st.nodes) {
        const graph::node& w = cx.node(cx.node(id).src[0]);
        check(is_in<weight_types>(w.type) && w.ne0 == k, errc::unsupported_type, [&] {
            return "vulkan backend: matvec step with W " + graph::graph::describe(w) + " (a weight type, k = " +
                   std::to_string(k) + ")";
        });
        ops::record_mmvq_prepared(*cx.mmvq, r, w.type, cx.operand_of(cx.node(id).src[0]), w.ne1, k, a, cx.operand_of(id), cols);
    }
}

inline void rope_cache(const context& cx, ops::recorder& r, std::size_t s, int64_t n) {
    const graph::step& st = cx.p->steps[s];
    const graph::node& qr = cx.node(st.q_rope);
    const graph::node& kr = cx.node(st.k_rope);
    const graph::node& kc = cx.node(st.k_write);
    const graph::node& vc = cx.node(st.v_write);
    ops::rope_cache_operands o;
    o.q = cx.operand_of(qr.src[0]);
    o.k = cx.operand_of(kr.src[0]);
    o.v = cx.operand_of(vc.src[1]);
    o.q_stride = cx.stride(qr.src[0]);
    o.k_stride = cx.stride(kr.src[0]);
    o.v_stride = cx.stride(vc.src[1]);
    o.q_out = cx.operand_of(st.q_rope);
    o.k_out = cx.kept_or_none(st.k_rope);
    o.k_cache = cx.operand_of(st.k_write);
    o.v_cache = cx.operand_of(st.v_write);
    o.k_type = kc.type;
    o.v_type = vc.type;
    o.n_ctx = kc.ne1;
    o.n_head_kv = kr.rope.n_head;
    o.positions = cx.operand_of(qr.src[1]);
    if (qr.n_src() > 2) o.factors = cx.operand_of(qr.src[2]);  // k's are the same (graph/lower.hpp)
    check(kc.ne1 == vc.ne1 && kr.src[1] == qr.src[1] && kc.src[2] == qr.src[1] && vc.src[2] == qr.src[1],
          errc::invalid_argument, "vulkan backend: a rope_cache step whose caches or positions differ");
    ops::record_rope_cache(*cx.kernels, r, o, cx.cols(st.q_rope, n), qr.rope);
}

// Scratch of the attention step: its partial results, and room for the result where the rounding
// cannot come from the attention shader (head_dim not a multiple of 32) and the result is not kept.
inline std::size_t attention_scratch_bytes(const graph::graph& g, const graph::node& nd) {
    const graph::node& cache = g.nodes()[std::size_t(nd.src[1])];
    const graph::attention_params& p = nd.attention;
    return ops::attention_step_scratch_bytes(nd.ne1, p.n_head, p.head_dim, cache.ne1) +
           (p.head_dim % 32 == 0 ? 0 : std::size_t(nd.ne0 * nd.ne1) * 4);
}

inline void attention(const context& cx, ops::recorder& r, std::size_t s, int64_t n) {
    const graph::step& st = cx.p->steps[s];
    const graph::node& nd = cx.node(st.node);
    const graph::node& kc = cx.node(nd.src[1]);
    const graph::attention_params& p = nd.attention;
    const int64_t cols = cx.cols(st.node, n);
    const bool rounds_here = st.rounds >= 0 && p.head_dim % 32 == 0;
    const ops::operand scratch = cx.scratch_of(s);
    const std::size_t partial_bytes = ops::attention_step_scratch_bytes(nd.ne1, p.n_head, p.head_dim, kc.ne1);
    ops::operand out = cx.kept_or_none(st.node);
    if (st.rounds >= 0 && !rounds_here && !out.bytes) out = scratch.part(partial_bytes, scratch.bytes - partial_bytes);
    ops::q8_1_activations rounded;
    if (st.rounds >= 0) rounded = rounding_of(cx, s, n);
    ops::record_attention_step(*cx.kernels, r, cx.operand_of(nd.src[0]), cx.stride(nd.src[0]), kc.type, cx.operand_of(nd.src[1]),
                               cx.operand_of(nd.src[2]), kc.ne1, cx.operand_of(nd.src[3]), out, cols, p,
                               scratch.part(0, partial_bytes), cx.counters, rounds_here ? &rounded : nullptr,
                               nd.n_src() > 4 ? cx.operand_of(nd.src[4]) : ops::operand{});
    if (st.rounds >= 0 && !rounds_here)
        ops::record_quantize_activations(*cx.mmvq, r, out, nd.ne0, cols, cx.rounded_of(s), cx.max_cols(st.node));
}

inline void swiglu(const context& cx, ops::recorder& r, std::size_t s, int64_t n) {
    const graph::step& st = cx.p->steps[s];
    const graph::node& nd = cx.node(st.node);
    const int64_t cols = cx.cols(st.node, n);
    if (st.rounds < 0) {
        check(cx.p->dense(nd.src[0], *cx.g) && cx.p->dense(nd.src[1], *cx.g), errc::invalid_argument,
              "vulkan backend: a swiglu step over strided gate and up without a rounding");
        ops::record_elementwise(*cx.kernels, r, ops::elementwise_op::swiglu, cx.operand_of(nd.src[0]), cx.operand_of(nd.src[1]),
                                cx.operand_of(st.node), nd.ne0, cols, false);
        return;
    }
    ops::record_swiglu_round(*cx.kernels, r, cx.operand_of(nd.src[0]), cx.stride(nd.src[0]), cx.operand_of(nd.src[1]),
                             cx.stride(nd.src[1]), cx.kept_or_none(st.node), rounding_of(cx, s, n), nd.ne0, cols);
}

}  // namespace llmrt::vulkan::steps
