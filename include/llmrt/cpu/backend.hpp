// cpu::backend: the reference backend of the graph executor. Single-threaded, every op in a fixed
// order, so a run gives the same bits every time; a column's results do not depend on the batch.
//
// Quantized weights meet activations rounded through Q8_1 by default, as the GPU mmvq kernels
// compute them, which makes this backend the ground truth for those kernels; f32/f16/bf16 weights
// meet float activations. Both are options, so that llmrt-compare can set two CPU configurations
// against each other.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>
#endif

#include "llmrt/comm/communicator.hpp"
#include "llmrt/cpu/matvec.hpp"
#include "llmrt/cpu/mul_mat.hpp"
#include "llmrt/cpu/ops.hpp"
#include "llmrt/graph/backend.hpp"
#include "llmrt/quant/q8_1.hpp"

namespace llmrt::cpu {

struct backend_options {
    activation_format quantized_activations = activation_format::q8_1;  // for block-quantized weights
    activation_format float_activations = activation_format::f32;       // for f32, f16 and bf16 weights
    // The rank's group for all_reduce and all_gather nodes (comm/communicator.hpp); null: a group
    // of one rank, where both copy their input. It must outlive the programs prepared with it.
    comm::communicator* communicator = nullptr;
};

inline const char* to_string(activation_format a) noexcept {
    switch (a) {
        case activation_format::f32: return "f32";
        case activation_format::q8_1: return "q8_1";
        case activation_format::ggml: return "ggml";
    }
    return "unknown";
}

class backend {
public:
    explicit backend(backend_options options = {}) : options_(options) {}

    std::string_view name() const noexcept { return "cpu"; }
    const backend_options& options() const noexcept { return options_; }

    // The machine's physical memory in bytes (0: unknown): what a model checks its KV cache
    // against before allocating it, so that a cache that cannot fit is an llmrt::error rather
    // than an allocation the system refuses (or grants, and then kills the process for).
    static std::size_t memory_bytes() noexcept {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGE_SIZE)
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        return pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) : 0;
#else
        return 0;
#endif
    }

    activation_format activations_for(qtype weight_type) const noexcept {
        const bool plain = weight_type == qtype::f32 || weight_type == qtype::f16 || weight_type == qtype::bf16;
        return plain ? options_.float_activations : options_.quantized_activations;
    }

    // Every fusion: the CPU runs each fused step with the reference ops, in the order and with
    // the roundings of the unfused nodes, so fused and unfused plans give the same bits. A
    // producer rounds activations for its matvec step only when they meet Q8_1 anyway.
    graph::lower_options lowering() const noexcept {
        graph::lower_options o;
        o.round_in_producer = options_.quantized_activations == activation_format::q8_1;
        return o;
    }

    // The Q8_1 rounding a step hands to a matvec step: the rounded values as floats.
    std::size_t rounded_bytes(int64_t k, int64_t cols) const noexcept { return std::size_t(k * cols) * sizeof(float); }

    // mul_mat: the rounded activations and a dequantized row; attention: one score per position;
    // rope: one column (a fused rope_cache step rotates k's columns there before writing them).
    std::size_t scratch_bytes(const graph::graph& g, const graph::node& nd) const {
        if (nd.op == graph::op::mul_mat) {
            const graph::node& w = g.nodes()[std::size_t(nd.src[0])];
            check(activations_for(w.type) != activation_format::q8_1 || w.ne0 % 32 == 0, errc::shape_mismatch, [&] {
                return "cpu backend: mul_mat with " + graph::graph::describe(w) +
                       " rounds activations through Q8_1, which needs k a multiple of 32";
            });
            return mul_mat_scratch_bytes(w.type, w.ne0, nd.ne1, activations_for(w.type));
        }
        if (nd.op == graph::op::mul_mat_id) {  // one column at a time
            const graph::node& w = g.nodes()[std::size_t(nd.src[0])];
            check(activations_for(w.type) != activation_format::q8_1 || w.ne0 % 32 == 0, errc::shape_mismatch, [&] {
                return "cpu backend: mul_mat_id with " + graph::graph::describe(w) +
                       " rounds activations through Q8_1, which needs k a multiple of 32";
            });
            return mul_mat_scratch_bytes(w.type, w.ne0, 1, activations_for(w.type));
        }
        if (nd.op == graph::op::attention) return std::size_t(g.nodes()[std::size_t(nd.src[1])].ne1) * sizeof(float);
        // rope: one column, twice more for a rope_cache step's normed q or k and rotated k
        if (nd.op == graph::op::rope) return std::size_t(3 * nd.ne0) * sizeof(float);
        if (nd.op == graph::op::all_gather) return graph::tensor_bytes(nd);  // the ranks' slices, rank after rank
        return 0;
    }

    class program;
    program prepare(const graph::graph& g, const graph::plan& p) const;

    int32_t rank() const noexcept { return options_.communicator ? options_.communicator->rank() : 0; }
    int32_t ranks() const noexcept { return options_.communicator ? options_.communicator->size() : 1; }

