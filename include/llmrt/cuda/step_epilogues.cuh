// The epilogues a step's mat-vec launch finishes for the steps it carries (graph/lower.hpp:
// carried steps; cuda/mmvq_epilogue.cuh: what each epilogue computes): the swiglu of a stacked
// gate/up (dense, or the experts' slots), and a norm step after a product.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/mmvq_epilogue.cuh"
#include "llmrt/cuda/step_context.cuh"

namespace llmrt::cuda::steps {

// The epilogue that finishes the carried swiglu r.carried for the columns from c0 on of a launch
// whose rows start at row_offset of the stack.
inline mmvq_epilogue carried_epilogue(const context& cx, const resolved& r, int64_t c0, int64_t row_offset) {
    const graph::step& st = *r.st;
    const graph::node& sw = cx.node(r.carried->st->node);
    const columns_at stack = cx.columns(st.nodes[0]);  // gate starts the stack
    const int64_t slot_bytes = activation_batch_bytes(sw.ne0, 8);  // a chunk of 8 columns (ops/records.cuh)
    mmvq_epilogue e;
    e.kind = mmvq_finish::swiglu_round;
    e.row_offset = int32_t(row_offset);
    e.half = int32_t(sw.ne0);
    e.stack = stack.f(c0);
    e.stack_stride = stack.stride;
    e.h = cx.kept(r.carried->st->node) ? cx.f(r.carried->st->node) + c0 * sw.ne0 : nullptr;
    e.records = r.carried->rounded ? reinterpret_cast<uint8_t*>(r.carried->rounded) + (c0 / 8) * slot_bytes : nullptr;
    e.counters = cx.counters;
    check(cx.counter_bytes >= std::size_t(sw.ne0 / 32) * sizeof(int32_t), errc::invalid_argument,
          "cuda backend: a matvec step carrying swiglu without room for its counters");
    return e;
}

// The epilogue that finishes the carried swiglu `sw` (swiglu or swiglu_oai) of an experts launch of
// gate and up side by side: `rows` rows a slot, n_used slots, cols tokens.
inline mmvq_epilogue carried_swiglu_slots(const context& cx, const resolved& sw, int64_t rows, int64_t n_used, int64_t cols) {
    const int32_t id = sw.st->node;
    const graph::node& act = cx.node(id);
    check(cx.counter_bytes >= std::size_t(cols * n_used * rows / 32) * sizeof(int32_t), errc::invalid_argument,
          "cuda backend: an experts step carrying swiglu without room for its counters");
    mmvq_epilogue e;
    e.kind = mmvq_finish::swiglu_slots;
    e.half = int32_t(rows);
    e.slots = int32_t(n_used);
    e.h = cx.f_or_null(id);
    e.out_stride = cx.p->col_stride[std::size_t(id)];
    e.records = reinterpret_cast<uint8_t*>(sw.rounded);
    e.counters = cx.counters;
    e.oai = act.op == graph::op::swiglu_oai ? 1 : 0;
    e.alpha = act.alpha;
    e.limit = act.limit;
    return e;
}

// Whether a carried norm step finishes in its carrier's epilogue (else it runs on its own after
// the carrier's launches): columns of whole 32-value blocks, at most mmvq_norm_tail_max_length.
inline bool norm_in_epilogue(const context& cx, const resolved& norm_step) {
    const graph::node& nd = cx.node(norm_step.st->node);
    return nd.ne0 % 32 == 0 && nd.ne0 <= mmvq_norm_tail_max_length;
}

// The norm_tail fields of e for the carried norm step ns (its residual add takes `product`), for
// the columns from c0 on of cols.
inline void set_carried_norm(mmvq_epilogue& e, const context& cx, const resolved& ns, int32_t product, int64_t c0,
                             int64_t cols) {
    const graph::step& st = *ns.st;
    const graph::node& nd = cx.node(st.node);
    const graph::node& sum = cx.node(st.sum);
    const int32_t addend = sum.src[0] == product ? sum.src[1] : sum.src[0];
    const int64_t len = nd.ne0;
    e.length = int32_t(len);
    e.addend = cx.f(addend) + c0 * len;  // the norm step's columns are dense (ops::add_rms_norm_mul)
    e.addend_stride = len;
    e.sum = cx.f(st.sum) + c0 * len;
    e.norm = cx.kept(st.node) ? cx.f(st.node) + c0 * len : nullptr;
    e.weight = st.product >= 0 ? cx.f(cx.node(st.product).src[1]) : nullptr;
    e.product = st.product >= 0 && cx.kept(st.product) ? cx.f(st.product) + c0 * len : nullptr;
    e.eps = nd.eps;
    e.records = reinterpret_cast<uint8_t*>(ns.rounded);
    e.chunk_cols = ns.rounded_chunk_cols;
    e.c0 = c0;
    e.cols = cols;
}

}  // namespace llmrt::cuda::steps
