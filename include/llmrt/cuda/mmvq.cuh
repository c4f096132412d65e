// mmvq: Y = W·X for a quantized matrix W (rows × k) and 1..8 float activation columns, on the
// device, plus its batched form (two outer dimensions, W broadcast across activation batches) and
// its mixture-of-experts form mmvq_id (each activation column picks its W by an int32 id).
//
//   llmrt::cuda::mmvq(W, X, Y, scratch, scratch_bytes, stream)   quantizes X to Q8_1, then W·X
//   llmrt::cuda::quantize_activations + mmvq_prepared           the same in two steps, so one
//                                                              quantized X can feed several W
//   llmrt::cuda::mmvq_prepared_many(products, X, stream)        several W sharing one prepared X
//   llmrt::cuda::mmvq_id(experts, X, ids, Y, scratch, ...)      mixture of experts
//   llmrt::cuda::mmvq_id_prepared(experts, X, ids, Y, ...)      the same on prepared X, optionally
//                                                              two products (gate, up) in one launch
//
// Pointers are device pointers, the stream is the caller's, nothing is allocated: the caller
// passes scratch (mmvq_scratch_bytes says how much). Every shape is checked on the host before
// anything is launched; a mismatch raises llmrt::error naming both shapes.
//
// The kernel, mmvq_kernel<Block, NCols, MaxSplit, Wide, SharedTile, SeveralShares>, is instantiated from the type
// list through llmrt::dispatch, never by hand. Each warp owns 16 rows and a share of k units (1, 2
// or 4 substeps of 256 elements: enough that a row's part of a unit is a multiple of 16 bytes): a
// contiguous range, or for one-substep units every split-th unit (mmvq_interleaves), so that the
// CTA's warps read neighbouring pieces of each row at once. Tensor-map or bulk copies stream each
// step's rows (raw bytes, any alignment) and activation records into a shared-memory ring, one or
// more steps ahead of the step being read (mmvq_lookahead says how many, from the type and shape).
// A step is a unit, a substep (from 3 or 5 columns on), or for Q4_K, Q5_K and Q6_K at 1 and 2
// columns two units where the ring has room for them (mmvq_wide_steps; where a warp's units are
// its turns, only as a shared tile: the CTA's whole row tile, each warp's units read from the
// others' slots, see mmvq_interleaves). One to four columns take the dp4a form (one lane per row and
// half-substep), five to eight the int8 tensor-core form (the 8 columns of an m16n8k32/k16 mma);
// both form the same integers and add them in the same float order (see codec.cuh), so a
// column's result does not depend on NCols. Codecs may ask for a step's records rearranged in
// shared memory before the dp4a form reads them (paired records: MXFP4 at 1 and 2 columns), and
// the tensor-core form of unaligned blocks is instantiated for the rows' address modulo 4 where
// the copies make it known (see codec.cuh). The warps of a CTA split k; their partial sums meet
// in shared memory in a fixed order: no float atomics (the epilogues count arrivals in integers).
//
// The pieces: mmvq/layout.cuh (shapes at compile time), mmvq/kernel.cuh (the kernel),
// mmvq/launch.cuh (the launch policy), mmvq_epilogue.cuh (what a launch finishes); this header
// checks and launches.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/mmvq/launch.cuh"
#include "llmrt/cuda/views.cuh"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda {

namespace detail {

// Every check of mmvq's shapes, before anything is launched.
inline void check_mmvq_shapes(const qmatrix_view& w, int64_t x_k, int64_t x_ncols, int64_t x_batch2, int64_t x_batch3,
                              const output_columns& y, const char* op, const std::string& shapes) {
    check(x_k == w.k, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": X's column length must equal W's k"; });
    check(x_ncols >= 1 && x_ncols <= mmvq_max_cols, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": X must have 1..8 columns"; });
    check(y.length == w.rows && y.ncols == x_ncols && y.batch2 == x_batch2 && y.batch3 == x_batch3,
          errc::shape_mismatch, [&] {
              return std::string(op) + ": " + shapes + ": Y must have W's rows as length and X's columns and batches";
          });
    check(w.batch2 >= 1 && w.batch3 >= 1 && x_batch2 % w.batch2 == 0 && x_batch3 % w.batch3 == 0,
          errc::shape_mismatch, [&] {
              return std::string(op) + ": " + shapes + ": W's batches must divide X's (W is broadcast across them)";
          });
    check(y.ncols == 1 || y.col_stride == 0 || y.col_stride >= y.length, errc::shape_mismatch, [&] {
        return std::string(op) + ": " + shapes + ": Y's column stride " + std::to_string(y.col_stride) +
               " is shorter than a column";
    });
    check(x_batch2 <= 65535 && x_batch3 <= 65535, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": at most 65535 batches per dimension"; });
    dispatch<weight_types>(w.type, op, [&](auto tag) { check_weights<typename decltype(tag)::type>(w, op, shapes); });
}

