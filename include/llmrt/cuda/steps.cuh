// How the CUDA backend runs each kind of lowered step (graph/lower.hpp): the launches of one
// step, given the device addresses the program resolved. Mechanism only; which steps exist and
// where their memory lives is the plan's business.
//
//   op          one node: the kernel of its op (include/llmrt/cuda/ops/); a top_k that carries its
//               expert_weights writes both from one launch, and the carried step launches nothing;
//               a top_k step that holds the softmax before it computes that too, and one that
//               also holds the router's float mul_mat (and its bias) is one router_top_k launch
//   norm        add_rms_norm_mul, writing the kept results and the Q8_1 records of the last one
//   matvec      the records (from the producer, or quantized here), then one mmvq launch per
//               chunk of 8 columns when the products' weights lie side by side (stacked steps
//               whose weights the program uploaded as one matrix), else one per product, the
//               launches after the first reading the records at once (activation_order::shared);
//               gate/up carrying the swiglu finishes it in the launches' epilogue
//               (mmvq_epilogue.cuh), and the carried step launches nothing; a product carrying
//               the norm step after it finishes that in the epilogue too (columns up to 8192)
//   rope_cache  rope_cache: q rotated, k rotated into the K cache, v into the V cache (each head of q
//               or k first normed where the step holds the per-head norms)
//   attention   split_attention (or the one-block-per-head kernel, then the records)
//   swiglu      swiglu_round (swiglu or swiglu_oai), its records in one-column chunks for an experts
//               step
//   experts     the records (from the producer, or quantized here), then mmvq_id_prepared: one
//               launch over gate's and up's experts side by side (and their biases) where the
//               program uploaded them so, else one per product with its bias; a carried swiglu
//               is finished in the side-by-side launch's epilogue (apart: its own launch after
//               them), a carried weighted_sum in the launch's epilogue (mmvq_epilogue.cuh), and the
//               norm step that weighted_sum carries in turn
//
// The collectives (op steps) are NCCL calls on the stream, captured with the kernels:
// all_reduce one ncclAllReduce from x into y; all_gather a copy of this rank's slice into its slot
// of the scratch, one ncclAllGather in place over the slots, then ops::interleave_slices into y.
// Without a communicator (a group of one rank) both copy x into y.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/check.cuh"
#include "llmrt/cuda/mmvq.cuh"
#include "llmrt/cuda/nccl.cuh"
#include "llmrt/cuda/ops/argmax.cuh"
#include "llmrt/cuda/ops/attention.cuh"
#include "llmrt/cuda/ops/elementwise.cuh"
#include "llmrt/cuda/ops/gather.cuh"
#include "llmrt/cuda/ops/moe.cuh"
#include "llmrt/cuda/ops/mul_mat.cuh"
#include "llmrt/cuda/ops/norm.cuh"
#include "llmrt/cuda/ops/records.cuh"
#include "llmrt/cuda/ops/rope.cuh"
#include "llmrt/cuda/ops/rows.cuh"
#include "llmrt/cuda/ops/split_attention.cuh"
#include "llmrt/cuda/step_context.cuh"
#include "llmrt/cuda/step_epilogues.cuh"
#include "llmrt/graph/plan.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda::steps {

// The records of cols columns of k floats at x (dense), in chunks of 8 (rounded_records_bytes).
inline void quantize_chunks(const float* x, int64_t k, int64_t cols, void* records, cudaStream_t stream,
                            const launch_options& o) {
    const std::size_t slot_bytes = activation_scratch_bytes(k, 8);
    for (int64_t c0 = 0; c0 < cols; c0 += 8) {
        input_columns xs;
        xs.data = x + c0 * k;
        xs.length = k;
        xs.ncols = cols - c0 < 8 ? cols - c0 : 8;
        quantize_activations(xs, static_cast<uint8_t*>(records) + std::size_t(c0 / 8) * slot_bytes, slot_bytes, stream, o);
    }
}