private:
    // A collective's group is this backend's: the node's ranks are the communicator's size, and an
    // all_gather's input is this rank's slice.
    void check_collective(const graph::graph& g, const graph::node& nd) const {
        check(nd.ranks == ranks(), errc::invalid_argument, [&] {
            return "cpu backend: " + graph::graph::describe(nd) + " runs over " + std::to_string(nd.ranks) +
                   " ranks; the backend's communicator has " + std::to_string(ranks()) +
                   (options_.communicator ? "" : " (none given: one rank)");
        });
        if (nd.op != graph::op::all_gather) return;
        const graph::node& x = g.nodes()[std::size_t(nd.src[0])];
        const int64_t slice = graph::shard_begin(nd.ne0, nd.ranks, rank() + 1) - graph::shard_begin(nd.ne0, nd.ranks, rank());
        check(x.ne0 == slice, errc::shape_mismatch, [&] {
            return "cpu backend: " + graph::graph::describe(nd) + " takes " + std::to_string(slice) + " of its " +
                   std::to_string(nd.ne0) + " elements per column from rank " + std::to_string(rank()) + ", whose x is " +
                   graph::graph::describe(x);
        });
    }

    backend_options options_;
};

// A graph prepared on the CPU: the arena, the states and the plan's steps.
class backend::program {
public:
    void run(int64_t n_tokens) {
        for (std::size_t i = 0; i < plan_->steps.size(); ++i) run_step(i, n_tokens);
    }

    void write(graph::tensor t, std::size_t offset, const void* src, std::size_t bytes) {
        if (bytes) std::memcpy(static_cast<std::byte*>(address(t.id)) + offset, src, bytes);
    }
    void read(graph::tensor t, std::size_t offset, void* dst, std::size_t bytes) const {
        if (bytes) std::memcpy(dst, static_cast<const std::byte*>(address(t.id)) + offset, bytes);
    }

private:
    friend class backend;

    const graph::node& node(int32_t id) const { return graph_->nodes()[std::size_t(id)]; }

    void* address(int32_t id) const {
        const auto i = std::size_t(id);
        switch (plan_->where[i]) {
            case graph::storage::arena: return arena_.data() + plan_->offset[i];
            case graph::storage::weight: return const_cast<void*>(graph_->nodes()[i].data);
            case graph::storage::state:
            case graph::storage::alias: return states_[state_index_[std::size_t(plan_->state_of(id))]].data();
            case graph::storage::fused:
            case graph::storage::none: break;
        }
        throw error(errc::invalid_argument, "cpu backend: node " + graph::graph::describe(graph_->nodes()[i]) +
                                                " has no memory in this plan");
    }
    float* floats(int32_t id) const { return static_cast<float*>(address(id)); }
    bool kept(int32_t id) const { return plan_->where[std::size_t(id)] != graph::storage::fused; }
    void* scratch(std::size_t s) const {
        return plan_->scratch_bytes[s] ? arena_.data() + plan_->scratch_offset[s] : nullptr;
    }
    float* rounded(std::size_t s) const { return reinterpret_cast<float*>(arena_.data() + plan_->rounded_offset[s]); }

    // Each block of 32 values of n, rounded through Q8_1 (quantized and dequantized back) in place,
    // as cpu::mul_mat rounds activations.
    static void round_through_q8_1(float* x, int64_t n) {
        for (int64_t b = 0; b < n; b += 32) {
            q8_1 block;
            quantize_row(x + b, &block, 32);
            dequantize_row(&block, x + b, 32);
        }
    }