// The checks of a launch's pointers (after check_mmvq_shapes), where W has rows.
inline void check_mmvq_pointers(const qmatrix_view& w, const prepared_activations& x, const output_columns& y,
                                const char* op, const std::string& shapes) {
    check(w.k > 0 && w.data && x.data && y.data, errc::invalid_argument,
          [&] { return std::string(op) + ": " + shapes + ": null pointer or k = 0"; });
    check(reinterpret_cast<uintptr_t>(x.data) % 16 == 0, errc::invalid_argument,
          [&] { return std::string(op) + ": the prepared activations must be 16-byte aligned"; });
}

// The launch options mmvq reads, checked before anything is launched.
inline void check_mmvq_options(const launch_options& options, const char* op) {
    const int cap = options.mmvq_max_warps;
    check(cap == 0 || cap == 1 || cap == 2 || cap == 4 || cap == 8, errc::invalid_argument, [&] {
        return std::string(op) + ": launch_options::mmvq_max_warps is " + std::to_string(cap) +
               "; it must be 0 (mmvq chooses), 1, 2, 4 or 8";
    });
}

// Launchers that quantize X themselves cannot be told that X was complete before them.
inline void check_quantizes_own_activations(const launch_options& options, const char* op) {
    check(options.activations != activation_order::shared, errc::invalid_argument, [&] {
        return std::string(op) + ": activation_order::shared, but this launcher quantizes X itself just before "
                                 "(use quantize_activations and mmvq_prepared_many)";
    });
}

// The launch of checked shapes: W of type B, NCols columns.
template <class B, int NCols>
void mmvq_launch(const qmatrix_view& w, const prepared_activations& x, const output_columns& y, cudaStream_t stream,
                 const launch_options& options, const char* op, const std::string& shapes,
                 const mmvq_epilogue& epilogue = {}, const float* bias = nullptr) {
    if (w.rows == 0) return;
    check_mmvq_pointers(w, x, y, op, shapes);
    check_mmvq_epilogue(epilogue, w.rows, y, x.ncols, x.batch2 * x.batch3, op, shapes);
    const device_limits device = check_device_supports_mmvq();
    mmvq_params p{};
    p.w = static_cast<const uint8_t*>(w.data);
    p.w_row_stride = w.row_stride_or_dense();
    p.w_stride2 = w.stride2_or_dense();
    p.w_stride3 = w.stride3_or_dense();
    p.w_row_bytes = w.row_bytes();
    p.x = static_cast<const uint8_t*>(x.data);
    p.x_stride2 = activation_batch_bytes(x.k, x.ncols);
    p.x_stride3 = x.batch2 * p.x_stride2;
    p.y = y.data;
    p.y_col_stride = y.col_stride_or_dense();
    p.y_stride2 = y.stride2_or_dense();
    p.y_stride3 = y.stride3_or_dense();
    p.rows = int32_t(w.rows);
    p.nblocks = int32_t(w.k / B::block_size);
    p.nblocks32 = int32_t(w.k / 32);
    set_mmvq_steps<B>(p, w.k);
    p.ratio2 = int32_t(x.batch2 / w.batch2);
    p.ratio3 = int32_t(x.batch3 / w.batch3);
    p.activations = int32_t(options.activations);
    p.epilogue = epilogue;
    check(!bias || (w.batch2 == 1 && w.batch3 == 1), errc::invalid_argument,
          [&] { return std::string(op) + ": " + shapes + ": a bias needs one W"; });
    p.bias = bias;
    const int64_t tiles = (w.rows + mmvq_tile_rows - 1) / mmvq_tile_rows;
    const int split = mmvq_split<B>(tiles * x.batch2 * x.batch3, p.nunits);
    const dim3 grid(unsigned(tiles), unsigned(x.batch2), unsigned(x.batch3));
    const weight_geometry geometry{w.data,      p.w_row_bytes, w.rows,      w.batch2,
                                   w.batch3,    p.w_row_stride, p.w_stride2, p.w_stride3};
    launch_mmvq_of<B, NCols>(p, geometry, grid, split, device, stream, options);
}

}  // namespace detail