inline void norm(const context& cx, const resolved& r, int64_t n) {
    const graph::step& st = *r.st;
    const graph::node& nd = cx.node(st.node);
    const int64_t cols = cx.cols(st.node, n);
    const float* a = st.sum >= 0 ? cx.f(cx.node(st.sum).src[0]) : cx.f(nd.src[0]);
    const float* b = st.sum >= 0 ? cx.f(cx.node(st.sum).src[1]) : nullptr;
    const float* w = st.product >= 0 ? cx.f(cx.node(st.product).src[1]) : nullptr;
    // A grouped norm (no add, no records: graph/lower.hpp): each group a column of its own, the
    // weight one group long; its input may be a stacked product (columns further apart).
    const int64_t len = nd.group > 0 ? nd.group : nd.ne0;
    ops::add_rms_norm_mul(a, b, st.sum >= 0 ? cx.f(st.sum) : nullptr, cx.f_or_null(st.node), w,
                          st.product >= 0 ? cx.f_or_null(st.product) : nullptr, len, cols * (nd.ne0 / len), nd.eps,
                          cx.stream, cx.launch, r.rounded,
                          /*w_is_constant=*/true,  // the lowering fuses a product with a weight only
                          r.rounded_chunk_cols, st.sum >= 0 ? 0 : cx.p->col_stride[std::size_t(nd.src[0])], nd.ne0 / len);
}

template <class Types>
void matvec(const context& cx, const resolved& r, int64_t n) {
    const graph::step& st = *r.st;
    const graph::node& x = cx.node(st.x);
    const int64_t k = x.ne0, cols = cx.cols(st.x, n);
    const std::size_t slot_bytes = activation_scratch_bytes(k, 8);
    const void* records = r.rounded_in ? static_cast<const void*>(r.rounded_in) : cx.records;
    check(r.rounded_in || cx.records_bytes >= ops::rounded_records_bytes(k, cols), errc::invalid_argument,
          "cuda backend: matvec step without room for its records");
    std::vector<mmvq_product> products;
    const bool carries_norm = r.carried && r.carried->st->kind == graph::step_kind::norm;
    for (int64_t c0 = 0; c0 < cols; c0 += 8) {
        const int64_t w = cols - c0 < 8 ? cols - c0 : 8;
        const void* slot = static_cast<const uint8_t*>(records) + std::size_t(c0 / 8) * slot_bytes;
        if (!r.rounded_in) {
            input_columns xs;
            xs.data = cx.f(st.x) + c0 * k;
            xs.length = k;
            xs.ncols = w;
            quantize_activations(xs, const_cast<void*>(slot), slot_bytes, cx.stream, cx.launch);
        }
        prepared_activations xp;
        xp.data = slot;
        xp.k = k;
        xp.ncols = w;
        products.clear();
        int64_t row_offset = 0;  // of the next product in the stack
        auto product = [&](const graph::node& wn, const void* wdata, int64_t rows, int32_t out, const float* bias) {
            mmvq_product pr;
            if (carries_norm) {
                if (norm_in_epilogue(cx, *r.carried)) {
                    check(cx.counter_bytes >= sizeof(int32_t), errc::invalid_argument,
                          "cuda backend: a matvec step carrying a norm without room for its counter");
                    pr.epilogue.kind = mmvq_finish::norm_tail;
                    pr.epilogue.counters = cx.counters;
                    set_carried_norm(pr.epilogue, cx, *r.carried, out, c0, cols);
                }
            } else if (r.carried) {
                pr.epilogue = carried_epilogue(cx, r, c0, row_offset);
            }
            pr.bias = bias;
            row_offset += rows;
            pr.w.type = wn.type;
            pr.w.data = wdata;
            pr.w.rows = rows;
            pr.w.k = k;
            const columns_at y = cx.columns(out);
            pr.y.data = y.f(c0);
            pr.y.length = rows;
            pr.y.ncols = w;
            pr.y.col_stride = y.stride;
            products.push_back(pr);
        };
        if (r.concatenated) {
            product(cx.node(cx.node(st.nodes[0]).src[0]), r.concatenated, st.rows_total, graph::product_result(*cx.g, st, 0),
                    reinterpret_cast<const float*>(r.concatenated_bias));
        } else {
            for (std::size_t i = 0; i < st.nodes.size(); ++i) {
                const graph::node& mm = cx.node(st.nodes[i]);
                if (mm.op != graph::op::mul_mat) continue;
                const graph::node& wn = cx.node(mm.src[0]);
                const int32_t out = graph::product_result(*cx.g, st, i);
                product(wn, cx.at(mm.src[0]), wn.ne1, out, out != st.nodes[i] ? cx.f(cx.node(out).src[1]) : nullptr);
            }
        }
        for (const mmvq_product& pr : products)
            check(is_in<Types>(pr.w.type), errc::unsupported_type, [&] {
                return std::string("cuda backend: matvec with W of type ") + name(pr.w.type) +
                       ": this backend takes the block types " + llmrt::detail::type_names(Types{});
            });
        mmvq_prepared_many(products, xp, cx.stream, cx.launch);
    }
    if (carries_norm && !norm_in_epilogue(cx, *r.carried)) norm(cx, *r.carried, n);
}

