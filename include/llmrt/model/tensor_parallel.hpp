// Tensor parallelism (Megatron-style) for dense models: the part of a model's weights that rank r
// of n holds, and what its graph (llama_graph.hpp) adds to put the ranks' results together.
//
//   attn_q/k/v (+ biases)    split by output rows, whole heads: rank r holds query heads
//                            [r·n_head/n, (r+1)·n_head/n) and kv heads [r·n_head_kv/n, ...), so
//                            that its query heads read its own kv heads (grouped-query order)
//   attn_output              split along k, the same heads: y_r = Wo[:, heads_r] · attn_r; the
//                            graph adds the ranks' y_r with an all_reduce before the residual add
//                            (the output bias, where there is one, after it, once)
//   ffn_gate/ffn_up          split by rows [r·n_ff/n, (r+1)·n_ff/n)
//   ffn_down                 split along k, the same range, then an all_reduce
//   output (LM head)         split by rows (the vocabulary, graph::shard_begin's slices), the
//                            logits put together with an all_gather; every rank then takes the
//                            same argmax of the same bits
//   attn_sinks               split with the query heads
//   ffn_*_exps (+ biases)    expert parallel: rank r holds experts [r·E/n, (r+1)·E/n), whole; the
//                            router (replicated) picks among all E on every rank, shard_ids and
//                            shard_weights keep the slots of the rank's own experts (the others
//                            weighed by 0), and the weighted sum is all-reduced
//   token_embd, norms,       replicated (the shard points at the full model's bytes)
//   rope_freqs, q/k norms, the router
//
// Row slices are contiguous in GGUF's layout and stay where they are; a k slice takes blocks
// [k0/bs, k1/bs) of every row, so k/n must be a multiple of the type's block size, and is copied
// into a buffer the shard owns. Splits that do not divide (heads, n_ff, blocks) raise llmrt::error
// naming the value or tensor.
//
// Only the order of the sums changes: each all_reduce adds the ranks' partial products in rank
// order where the single forward adds the whole row at once, so the TP forward equals the single
// one within rounding (float activations: NMSE ~1e-14 on the tests' small models).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/graph/node.hpp"
#include "llmrt/model/weights.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::model {

// Which part of a model a graph computes: rank `rank` of `ranks`; ranks = 0, the whole model with
// no collectives in its graph (ranks = 1 is the whole model with collectives of one rank).
struct tensor_parallel {
    int32_t rank = 0;
    int32_t ranks = 0;
};

// Rank tp.rank's weights: hparams with its n_head, n_head_kv and n_ff (head_dim and n_vocab
// those of the whole model), weight_refs of its slices. It points into the full model's weights
// (and their file), which must outlive it.
struct llama_shard {
    llama_weights weights;
    tensor_parallel tp{};
    std::vector<std::vector<std::byte>> owned;  // the k slices; moving the shard keeps the buffers
};

namespace detail {

inline std::string tp_text(tensor_parallel tp) {
    return "tensor parallelism (rank " + std::to_string(tp.rank) + " of " + std::to_string(tp.ranks) + "): ";
}

// Rows [begin, end) of a matrix: the same bytes, from row `begin` on.
inline weight_ref row_slice(const weight_ref& w, int64_t begin, int64_t end) {
    weight_ref s = w;
    s.ne1 = end - begin;
    if (w.data) s.data = static_cast<const std::byte*>(w.data) + std::size_t(begin) * row_size(w.type, w.ne0);
    return s;
}

// Elements [begin, end) of an f32 vector (a bias; absent ones stay absent).
inline weight_ref vector_slice(const weight_ref& b, int64_t begin, int64_t end) {
    weight_ref s = b;
    s.ne0 = end - begin;
    if (b.data) s.data = static_cast<const float*>(b.data) + begin;
    return s;
}

// Elements [k0, k1) of every row, copied into a buffer of `owned`.
inline weight_ref k_slice(const weight_ref& w, int64_t k0, int64_t k1, tensor_parallel tp,
                          std::vector<std::vector<std::byte>>& owned) {
    const int64_t bs = block_size(w.type);
    check(k0 % bs == 0 && k1 % bs == 0, errc::shape_mismatch, [&] {
        return tp_text(tp) + "'" + w.name + "' (" + name(w.type) + ") splits along k = " + std::to_string(w.ne0) +
               " into slices of " + std::to_string(k1 - k0) + ", not a multiple of the type's block size " +
               std::to_string(bs);
    });
    const std::size_t row = row_size(w.type, w.ne0), part = row_size(w.type, k1 - k0), at = row_size(w.type, k0);
    std::vector<std::byte> bytes(part * std::size_t(w.ne1));
    const auto* src = static_cast<const std::byte*>(w.data);
    for (int64_t r = 0; r < w.ne1; ++r) std::memcpy(bytes.data() + std::size_t(r) * part, src + std::size_t(r) * row + at, part);
    weight_ref s = w;
    s.ne0 = k1 - k0;
    s.data = bytes.data();
    owned.push_back(std::move(bytes));
    return s;
}

}  // namespace detail