// Y = W·X for activations already quantized into mmvq's records (quantize_activations): for
// every batch (i2, i3) of X, Y[i2, i3] = W[i2 / (X.batch2 / W.batch2), i3 / (X.batch3 / W.batch3)]
// · X[i2, i3]. The typed form: W's type must be Block and X must have NCols columns.
template <class Block, int NCols>
void mmvq(const qmatrix_view& w, const prepared_activations& x, const output_columns& y, cudaStream_t stream,
          const launch_options& options = {}) {
    static_assert(list_contains_v<Block, weight_types>, "llmrt::cuda::mmvq<Block, NCols>: Block must be a weight type");
    static_assert(NCols >= 1 && NCols <= mmvq_max_cols, "llmrt::cuda::mmvq<Block, NCols>: NCols must be 1..8");
    const char* op = "cuda::mmvq";
    const std::string shapes = detail::mmvq_shapes(w, x.describe(), y);
    check(w.type == Block::id && x.ncols == NCols, errc::invalid_argument, [&] {
        return std::string(op) + "<" + Block::name + ", " + std::to_string(NCols) + ">: " + shapes +
               ": W's type or X's column count does not match the template arguments";
    });
    detail::check_mmvq_shapes(w, x.k, x.ncols, x.batch2, x.batch3, y, op, shapes);
    detail::check_mmvq_options(options, op);
    detail::mmvq_launch<Block, NCols>(w, x, y, stream, options, op, shapes);
}

// The same for a runtime type and column count (dispatched over weight_types and 1..8).
inline void mmvq_prepared(const qmatrix_view& w, const prepared_activations& x, const output_columns& y,
                          cudaStream_t stream, const launch_options& options = {}) {
    const char* op = "cuda::mmvq";
    const std::string shapes = detail::mmvq_shapes(w, x.describe(), y);
    detail::check_mmvq_shapes(w, x.k, x.ncols, x.batch2, x.batch3, y, op, shapes);
    detail::check_mmvq_options(options, op);
    dispatch<weight_types>(w.type, op, [&](auto tag) {
        using B = typename decltype(tag)::type;
        detail::with_ncols(x.ncols, [&](auto ncols) {
            detail::mmvq_launch<B, decltype(ncols)::value>(w, x, y, stream, options, op, shapes);
        });
    });
}

// One product of mmvq_prepared_many: a W, where its Y goes and what else its launch finishes
// (mmvq_epilogue.cuh).
struct mmvq_product {
    qmatrix_view w;
    output_columns y;
    mmvq_epilogue epilogue{};
    const float* bias = nullptr;  // null, or one float per row of W, added to Y (y = sum + bias)
};

// Y_i = W_i·X for every product, as back-to-back launches on `stream` that share one prepared X
// (Q, K and V of a token; gate and up; many W in turn). The first launch reads X once the previous
// kernel is complete and lets the next launch start only then; the others read X at once, with
// their weights, and wait for the previous kernel only before writing their Y
// (activation_order). Each Y has the bits that mmvq_prepared gives it. options.activations says how
// the first launch may read X: after_previous (the default: X may come from the previous kernel)
// or shared (the previous kernel is an mmvq on the same X launched first_of_shared or shared).
// Every product's shapes and pointers are checked before anything is launched; a message names
// the product by its index.
inline void mmvq_prepared_many(std::span<const mmvq_product> products, const prepared_activations& x,
                               cudaStream_t stream, const launch_options& options = {}) {
    const char* op = "cuda::mmvq_prepared_many";
    auto shapes_of = [&](std::size_t i) {
        return "product " + std::to_string(i) + ": " + detail::mmvq_shapes(products[i].w, x.describe(), products[i].y);
    };
    detail::check_mmvq_options(options, op);
    for (std::size_t i = 0; i < products.size(); ++i) {
        const mmvq_product& product = products[i];
        const std::string shapes = shapes_of(i);
        detail::check_mmvq_shapes(product.w, x.k, x.ncols, x.batch2, x.batch3, product.y, op, shapes);
        if (product.w.rows > 0) detail::check_mmvq_pointers(product.w, x, product.y, op, shapes);
    }
    // Products of no rows launch nothing: the order follows the launches.
    std::size_t launches = 0;
    for (const mmvq_product& product : products) launches += product.w.rows > 0 ? 1 : 0;
    std::size_t launched = 0;
    for (std::size_t i = 0; i < products.size(); ++i) {
        if (products[i].w.rows == 0) continue;
        launch_options o = options;
        if (launched > 0) o.activations = activation_order::shared;
        else if (launches > 1 && options.activations != activation_order::shared)
            o.activations = activation_order::first_of_shared;
        dispatch<weight_types>(products[i].w.type, op, [&](auto tag) {
            using B = typename decltype(tag)::type;
            detail::with_ncols(x.ncols, [&](auto ncols) {
                detail::mmvq_launch<B, decltype(ncols)::value>(products[i].w, x, products[i].y, stream, o, op,
                                                               shapes_of(i), products[i].epilogue, products[i].bias);
            });
        });
        ++launched;
    }
}