    // Where a step that may round its result writes it: the node's memory, or the rounding the
    // step hands on when the node itself is not kept. After the kernel, `finish` rounds.
    float* result_memory(std::size_t s, int32_t id) const {
        return kept(id) ? floats(id) : rounded(s);
    }
    void finish(std::size_t s, int32_t id, int64_t cols) const {
        const graph::step& st = plan_->steps[s];
        if (st.rounds != id) return;
        const int64_t count = node(id).ne0 * cols;
        float* r = rounded(s);
        if (kept(id)) std::memcpy(r, floats(id), std::size_t(count) * sizeof(float));
        round_through_q8_1(r, count);
    }

    void run_step(std::size_t s, int64_t n) const {
        const graph::step& st = plan_->steps[s];
        switch (st.kind) {
            case graph::step_kind::op:  // one node, or [a router,] a softmax and the top_k of it
                for (int32_t id : st.nodes) run_node(id, n, scratch(s), plan_->scratch_bytes[s]);
                return;
            case graph::step_kind::norm: run_norm(s, n); return;
            case graph::step_kind::matvec: run_matvec(s, n); return;
            case graph::step_kind::rope_cache: run_rope_cache(s, n); return;
            case graph::step_kind::attention: {
                const graph::node& nd = node(st.node);
                const int64_t cols = nd.batched ? n : nd.ne1;
                attention(floats(nd.src[0]), node(nd.src[1]).type, address(nd.src[1]), address(nd.src[2]),
                          node(nd.src[1]).ne1, static_cast<const int32_t*>(address(nd.src[3])),
                          result_memory(s, st.node), cols, nd.attention, static_cast<float*>(scratch(s)), sinks(nd));
                finish(s, st.node, cols);
                return;
            }
            case graph::step_kind::swiglu: {  // swiglu or swiglu_oai
                const graph::node& nd = node(st.node);
                const int64_t cols = nd.batched ? n : nd.ne1;
                float* y = result_memory(s, st.node);
                for (int64_t c = 0; c < cols; ++c) {
                    if (nd.op == graph::op::swiglu_oai)
                        swiglu_oai(column(nd.src[0], c), column(nd.src[1], c), y + c * nd.ne0, nd.ne0, nd.alpha, nd.limit);
                    else
                        swiglu(column(nd.src[0], c), column(nd.src[1], c), y + c * nd.ne0, nd.ne0);
                }
                finish(s, st.node, cols);
                return;
            }
            case graph::step_kind::experts: run_experts(s, n); return;
        }
    }

    // Each mul_mat_id of the step on x (or the rounding its producer handed on, which the q8_1
    // format makes of x anyway), then the add_id of its bias in place: the products' columns
    // (stacked or not) are the results the nodes give one by one.
    void run_experts(std::size_t s, int64_t n) const {
        const graph::step& st = plan_->steps[s];
        for (std::size_t i = 0; i < st.nodes.size(); ++i) {
            const int32_t id = st.nodes[i];
            const graph::node& nd = node(id);
            if (nd.op != graph::op::mul_mat_id) continue;
            const int32_t out = graph::product_result(*graph_, st, i);
            const bool biased = out != id;
            const graph::node& w = node(nd.src[0]);
            const int64_t cols = nd.batched ? n : nd.ne1, n_used = node(nd.src[2]).ne0, rows = w.ne1 / nd.n_expert;
            const auto* ids = static_cast<const int32_t*>(address(nd.src[2]));
            const bool rounded_x = st.rounded_by >= 0;
            const float* x = rounded_x ? rounded(std::size_t(st.rounded_by)) : floats(nd.src[1]);
            const int64_t stride = plan_->col_stride[std::size_t(out)];
            mul_mat_id(w.type, address(nd.src[0]), rows, w.ne0, nd.n_expert, x, node(nd.src[1]).ne0 != w.ne0, ids, n_used,
                       floats(out), cols, rounded_x ? activation_format::f32 : activations_[std::size_t(id)], scratch(s),
                       plan_->scratch_bytes[s], stride);
            if (biased)
                add_id(floats(out), floats(node(out).src[1]), ids, floats(out), rows, nd.n_expert, n_used, cols, stride);
        }
    }

    // Column c of a node's result (stacked products are rows_total apart).
    const float* column(int32_t id, int64_t c) const { return floats(id) + c * plan_->col_stride[std::size_t(id)]; }