inline llama_shard shard_llama_weights(const llama_weights& full, tensor_parallel tp) {
    const llama_hparams& h = full.hparams;
    const int32_t n = tp.ranks, r = tp.rank;
    check(n >= 1 && r >= 0 && r < n, errc::invalid_argument, [&] {
        return "tensor parallelism: rank " + std::to_string(r) + " of " + std::to_string(n) +
               " ranks; need ranks >= 1 and 0 <= rank < ranks";
    });
    const std::string what = detail::tp_text(tp);
    check(!h.experts() || h.n_expert % n == 0, errc::invalid_argument, [&] {
        return what + "expert_count = " + std::to_string(h.n_expert) + " is not a multiple of the " + std::to_string(n) +
               " ranks (whole experts per rank)";
    });
    check(h.n_head % n == 0 && h.n_head_kv % n == 0, errc::invalid_argument, [&] {
        return what + "n_head = " + std::to_string(h.n_head) + " and n_head_kv = " + std::to_string(h.n_head_kv) +
               " must both be multiples of the " + std::to_string(n) + " ranks (whole heads per rank)";
    });
    check(h.experts() || h.n_ff % n == 0, errc::invalid_argument, [&] {
        return what + "n_ff = " + std::to_string(h.n_ff) + " is not a multiple of the " + std::to_string(n) + " ranks";
    });
    check(h.n_vocab >= n, errc::invalid_argument, [&] {
        return what + "n_vocab = " + std::to_string(h.n_vocab) + " gives some rank no row of the output";
    });
    llama_shard s;
    s.tp = tp;
    llama_weights& w = s.weights;
    w.hparams = h;
    w.hparams.n_embd_head = h.head_dim();  // unchanged, where n_embd / n_head would change
    w.hparams.n_head = h.n_head / n;
    w.hparams.n_head_kv = h.n_head_kv / n;
    w.hparams.n_ff = h.experts() ? h.n_ff : h.n_ff / n;  // a MoE model's dense n_ff is not used
    if (h.experts()) {
        w.hparams.experts_held = h.n_expert / n;
        w.hparams.expert_first = r * w.hparams.experts_held;
    }
    const int64_t e0 = w.hparams.expert_first, e1 = e0 + w.hparams.experts_held;
    // Expert e's rows of a stacked experts matrix (or its bias column): [e · rows, (e + 1) · rows).
    auto experts_slice = [&](const weight_ref& x) {
        const int64_t rows = x.ne1 / h.n_expert;
        return detail::row_slice(x, e0 * rows, e1 * rows);
    };
    const int64_t q0 = int64_t(r) * (h.n_embd_q() / n), q1 = q0 + h.n_embd_q() / n;
    const int64_t kv0 = int64_t(r) * (h.n_embd_kv() / n), kv1 = kv0 + h.n_embd_kv() / n;
    const int64_t ff0 = int64_t(r) * w.hparams.n_ff, ff1 = ff0 + w.hparams.n_ff;
    w.token_embd = full.token_embd;
    w.output_norm = full.output_norm;
    w.rope_freqs = full.rope_freqs;
    w.tied_output = false;  // the output slice is a weight of its own
    w.output = detail::row_slice(full.output, graph::shard_begin(h.n_vocab, n, r), graph::shard_begin(h.n_vocab, n, r + 1));
    w.output.name = "output.weight";
    for (const llama_layer_weights& fl : full.layers) {
        llama_layer_weights l = fl;  // norms, q/k norms: replicated
        l.attn_q = detail::row_slice(fl.attn_q, q0, q1);
        l.attn_k = detail::row_slice(fl.attn_k, kv0, kv1);
        l.attn_v = detail::row_slice(fl.attn_v, kv0, kv1);
        l.attn_q_bias = detail::vector_slice(fl.attn_q_bias, q0, q1);
        l.attn_k_bias = detail::vector_slice(fl.attn_k_bias, kv0, kv1);
        l.attn_v_bias = detail::vector_slice(fl.attn_v_bias, kv0, kv1);
        l.attn_output = detail::k_slice(fl.attn_output, q0, q1, tp, s.owned);
        l.attn_sinks = detail::vector_slice(fl.attn_sinks, q0 / h.head_dim(), q1 / h.head_dim());
        if (!h.experts()) {
            l.ffn_gate = detail::row_slice(fl.ffn_gate, ff0, ff1);
            l.ffn_up = detail::row_slice(fl.ffn_up, ff0, ff1);
            l.ffn_down = detail::k_slice(fl.ffn_down, ff0, ff1, tp, s.owned);
        } else {
            l.ffn_gate_exps = experts_slice(fl.ffn_gate_exps);
            l.ffn_up_exps = experts_slice(fl.ffn_up_exps);
            l.ffn_down_exps = experts_slice(fl.ffn_down_exps);
            l.ffn_gate_exps_bias = experts_slice(fl.ffn_gate_exps_bias);
            l.ffn_up_exps_bias = experts_slice(fl.ffn_up_exps_bias);
            l.ffn_down_exps_bias = experts_slice(fl.ffn_down_exps_bias);
        }
        // attn_output_bias: replicated, added once after the all-reduce (llama_graph.hpp).
        w.layers.push_back(std::move(l));
    }
    return s;
}

}  // namespace llmrt::model