// The activations that quantize_activations(x, scratch, ...) leaves in scratch.
inline prepared_activations prepared_from(const input_columns& x, const void* scratch) {
    prepared_activations prepared;
    prepared.data = scratch;
    prepared.k = x.length;
    prepared.ncols = x.ncols;
    prepared.batch2 = x.batch2;
    prepared.batch3 = x.batch3;
    return prepared;
}

// Y = W·X: quantizes X into scratch (mmvq_scratch_bytes(X) bytes, 16-byte aligned), then
// mmvq_prepared: two launches on `stream`, after every check has passed.
inline void mmvq(const qmatrix_view& w, const input_columns& x, const output_columns& y, void* scratch,
                 std::size_t scratch_bytes, cudaStream_t stream, const launch_options& options = {}) {
    const char* op = "cuda::mmvq";
    const std::string shapes = detail::mmvq_shapes(w, x.describe(), y);
    detail::check_quantizes_own_activations(options, op);
    detail::check_mmvq_options(options, op);
    detail::check_mmvq_shapes(w, x.length, x.ncols, x.batch2, x.batch3, y, op, shapes);
    check(scratch_bytes >= mmvq_scratch_bytes(x), errc::invalid_argument, [&] {
        return std::string(op) + ": " + shapes + ": scratch of " + std::to_string(scratch_bytes) + " bytes, " +
               std::to_string(mmvq_scratch_bytes(x)) + " needed";
    });
    if (w.rows == 0) return;
    check(w.k > 0 && w.data && x.data && y.data && scratch, errc::invalid_argument,
          [&] { return std::string(op) + ": " + shapes + ": null pointer or k = 0"; });
    detail::check_device_supports_mmvq();
    quantize_activations(x, scratch, scratch_bytes, stream, options);
    mmvq_prepared(w, prepared_from(x, scratch), y, stream, options);
}

namespace detail {

// The shapes of an mmvq_id launch (mmvq_id_prepared says what they mean).
inline void check_mmvq_id_shapes(const qmatrix_view& experts, const prepared_activations& x, const expert_ids_view& ids,
                                 const output_columns& y, int32_t halves, const char* op, const std::string& shapes) {
    check(halves == 1 || halves == 2, errc::invalid_argument,
          [&] { return std::string(op) + ": " + shapes + ": halves must be 1 or 2, got " + std::to_string(halves); });
    check(halves == 1 || x.ncols == 1, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": two products side by side read one X column per token"; });
    check(experts.batch3 == 1 && x.batch3 == 1 && y.batch3 == 1, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": the third batch dimension must be 1"; });
    check(experts.batch2 % halves == 0, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": the experts do not split into two products"; });
    check(x.k == experts.k, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": X's column length must equal the experts' k"; });
    check(ids.n_tokens == x.batch2 && ids.n_tokens == y.batch2, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": ids, X and Y must have the same number of tokens"; });
    check(ids.n_used >= 1 && y.ncols == halves * ids.n_used && (x.ncols == 1 || x.ncols == ids.n_used),
          errc::shape_mismatch, [&] {
              return std::string(op) + ": " + shapes +
                     ": Y needs one column per used expert (and product), X one column or one per used expert";
          });
    check(y.length == experts.rows, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": Y's length must equal the experts' rows"; });
    check(y.ncols <= 65535 && ids.n_tokens <= 65535, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": at most 65535 tokens and used experts"; });
    check(y.ncols == 1 || y.col_stride == 0 || y.col_stride >= y.length, errc::shape_mismatch, [&] {
        return std::string(op) + ": " + shapes + ": Y's column stride is shorter than a column";
    });
}

}  // namespace detail