    void run_norm(std::size_t s, int64_t n) const {
        const graph::step& st = plan_->steps[s];
        const graph::node& nd = node(st.node);
        const int64_t cols = nd.batched ? n : nd.ne1;
        const float* x = floats(nd.src[0]);
        if (st.sum >= 0) {
            const graph::node& a = node(st.sum);
            add(floats(a.src[0]), floats(a.src[1]), floats(st.sum), nd.ne0, cols, false);
        }
        const int32_t result = st.product >= 0 ? st.product : st.node;
        float* y = result_memory(s, result);
        // The norm's own result is written where the product goes when it is not kept (mul reads
        // each element before writing it).
        float* normed = kept(st.node) ? floats(st.node) : y;
        // A grouped norm: each group of `group` elements a column of its own, the weight one group
        // long; its input may be a stacked product (columns further apart).
        const int64_t len = nd.group > 0 ? nd.group : nd.ne0, groups = cols * (nd.ne0 / len);
        const int64_t stride = st.sum >= 0 ? nd.ne0 : plan_->col_stride[std::size_t(nd.src[0])];
        for (int64_t c = 0; c < cols; ++c) rms_norm(x + c * stride, normed + c * nd.ne0, len, nd.ne0 / len, nd.eps);
        if (st.product >= 0) mul(normed, floats(node(st.product).src[1]), y, len, groups, true);
        finish(s, result, cols);
    }

    // Each product into its memory (the add's, where the step adds a bias, which follows it in
    // place: the bits of the add node).
    void run_matvec(std::size_t s, int64_t n) const {
        const graph::step& st = plan_->steps[s];
        for (std::size_t i = 0; i < st.nodes.size(); ++i) {
            const int32_t id = st.nodes[i];
            const graph::node& nd = node(id);
            if (nd.op != graph::op::mul_mat) continue;
            const int32_t out = graph::product_result(*graph_, st, i);
            const bool biased = out != id;
            const graph::node& w = node(nd.src[0]);
            const int64_t cols = nd.batched ? n : nd.ne1, stride = plan_->col_stride[std::size_t(out)];
            const matvec_shape shape{w.ne1, w.ne0, cols, 0, stride};
            // Activations a producer rounded through Q8_1 are already what the q8_1 format makes
            // of them: the f32 dot of those values is the q8_1 dot, bit for bit.
            if (st.rounded_by >= 0)
                mul_mat(w.type, address(nd.src[0]), rounded(std::size_t(st.rounded_by)), floats(out), shape,
                        activation_format::f32, scratch(s), plan_->scratch_bytes[s]);
            else
                mul_mat(w.type, address(nd.src[0]), floats(nd.src[1]), floats(out), shape, activations_[std::size_t(id)],
                        scratch(s), plan_->scratch_bytes[s]);
            float* y = floats(out);
            if (biased)
                for (int64_t c = 0; c < cols; ++c) add(y + c * stride, floats(node(out).src[1]), y + c * stride, nd.ne0, 1, false);
        }
    }

    void run_rope_cache(std::size_t s, int64_t n) const {
        const graph::step& st = plan_->steps[s];
        const graph::node& qr = node(st.q_rope);
        const graph::node& kr = node(st.k_rope);
        const graph::node& kc = node(st.k_write);
        const graph::node& vc = node(st.v_write);
        const auto* pos = static_cast<const int32_t*>(address(qr.src[1]));
        const int64_t cols = qr.batched ? n : qr.ne1;
        auto* k_column = static_cast<float*>(scratch(s));
        float* normed = k_column + kr.ne0;
        // A rope's input column: x itself, or the per-head norm of the norm's input times its
        // weight (rms_norm, then mul: the nodes' own functions and order).
        auto input = [&](int32_t norm, const graph::node& rope_node, int64_t c) -> const float* {
            if (norm < 0) return column(rope_node.src[0], c);
            const graph::node& nn = node(norm);
            const int64_t len = nn.group;
            rms_norm(column(nn.src[0], c), normed, len, nn.ne0 / len, nn.eps);
            mul(normed, floats(node(rope_node.src[0]).src[1]), normed, len, nn.ne0 / len, true);
            return normed;
        };
        for (int64_t c = 0; c < cols; ++c) {
            rope(input(st.q_norm, qr, c), floats(st.q_rope) + c * qr.ne0, pos + c, 1, qr.rope, factors(qr));
            rope(input(st.k_norm, kr, c), k_column, pos + c, 1, kr.rope, factors(kr));
            set_rows(kc.type, address(st.k_write), kc.ne0, kc.ne1, k_column, pos + c, 1);
            set_rows(vc.type, address(st.v_write), vc.ne0, vc.ne1, column(vc.src[1], c), pos + c, 1);
        }
    }