// A rope node's frequency factors on the device, or null.
inline const float* factors(const context& cx, const graph::node& rope_node) {
    return rope_node.n_src() > 2 ? cx.f(rope_node.src[2]) : nullptr;
}

inline void rope_cache(const context& cx, const resolved& r, int64_t n) {
    const graph::step& st = *r.st;
    const graph::node& qr = cx.node(st.q_rope);
    const graph::node& kr = cx.node(st.k_rope);
    const graph::node& kc = cx.node(st.k_write);
    const graph::node& vc = cx.node(st.v_write);
    // A rope's input: its x, or the input of the per-head norm the step computes before it.
    ops::head_norms norms;
    auto input = [&](int32_t norm, const graph::node& rope_node, const float*& w, float& eps) {
        if (norm < 0) return cx.columns(rope_node.src[0]);
        w = cx.f(cx.node(rope_node.src[0]).src[1]);  // the product's weight
        eps = cx.node(norm).eps;
        return cx.columns(cx.node(norm).src[0]);
    };
    const columns_at q = input(st.q_norm, qr, norms.q_w, norms.q_eps), k = input(st.k_norm, kr, norms.k_w, norms.k_eps);
    const columns_at v = cx.columns(vc.src[1]);
    ops::rope_cache(q.f(), q.stride, k.f(), k.stride, v.f(), v.stride, cx.f(st.q_rope), kc.type, cx.at(st.k_write),
                    cx.at(st.v_write), kc.ne1, kr.rope.n_head, reinterpret_cast<const int32_t*>(cx.at(qr.src[1])),
                    cx.cols(st.q_rope, n), qr.rope, factors(cx, qr), cx.stream, cx.launch, norms);
}

// Scratch of the attention step: the split form's partial sums (or the one-block form's scores),
// and room for the result where the records cannot come from the combine kernel (head_dim not a
// multiple of 32, or no split form) and the result itself may not be kept.
inline std::size_t attention_scratch_bytes(const graph::graph& g, const graph::node& nd) {
    const graph::node& cache = g.nodes()[std::size_t(nd.src[1])];
    const graph::attention_params& p = nd.attention;
    if (ops::split_attention_supports(p, cache.type))
        return ops::split_attention_scratch_bytes(cache.ne1, p, cache.type, nd.ne1) +
               (p.head_dim % 32 == 0 ? 0 : tensor_bytes(nd));
    return ops::attention_scratch_bytes(cache.ne1, p.n_head, nd.ne1) + tensor_bytes(nd);
}