// The mixture-of-experts form on records quantized before (x: k = the experts' k, ncols 1 or
// n_used per token, batch2 = n_tokens; each activation column its own batch of one column, as
// mmvq_id below quantizes them), optionally over the experts of halves = 2 products side by side:
//   experts   halves · n_experts matrices (batch2), product h's expert e at batch h · n_experts + e
//   y         per token halves · n_used columns, column h · n_used + s = product h of slot s:
//               Y[token][h·n_used + s] = experts[h·n_experts + ids[token][s]] · X[token][x.ncols == 1 ? 0 : s]
//   bias      null, or a column of rows floats per batch of experts, added to its products
//             (y = sum + bias: graph::op::add_id's bits)
// An id outside [0, n_experts) gives a column of NaN (ids live on the device: they cannot be
// checked on the host without waiting for them).
//   epilogue  store, or weighted_sum (halves 1; mmvq_epilogue.cuh): e.slots = n_used, the
//             weights and out of every token, gridDim.x · n_tokens counters at zero (and
//             n_tokens more with the norm after it chained: e.length = rows, c0 = 0); or
//             swiglu_slots (halves 2, rows a multiple of 32): e.half = rows, e.slots = n_used,
//             n_tokens · n_used · rows / 32 counters at zero, h and/or records
inline void mmvq_id_prepared(const qmatrix_view& experts, const prepared_activations& x, const expert_ids_view& ids,
                             const output_columns& y, cudaStream_t stream, const launch_options& options = {},
                             int32_t halves = 1, const float* bias = nullptr, const mmvq_epilogue& epilogue = {}) {
    const char* op = "cuda::mmvq_id";
    const std::string shapes = detail::mmvq_shapes(experts, x.describe(), y) + ", ids " + ids.describe();
    detail::check_mmvq_options(options, op);
    detail::check_mmvq_id_shapes(experts, x, ids, y, halves, op, shapes);
    check(epilogue.kind == mmvq_finish::store ||
              (epilogue.kind == mmvq_finish::weighted_sum && halves == 1 && epilogue.slots == ids.n_used &&
               epilogue.weights && epilogue.out && epilogue.counters && epilogue.out_stride >= experts.rows &&
               (epilogue.length == 0 ||
                (epilogue.length == experts.rows && experts.rows % 32 == 0 && experts.rows <= mmvq_norm_tail_max_length &&
                 epilogue.addend && epilogue.sum && epilogue.c0 == 0 && epilogue.cols >= ids.n_tokens))) ||
              (epilogue.kind == mmvq_finish::swiglu_slots && halves == 2 && epilogue.slots == ids.n_used &&
               epilogue.half == experts.rows && experts.rows % 32 == 0 && epilogue.counters &&
               (epilogue.h || epilogue.records) && (!epilogue.h || epilogue.out_stride >= ids.n_used * experts.rows)),
          errc::invalid_argument, [&] {
              return std::string(op) + ": " + shapes +
                     ": the epilogue must store, add the weighted slots of one product (weights, out, counters), or "
                     "finish the swiglu of gate and up side by side (rows a multiple of 32, counters, h or records)";
          });
    dispatch<weight_types>(experts.type, op, [&](auto tag) {
        using B = typename decltype(tag)::type;
        detail::check_weights<B>(experts, op, shapes);
        if (experts.rows == 0 || ids.n_tokens == 0) return;
        check(experts.k > 0 && experts.data && ids.data && y.data && x.data, errc::invalid_argument,
              [&] { return std::string(op) + ": " + shapes + ": null pointer or k = 0"; });
        check(experts.batch2 <= 0x7fffffff, errc::shape_mismatch, "cuda::mmvq_id: too many experts");
        const detail::device_limits device = detail::check_device_supports_mmvq();
        const int64_t column_bytes = activation_batch_bytes(x.k, 1);
        detail::mmvq_params p{};
        p.w = static_cast<const uint8_t*>(experts.data);
        p.w_row_stride = experts.row_stride_or_dense();
        p.w_stride2 = experts.stride2_or_dense();
        p.w_stride3 = 0;
        p.w_row_bytes = experts.row_bytes();
        p.x = static_cast<const uint8_t*>(x.data);
        p.x_stride2 = x.ncols == 1 ? 0 : column_bytes;
        p.x_stride3 = x.ncols * column_bytes;
        p.y = y.data;
        p.y_col_stride = y.col_stride_or_dense();
        p.y_stride2 = y.col_stride_or_dense();
        p.y_stride3 = y.stride2_or_dense();
        p.ids = ids.data;
        p.ids_token_stride = ids.token_stride_or_dense();
        p.n_experts = int32_t(experts.batch2 / halves);
        p.id_slots = int32_t(ids.n_used);
        p.bias = bias;
        p.epilogue = epilogue;
        p.rows = int32_t(experts.rows);
        p.nblocks = int32_t(experts.k / B::block_size);
        p.nblocks32 = int32_t(experts.k / 32);
        detail::set_mmvq_steps<B>(p, experts.k);
        p.ratio2 = p.ratio3 = 1;
        p.activations = int32_t(options.activations);
        const int64_t tiles = (experts.rows + detail::mmvq_tile_rows - 1) / detail::mmvq_tile_rows;
        const int split = detail::mmvq_split<B>(tiles * y.ncols * ids.n_tokens, p.nunits);
        const dim3 grid(unsigned(tiles), unsigned(y.ncols), unsigned(ids.n_tokens));
        const detail::weight_geometry geometry{experts.data,    p.w_row_bytes, experts.rows, experts.batch2, 1,
                                               p.w_row_stride, p.w_stride2,  experts.batch2 * p.w_stride2};
        detail::launch_mmvq_of<B, 1>(p, geometry, grid, split, device, stream, options);
    });
}