    // A rope node's frequency factors, or null.
    const float* factors(const graph::node& rope_node) const {
        return rope_node.n_src() > 2 ? floats(rope_node.src[2]) : nullptr;
    }
    // An attention node's sinks, or null.
    const float* sinks(const graph::node& attention_node) const {
        return attention_node.n_src() > 4 ? floats(attention_node.src[4]) : nullptr;
    }

    void run_node(int32_t id, int64_t n, void* scratch_memory, std::size_t scratch_size) const {
        const graph::node& nd = node(id);
        const int64_t cols = nd.batched ? n : nd.ne1;
        auto src = [&](int i) -> const graph::node& { return node(nd.src[std::size_t(i)]); };
        auto in = [&](int i) { return address(nd.src[std::size_t(i)]); };
        const auto* a = static_cast<const float*>(nd.n_src() > 0 ? in(0) : nullptr);
        const auto* b = static_cast<const float*>(nd.n_src() > 1 ? in(1) : nullptr);
        void* dst = address(id);
        float* y = static_cast<float*>(dst);
        switch (nd.op) {
            case graph::op::input:
            case graph::op::weight:
            case graph::op::state: return;
            case graph::op::get_rows:
                get_rows(src(0).type, in(0), nd.ne0, src(0).ne1, static_cast<const int32_t*>(in(1)), y, cols);
                return;
            // A grouped norm is the plain norm over columns of `group` elements, and a b shorter
            // than a's columns the plain broadcast over columns of b's length (columns are dense).
            case graph::op::rms_norm: {
                const int64_t group = nd.group ? nd.group : nd.ne0;
                rms_norm(a, y, group, cols * (nd.ne0 / group), nd.eps);
                return;
            }
            case graph::op::mul:
            case graph::op::add: {
                const bool broadcast = !src(1).batched && src(1).ne1 == 1;
                const int64_t len = broadcast ? src(1).ne0 : nd.ne0;
                (nd.op == graph::op::mul ? mul : add)(a, b, y, len, cols * (nd.ne0 / len), broadcast);
                return;
            }
            case graph::op::mul_mat: {
                const graph::node& w = src(0);
                mul_mat(w.type, in(0), b, y, matvec_shape{w.ne1, w.ne0, cols, 0, 0}, activations_[std::size_t(id)],
                        scratch_memory, scratch_size);
                return;
            }
            case graph::op::rope: rope(a, y, static_cast<const int32_t*>(in(1)), cols, nd.rope, factors(nd)); return;
            case graph::op::attention:
                attention(a, src(1).type, in(1), in(2), src(1).ne1, static_cast<const int32_t*>(in(3)), y, cols,
                          nd.attention, static_cast<float*>(scratch_memory), sinks(nd));
                return;
            case graph::op::softmax: softmax(a, y, nd.ne0, cols); return;
            case graph::op::silu: silu(a, y, nd.ne0 * cols); return;
            case graph::op::swiglu: swiglu(a, b, y, nd.ne0 * cols); return;
            case graph::op::swiglu_oai: swiglu_oai(a, b, y, nd.ne0 * cols, nd.alpha, nd.limit); return;
            case graph::op::set_rows:
                set_rows(nd.type, dst, nd.ne0, nd.ne1, b, static_cast<const int32_t*>(in(2)), n);
                return;
            case graph::op::argmax: argmax(a, static_cast<int32_t*>(dst), src(0).ne0, cols); return;
            case graph::op::top_probability: top_probability(a, y, src(0).ne0, cols); return;
            case graph::op::top_k: top_k(a, static_cast<int32_t*>(dst), src(0).ne0, nd.ne0, cols); return;
            case graph::op::expert_weights:
                expert_weights(a, static_cast<const int32_t*>(in(1)), y, src(0).ne0, nd.ne0, cols, nd.norm);
                return;
            case graph::op::mul_mat_id: {
                const graph::node& w = src(0);
                const int64_t n_used = src(2).ne0;
                mul_mat_id(w.type, in(0), w.ne1 / nd.n_expert, w.ne0, nd.n_expert, b, src(1).ne0 != w.ne0,
                           static_cast<const int32_t*>(in(2)), n_used, y, cols, activations_[std::size_t(id)],
                           scratch_memory, scratch_size);
                return;
            }
            case graph::op::weighted_sum: weighted_sum(a, b, y, nd.ne0, src(1).ne0, cols); return;
            case graph::op::add_id:
                add_id(a, b, static_cast<const int32_t*>(in(2)), y, src(1).ne0, nd.n_expert, src(2).ne0, cols);
                return;
            case graph::op::shard_ids:
                shard_ids(static_cast<const int32_t*>(in(0)), static_cast<int32_t*>(dst), nd.ne0, cols, nd.expert0,
                          nd.n_expert);
                return;
            case graph::op::shard_weights:
                shard_weights(a, static_cast<const int32_t*>(in(1)), y, nd.ne0, cols, nd.expert0, nd.n_expert);
                return;
            case graph::op::all_reduce:
                std::memcpy(y, a, std::size_t(nd.ne0 * cols) * sizeof(float));
                if (communicator_) communicator_->all_reduce(y, std::size_t(nd.ne0 * cols));
                return;
            case graph::op::all_gather: all_gather(nd, a, y, cols, static_cast<float*>(scratch_memory)); return;
        }
        throw error(errc::invalid_argument, std::string("cpu backend: no kernel for op ") + graph::to_string(nd.op));
    }