// The counters a node's kernel keeps between launches (0: none): split attention's, a long
// argmax's, and the epilogues' of the steps a launch finishes (swiglu, weighted_sum, top_k,
// rms_norm). One buffer serves every node: each kernel leaves its counters at zero.
inline std::size_t counter_bytes(const graph::graph& g, const graph::node& nd) {
    if (nd.op == graph::op::argmax) return ops::argmax_counter_bytes(nd.ne1);
    if (nd.op == graph::op::top_k) return std::size_t(nd.ne1) * sizeof(int32_t);  // router_top_k's, one per column
    if (nd.op == graph::op::rms_norm) return sizeof(int32_t);  // a matvec carrying its norm step: one per launch
    // A carrier's epilogue: the dense matvec's, one per block of 32 values of a column; the
    // experts', one per block of every token's column (its slots one after another).
    if (nd.op == graph::op::swiglu || nd.op == graph::op::swiglu_oai)
        return std::size_t(nd.ne0 / 32 * nd.ne1) * sizeof(int32_t);
    if (nd.op == graph::op::weighted_sum)  // an experts step's epilogue: one per token and row tile, then one per token
        return std::size_t(((nd.ne0 + detail::mmvq_tile_rows - 1) / detail::mmvq_tile_rows + 1) * nd.ne1) * sizeof(int32_t);
    if (nd.op != graph::op::attention || !ops::split_attention_supports(nd.attention, g.nodes()[std::size_t(nd.src[1])].type))
        return 0;
    return ops::split_attention_counter_bytes(nd.attention, nd.ne1);
}

// Whether the host writes the attention's positions before a run, and the forward writes its
// caches at those positions only: then the keys below the batch's first position hold earlier
// forwards' values, which the split form may copy while the kernels before it run.
inline bool cache_written_at_positions_only(const context& cx, const graph::node& nd) {
    const int32_t pos = nd.src[3];
    auto written_at_pos = [&](int32_t cache) {
        const graph::node& c = cx.node(cache);
        if (c.op != graph::op::set_rows || c.src[2] != pos) return false;
        for (int32_t id : cx.p->order) {  // no other write to the same state
            const graph::node& o = cx.node(id);
            if (o.op == graph::op::set_rows && id != cache && cx.p->state_of(id) == cx.p->state_of(cache)) return false;
        }
        return true;
    };
    return cx.node(pos).op == graph::op::input && written_at_pos(nd.src[1]) && written_at_pos(nd.src[2]);
}

inline void attention(const context& cx, const resolved& r, int64_t n) {
    const graph::step& st = *r.st;
    const graph::node& nd = cx.node(st.node);
    const graph::node& kc = cx.node(nd.src[1]);
    const int64_t cols = cx.cols(st.node, n);
    const auto* pos = reinterpret_cast<const int32_t*>(cx.at(nd.src[3]));
    const columns_at q = cx.columns(nd.src[0]);
    const graph::attention_params& p = nd.attention;
    const bool split = ops::split_attention_supports(p, kc.type);
    const float* sinks = nd.n_src() > 4 ? cx.f(nd.src[4]) : nullptr;
    // The combine writes the records where whole warps hold whole blocks of 32 values.
    const bool combine_rounds = split && p.head_dim % 32 == 0;
    float* out = cx.kept(st.node) || combine_rounds
                     ? cx.f_or_null(st.node)
                     : reinterpret_cast<float*>(r.scratch + (r.scratch_bytes - tensor_bytes(nd)));
    if (split) {
        ops::split_attention(q.f(), q.stride, kc.type, cx.at(nd.src[1]), cx.at(nd.src[2]), kc.ne1, pos, out,
                             combine_rounds ? r.rounded : nullptr, cols, p, r.scratch, r.scratch_bytes, cx.counters,
                             cx.counter_bytes, cx.stream, cx.launch, cache_written_at_positions_only(cx, nd), sinks);
    } else {
        ops::attention(q.f(), kc.type, cx.at(nd.src[1]), cx.at(nd.src[2]), kc.ne1, pos, out, cols, p, r.scratch,
                       ops::attention_scratch_bytes(kc.ne1, p.n_head, cols), cx.stream, cx.launch, sinks);
    }
    if (r.rounded && !combine_rounds) quantize_chunks(out, nd.ne0, cols, r.rounded, cx.stream, cx.launch);
}

inline void swiglu(const context& cx, const resolved& r, int64_t n) {  // swiglu or swiglu_oai
    const graph::step& st = *r.st;
    const graph::node& nd = cx.node(st.node);
    const columns_at gate = cx.columns(nd.src[0]), up = cx.columns(nd.src[1]);
    const ops::gated_activation act{nd.op == graph::op::swiglu_oai, nd.alpha, nd.limit};
    ops::swiglu_round(gate.f(), gate.stride, up.f(), up.stride, cx.f_or_null(st.node), r.rounded, nd.ne0,
                      cx.cols(st.node, n), cx.stream, cx.launch, act, r.rounded_chunk_cols);
}