// x's records as mmvq_id_prepared reads them (x: per token, batch2 = n_tokens, ncols columns;
// batch3 = 1): every activation column a batch of one column. Scratch: mmvq_id_scratch_bytes(x).
inline prepared_activations quantize_id_activations(const input_columns& x, void* scratch, std::size_t scratch_bytes,
                                                    cudaStream_t stream, const launch_options& options = {}) {
    const char* op = "cuda::quantize_id_activations";
    check(x.batch3 == 1, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + x.describe() + ": the third batch dimension must be 1"; });
    check(scratch_bytes >= mmvq_id_scratch_bytes(x), errc::invalid_argument, [&] {
        return std::string(op) + ": " + x.describe() + ": scratch of " + std::to_string(scratch_bytes) + " bytes, " +
               std::to_string(mmvq_id_scratch_bytes(x)) + " needed";
    });
    input_columns columns = x;  // (token, column) -> batch
    columns.ncols = 1;
    columns.col_stride = 0;
    columns.batch2 = x.ncols;
    columns.stride2 = x.col_stride_or_dense();
    columns.batch3 = x.batch2;
    columns.stride3 = x.stride2_or_dense();
    if (x.length > 0 && x.ncols > 0 && x.batch2 > 0) quantize_activations(columns, scratch, scratch_bytes, stream, options);
    return prepared_activations{scratch, x.length, x.ncols, x.batch2, 1};
}

// The same on float activations (x.batch3 = 1), quantized into the scratch first (halves 1, no
// bias). Scratch: mmvq_id_scratch_bytes(x).
inline void mmvq_id(const qmatrix_view& experts, const input_columns& x, const expert_ids_view& ids,
                    const output_columns& y, void* scratch, std::size_t scratch_bytes, cudaStream_t stream,
                    const launch_options& options = {}) {
    const char* op = "cuda::mmvq_id";
    detail::check_quantizes_own_activations(options, op);
    detail::check_mmvq_id_shapes(experts, prepared_activations{scratch, x.length, x.ncols, x.batch2, x.batch3}, ids, y, 1,
                                 op, detail::mmvq_shapes(experts, x.describe(), y) + ", ids " + ids.describe());
    if (experts.rows == 0 || ids.n_tokens == 0) return;
    mmvq_id_prepared(experts, quantize_id_activations(x, scratch, scratch_bytes, stream, options), ids, y, stream, options);
}

}  // namespace llmrt::cuda