    // The ranks' slices of `cols` columns, gathered rank after rank (each slice's columns dense),
    // then interleaved so that column c holds every rank's part of it in rank order.
    void all_gather(const graph::node& nd, const float* x, float* y, int64_t cols, float* gathered) const {
        const int32_t ranks = nd.ranks, me = communicator_ ? communicator_->rank() : 0;
        auto begin = [&](int32_t r) { return graph::shard_begin(nd.ne0, ranks, r); };
        const int64_t mine = begin(me + 1) - begin(me);
        if (!communicator_) {
            std::memcpy(y, x, std::size_t(nd.ne0 * cols) * sizeof(float));
            return;
        }
        communicator_->all_gather(x, std::size_t(mine * cols), gathered, std::size_t(nd.ne0 * cols));
        for (int32_t r = 0; r < ranks; ++r) {
            const int64_t part = begin(r + 1) - begin(r);
            const float* from = gathered + begin(r) * cols;  // ranks before r sent begin(r) per column
            for (int64_t c = 0; c < cols; ++c)
                std::memcpy(y + c * nd.ne0 + begin(r), from + c * part, std::size_t(part) * sizeof(float));
        }
    }

    comm::communicator* communicator_ = nullptr;
    const graph::graph* graph_ = nullptr;
    const graph::plan* plan_ = nullptr;
    mutable std::vector<std::byte> arena_;
    mutable std::vector<std::vector<std::byte>> states_;
    std::vector<std::size_t> state_index_;       // per node: index into states_ for state nodes
    std::vector<activation_format> activations_;  // per node: how a mul_mat meets its activations
};

inline backend::program backend::prepare(const graph::graph& g, const graph::plan& p) const {
    program prog;
    prog.communicator_ = options_.communicator;
    prog.graph_ = &g;
    prog.plan_ = &p;
    prog.arena_.assign(p.arena_bytes, std::byte{0});
    const auto& nodes = g.nodes();
    prog.state_index_.assign(nodes.size(), 0);
    prog.activations_.assign(nodes.size(), activation_format::f32);
    for (int32_t id : p.order) {
        const graph::node& nd = nodes[std::size_t(id)];
        if (p.where[std::size_t(id)] == graph::storage::state) {
            prog.state_index_[std::size_t(id)] = prog.states_.size();
            prog.states_.emplace_back(p.bytes[std::size_t(id)], std::byte{0});
        }
        if (nd.op == graph::op::all_reduce || nd.op == graph::op::all_gather) check_collective(g, nd);
        if (nd.op == graph::op::mul_mat || nd.op == graph::op::mul_mat_id) prog.activations_[std::size_t(id)] = activations_for(nodes[std::size_t(nd.src[0])].type);
    }
    return prog;
}

}  // namespace llmrt::cpu