// The experts step: x's records (from its producer, or quantized here into the step's scratch),
// then one mmvq_id launch over both products' experts side by side where the program uploaded
// them so (and their biases, where there are), else one per product, each adding its bias.
template <class Types>
void experts(const context& cx, const resolved& r, int64_t n) {
    const graph::step& st = *r.st;
    const graph::node& first = cx.node(st.nodes[0]);  // a mul_mat_id
    const graph::node& w0 = cx.node(first.src[0]);
    const int64_t k = w0.ne0, cols = cx.cols(st.x, n), n_used = cx.node(first.src[2]).ne0;
    const int64_t rows = w0.ne1 / first.n_expert;
    prepared_activations xp{r.rounded_in, k, cx.node(st.x).ne0 / k, cols, 1};
    if (!r.rounded_in) {
        input_columns xs;
        xs.data = cx.f(st.x);
        xs.length = k;
        xs.ncols = xp.ncols;
        xs.batch2 = cols;
        xs.stride2 = cx.p->col_stride[std::size_t(st.x)];
        xp = quantize_id_activations(xs, r.scratch, r.scratch_bytes, cx.stream, cx.launch);
    }
    expert_ids_view ids;
    ids.data = reinterpret_cast<const int32_t*>(cx.at(first.src[2]));
    ids.n_tokens = cols;
    ids.n_used = n_used;
    // The products: each mul_mat_id, or the add_id of its bias after it.
    mmvq_epilogue epilogue;
    auto launch = [&](const void* weights, int64_t batches, int32_t out, int64_t halves, const float* bias) {
        check(is_in<Types>(w0.type), errc::unsupported_type, [&] {
            return std::string("cuda backend: experts of type ") + name(w0.type) + ": this backend takes the block types " +
                   llmrt::detail::type_names(Types{});
        });
        qmatrix_view e;
        e.type = w0.type;
        e.data = weights;
        e.rows = rows;
        e.k = k;
        e.batch2 = batches;
        output_columns y;
        y.data = cx.f(out);
        y.length = rows;
        y.ncols = halves * n_used;
        y.batch2 = cols;
        y.stride2 = cx.p->col_stride[std::size_t(out)];
        mmvq_id_prepared(e, xp, ids, y, cx.stream, cx.launch, int32_t(halves), bias, epilogue);
    };
    const bool carries_swiglu = r.carried && r.carried->st->kind == graph::step_kind::swiglu;
    if (r.concatenated) {
        if (carries_swiglu) epilogue = carried_swiglu_slots(cx, *r.carried, rows, n_used, cols);
        launch(r.concatenated, 2 * first.n_expert, graph::product_result(*cx.g, st, 0), 2, reinterpret_cast<const float*>(r.concatenated_bias));
        return;
    }
    // Else the weighted_sum of the one product's slots, and the norm step it may carry in turn
    // (graph/lower.hpp); a swiglu of gate and up apart runs on its own after them.
    const resolved* chained_norm = r.carried && !carries_swiglu ? r.carried->carried : nullptr;
    if (r.carried && !carries_swiglu) {
        const int32_t ws = r.carried->st->node;
        const int64_t tiles = (rows + detail::mmvq_tile_rows - 1) / detail::mmvq_tile_rows;
        const bool norm_too = chained_norm && norm_in_epilogue(cx, *chained_norm);
        check(cx.counter_bytes >= std::size_t(tiles * cols + (norm_too ? cols : 0)) * sizeof(int32_t), errc::invalid_argument,
              "cuda backend: an experts step carrying weighted_sum without room for its counters");
        epilogue.kind = mmvq_finish::weighted_sum;
        epilogue.weights = cx.f(cx.node(ws).src[1]);
        epilogue.out = cx.f(ws);
        epilogue.out_stride = cx.p->col_stride[std::size_t(ws)];
        epilogue.slots = int32_t(n_used);
        epilogue.counters = cx.counters;
        if (norm_too) set_carried_norm(epilogue, cx, *chained_norm, ws, 0, cols);
    }
    for (std::size_t i = 0; i < st.nodes.size(); ++i) {
        const graph::node& mm = cx.node(st.nodes[i]);
        if (mm.op != graph::op::mul_mat_id) continue;
        const int32_t out = graph::product_result(*cx.g, st, i);
        check(cx.node(mm.src[0]).type == w0.type && cx.node(mm.src[0]).ne0 == k && cx.node(mm.src[0]).ne1 == w0.ne1,
              errc::invalid_argument, "cuda backend: an experts step's products have experts of one type and shape");
        launch(cx.at(mm.src[0]), mm.n_expert, out, 1, out != st.nodes[i] ? cx.f(cx.node(out).src[1]) : nullptr);
    }
    if (carries_swiglu) swiglu(cx, *r.carried, n);
    if (chained_norm && !norm_in_epilogue(cx, *chained_norm)) norm(cx, *chained_norm, n);
}

// all_reduce or all_gather of cols columns (basic_program::check_collective checked the group,
// the slice and that x is dense).
inline void collective(const context& cx, const resolved& r, int64_t n) {
    const int32_t id = r.st->node;
    const graph::node& nd = cx.node(id);
    const int64_t cols = cx.cols(id, n);
    const float* x = cx.f(nd.src[0]);
    float* y = cx.f(id);
    if (cx.nccl == nullptr) {  // a group of one rank: y is x
        LLMRT_CUDA_CHECK(cudaMemcpyAsync(y, x, std::size_t(nd.ne0 * cols) * sizeof(float), cudaMemcpyDeviceToDevice, cx.stream));
        return;
    }
#if defined(LLMRT_HAVE_NCCL)
    const nccl_communicator& c = *cx.nccl;
    if (nd.op == graph::op::all_reduce) {
        const std::size_t count = std::size_t(nd.ne0 * cols);
        if (cx.device_reduce && count <= cx.device_reduce->max_floats()) cx.device_reduce->run(x, y, count, cx.stream, cx.launch);
        else c.all_reduce(x, y, count, cx.stream);
        return;
    }
    // NCCL gathers the same count from every rank: each sends a slot as long as the widest slice,
    // its own slice first (dense columns), so the slots line up and the gather runs in place.
    const int32_t me = c.rank();
    const int64_t slot = ops::gather_slot_floats(nd.ne0, nd.ranks, cols);
    const int64_t mine = graph::shard_begin(nd.ne0, nd.ranks, me + 1) - graph::shard_begin(nd.ne0, nd.ranks, me);
    check(r.scratch_bytes >= std::size_t(slot * nd.ranks) * sizeof(float), errc::invalid_argument, [&] {
        return "cuda backend: " + graph::graph::describe(nd) + " without room for the ranks' slices";
    });
    float* gathered = reinterpret_cast<float*>(r.scratch);
    float* own = gathered + me * slot;
    LLMRT_CUDA_CHECK(cudaMemcpyAsync(own, x, std::size_t(mine * cols) * sizeof(float), cudaMemcpyDeviceToDevice, cx.stream));
    c.all_gather(own, gathered, std::size_t(slot), cx.stream);
    ops::interleave_slices(gathered, slot, nd.ranks, nd.ne0, y, cols, cx.stream, cx.launch);
#else
    (void)r;
    throw error(errc::unsupported_type, "cuda backend: " + graph::graph::describe(nd) + " needs NCCL, which this build lacks");
#endif
}

// One node on its own (op steps).
template <class Types>
void node(const context& cx, const resolved& r, int64_t n) {
    const int32_t id = r.st->node;
    const graph::node& nd = cx.node(id);
    auto src = [&](int i) -> const graph::node& { return cx.node(nd.src[std::size_t(i)]); };
    const int64_t cols = cx.cols(id, n);
    const cudaStream_t stream = cx.stream;
    const launch_options& lo = cx.launch;
    const float* a = nd.n_src() > 0 ? cx.f(nd.src[0]) : nullptr;
    const float* b = nd.n_src() > 1 ? cx.f(nd.src[1]) : nullptr;
    float* y = cx.f(id);
    auto ids = [&](int i) { return reinterpret_cast<const int32_t*>(cx.at(nd.src[std::size_t(i)])); };
    const bool broadcast = nd.n_src() > 1 && !src(1).batched && src(1).ne1 == 1;
    switch (nd.op) {
        case graph::op::input:
        case graph::op::weight:
        case graph::op::state: return;
        case graph::op::get_rows:
            ops::get_rows<all_types>(src(0).type, cx.at(nd.src[0]), nd.ne0, src(0).ne1, ids(1), y, cols, stream, lo);
            return;
        // A grouped norm is the plain norm over columns of `group` elements, and a b shorter than
        // a's columns the plain broadcast over columns of b's length (op steps' columns are dense).
        case graph::op::rms_norm: {
            const int64_t group = nd.group ? nd.group : nd.ne0;
            ops::rms_norm(a, y, group, cols * (nd.ne0 / group), nd.eps, stream, lo);
            return;
        }
        case graph::op::mul:
        case graph::op::add: {
            const int64_t len = broadcast ? src(1).ne0 : nd.ne0;
            (nd.op == graph::op::mul ? ops::mul : ops::add)(a, b, y, len, cols * (nd.ne0 / len), broadcast, stream, lo);
            return;
        }
        case graph::op::mul_mat: {
            const graph::node& w = src(0);
            if (is_float_matrix_type(w.type)) {
                ops::mul_mat_float(w.type, cx.at(nd.src[0]), w.ne1, w.ne0, b, y, cols, stream, lo);
                return;
            }
            dispatch<Types>(w.type, "cuda backend: mul_mat", [&](auto tag) {
                using B = typename decltype(tag)::type;
                ops::mul_mat_quantized<B>(cx.at(nd.src[0]), w.ne1, w.ne0, b, y, cols, cx.records, cx.records_bytes, true,
                                          stream, lo);
            });
            return;
        }
        case graph::op::rope: ops::rope(a, y, ids(1), cols, nd.rope, factors(cx, nd), stream, lo); return;
        case graph::op::attention: attention(cx, r, n); return;
        case graph::op::softmax: ops::softmax(a, y, nd.ne0, cols, stream, lo); return;
        case graph::op::top_probability: ops::top_probability(a, y, src(0).ne0, cols, stream, lo); return;
        case graph::op::silu: ops::silu(a, y, nd.ne0 * cols, stream, lo); return;
        case graph::op::swiglu: ops::swiglu(a, b, y, nd.ne0 * cols, stream, lo); return;
        case graph::op::swiglu_oai: ops::swiglu_oai(a, b, y, nd.ne0 * cols, nd.alpha, nd.limit, stream, lo); return;
        case graph::op::set_rows: ops::set_rows(nd.type, cx.at(id), nd.ne0, nd.ne1, b, ids(2), n, stream, lo); return;
        case graph::op::argmax:
            ops::argmax(a, reinterpret_cast<int32_t*>(cx.at(id)), src(0).ne0, cols, r.scratch, r.scratch_bytes, cx.counters,
                        cx.counter_bytes, stream, lo);
            return;
        case graph::op::top_k: {  // with the router, its bias and softmax before it, the expert_weights it carries (graph/lower.hpp)
            const int32_t w = r.carried ? r.carried->st->node : -1;
            float* weights = w >= 0 ? cx.f(w) : nullptr;
            const graph::expert_norm norm = w >= 0 ? cx.node(w).norm : graph::expert_norm::none;
            auto* picks = reinterpret_cast<int32_t*>(cx.at(id));
            // The step's nodes before the top_k: [the router's float mul_mat [, its bias's add]] [, the softmax].
            int32_t mm = -1, bias_add = -1, softmax = -1;
            for (int32_t held : r.st->nodes) {
                const graph::op o = cx.node(held).op;
                if (o == graph::op::mul_mat) mm = held;
                else if (o == graph::op::add) bias_add = held;
                else if (o == graph::op::softmax) softmax = held;
            }
            if (mm >= 0) {
                const graph::node& router = cx.node(cx.node(mm).src[0]);
                ops::router_picks rp;
                rp.type = router.type;
                rp.w = cx.at(cx.node(mm).src[0]);
                rp.n = router.ne1;
                rp.k_in = router.ne0;
                rp.k = nd.ne0;
                rp.x = cx.f(cx.node(mm).src[1]);
                rp.logits = cx.f(mm);
                rp.bias = bias_add >= 0 ? cx.f(cx.node(bias_add).src[1]) : nullptr;
                rp.biased = bias_add >= 0 ? cx.f(bias_add) : nullptr;
                rp.softmax = softmax >= 0;
                rp.probs = softmax >= 0 ? cx.f(softmax) : nullptr;
                rp.ids = picks;
                rp.weights = weights;
                rp.norm = norm;
                if (ops::router_top_k_supports(router.type, router.ne1) && cx.counter_bytes >= std::size_t(cols) * sizeof(int32_t)) {
                    ops::router_top_k(rp, cols, cx.counters, stream, lo);
                    return;
                }
                ops::mul_mat_float(router.type, rp.w, rp.n, rp.k_in, rp.x, rp.logits, cols, stream, lo);
                if (rp.bias) ops::add(rp.logits, rp.bias, rp.biased, rp.n, cols, true, stream, lo);
            }
            ops::top_k(a, picks, src(0).ne0, nd.ne0, cols, stream, lo, weights, norm,
                       softmax >= 0 ? cx.f(cx.node(softmax).src[0]) : nullptr, r.scratch, r.scratch_bytes);
            return;
        }
        case graph::op::expert_weights:
            ops::expert_weights(a, ids(1), y, src(0).ne0, nd.ne0, cols, nd.norm, stream, lo);
            return;
        case graph::op::mul_mat_id: {  // quantized experts only (basic_program::check_supported)
            const graph::node& w = src(0);
            ops::mul_mat_id(w.type, cx.at(nd.src[0]), w.ne1 / nd.n_expert, w.ne0, nd.n_expert, b, src(1).ne0 / w.ne0, ids(2),
                            src(2).ne0, y, cols, r.scratch, r.scratch_bytes, stream, lo);
            return;
        }
        case graph::op::weighted_sum: ops::weighted_sum(a, b, y, nd.ne0, src(1).ne0, cols, stream, lo); return;
        case graph::op::add_id:
            ops::add_id(a, b, ids(2), y, src(1).ne0, nd.n_expert, src(2).ne0, cols, stream, lo);
            return;
        case graph::op::shard_ids:
            ops::shard_ids(ids(0), reinterpret_cast<int32_t*>(cx.at(id)), nd.ne0, cols, nd.expert0, nd.n_expert, stream, lo);
            return;
        case graph::op::shard_weights:
            ops::shard_weights(a, ids(1), y, nd.ne0, cols, nd.expert0, nd.n_expert, stream, lo);
            return;
        case graph::op::all_reduce:
        case graph::op::all_gather: collective(cx, r, n); return;
    }
    throw error(errc::invalid_argument, std::string("cuda backend: no kernel for op ") + graph::to_string(nd.op));
}

// Every launch of one step (a carried step's ran in its matvec step's launches).
template <class Types>
void run(const context& cx, const resolved& r, int64_t n) {
    if (r.st->carried_by >= 0) return;
    switch (r.st->kind) {
        case graph::step_kind::op: node<Types>(cx, r, n); return;
        case graph::step_kind::norm: norm(cx, r, n); return;
        case graph::step_kind::matvec: matvec<Types>(cx, r, n); return;
        case graph::step_kind::rope_cache: rope_cache(cx, r, n); return;
        case graph::step_kind::attention: attention(cx, r, n); return;
        case graph::step_kind::swiglu: swiglu(cx, r, n); return;
        case graph::step_kind::experts: experts<Types>(cx, r, n); return;
    }
}

}  // namespace llmrt::cuda::steps
