// What an mmvq launch does with its sums besides storing Y: the swiglu after the gate/up
// mat-vec, finished where the sums are (graph/lower.hpp: a matvec step that carries the next
// step), so that it costs no launch of its own. The launch's Y is part of a stack of rows (the
// products of the matvec step side by side); row r of this launch is row row_offset + r of it.
//
//   store         Y only
//   swiglu_round  the stack is gate, up (half rows each, half a multiple of 32): the last of the
//                 four CTAs that compute gate and up rows 32g .. 32g + 31 (one counter per g,
//                 counted with an atomic add and left at zero) reads them back from the stack and
//                 writes h = silu(gate) ⊙ up and h's Q8_1 record for block g, the bits that
//                 ops::swiglu_round gives them
//
//   swiglu_slots  an mmvq_id launch of gate and up side by side (halves 2; the experts' gate/up
//                 step carrying its swiglu): the last of the four CTAs that compute gate and up
//                 rows 32g .. 32g + 31 of one token's slot s (one counter per token, slot and g,
//                 left at zero) reads them back and writes h = act(gate, up) (silu(gate) ⊙ up, or
//                 swiglu_oai's clamped form) and h's Q8_1 record for block g of that slot's column
//                 (one-column chunks, as mmvq_id reads them), the bits ops::swiglu_round gives
//
//   norm_tail     a launch of one product whose result the norm step after it adds to the
//                 residual (graph/lower.hpp: a matvec step carrying a norm step): the launch's
//                 last CTA (one counter, left at zero) computes, per column, s = addend + y,
//                 h = rms_norm(s), p = h ⊙ w and the records of the result, with the summation
//                 order of ops::add_rms_norm_mul's one-block kernel (1024 threads; columns of up
//                 to 8192), so the bits it gives
//
//   weighted_sum  an mmvq_id launch of one product (the experts' down): the last of the n_used
//                 CTAs that compute rows 16t .. 16t + 15 of a token's slots (one counter per
//                 token and row tile, left at zero) reads them back and writes
//                 out = ((w₀y₀ + w₁y₁) + ...) for those rows, the bits ops::weighted_sum gives;
//                 with the norm step after it chained (norm_tail's fields), the last tile of a
//                 token to finish then finishes the token's norm (a second counter per token)
//
// Not kept: Q/K/V finishing the rope_cache the same way (bench/RESULTS.md, Decode).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/ops/elementwise.cuh"
#include "llmrt/cuda/ops/records.cuh"

namespace llmrt::cuda {

enum class mmvq_finish : int32_t { store, swiglu_round, swiglu_slots, norm_tail, weighted_sum };

struct mmvq_epilogue {
    mmvq_finish kind = mmvq_finish::store;
    int32_t row_offset = 0;
    // swiglu_round: column c of the stack at stack + c · stack_stride (this launch's Y is part of
    // it); h at h + c · half (null: not kept); the launch's columns' records at records (null:
    // none), laid out as quantize_activations lays out this many columns; half / 32 counters.
    int32_t half = 0;
    const float* stack = nullptr;
    int64_t stack_stride = 0;
    float* h = nullptr;
    uint8_t* records = nullptr;
    int32_t* counters = nullptr;
    // weighted_sum: token t's n_used weights at weights + t · slots, its sum at out + t · out_stride;
    // gridDim.x · tokens counters.
    const float* weights = nullptr;
    float* out = nullptr;
    int64_t out_stride = 0;
    int32_t slots = 0;
    // swiglu_slots: `half` rows per slot (the experts' rows); token t's slot s of h at
    // h + t · out_stride + s · half (null: not kept); its record column t · slots + s in records;
    // tokens · slots · half / 32 counters; oai: swiglu_oai with alpha and limit.
    int32_t oai = 0;
    float alpha = 0.0f, limit = 0.0f;
    // norm_tail: columns of `length` (the launch's rows); column c of the launch adds
    // addend + c · addend_stride, writes sum, norm and product (dense; norm and product null: not
    // kept) at c · length, w the norm's weight (null: none); the records of the result (null:
    // none) are column c0 + c of `cols` in chunks of chunk_cols (ops/records.cuh); one counter.
    int32_t length = 0;
    const float* addend = nullptr;
    int64_t addend_stride = 0;
    float* sum = nullptr;
    float* norm = nullptr;
    float* product = nullptr;
    const float* weight = nullptr;
    float eps = 0.0f;
    int64_t c0 = 0, cols = 0, chunk_cols = 8;
};

// The longest column norm_tail finishes: ops::add_rms_norm_mul's one-block kernel's.
constexpr int64_t mmvq_norm_tail_max_length = 8192;

namespace detail {

// Column c of the norm step (norm_tail; y_column: its product's column, complete), by every
// thread of the CTA, summing as rms_norm_wide_kernel does: its 1024 threads are 32 virtual warps,
// virtual thread t summing s_i² for i = t, t + 1024, ... in order, each virtual warp's butterfly,
// then the warps' sums in order. shared: 33 doubles of the CTA's shared memory, free by now.
__device__ __forceinline__ void norm_column(const mmvq_epilogue& e, const float* y_column, int64_t c, int warp, int lane,
                                            int warps, double* shared) {
    const int n = e.length;
    const float* addend = e.addend + c * e.addend_stride;
    for (int vw = warp; vw < 32; vw += warps) {
        double sum = 0.0;
        for (int i = 32 * vw + lane; i < n; i += 1024) {
            const float v = __fadd_rn(addend[i], __ldcg(y_column + i));
            sum += double(v) * double(v);
        }
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) sum = sum + __shfl_xor_sync(0xffffffffu, sum, offset);
        if (lane == 0) shared[vw] = sum;
    }
    __syncthreads();
    if (warp == 0 && lane == 0) {
        double total = shared[0];
        for (int w = 1; w < 32; ++w) total = total + shared[w];
        shared[32] = total;
    }
    __syncthreads();
    const float mean = float(shared[32] / double(n));
    const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, e.eps)));
    for (int b = warp; b < n / 32; b += warps) {
        const int i = 32 * b + lane;
        const float v = __fadd_rn(addend[i], __ldcg(y_column + i));
        e.sum[c * n + i] = v;
        const float h = __fmul_rn(v, scale);
        if (e.norm) e.norm[c * n + i] = h;
        float result = h;
        if (e.weight) {
            result = __fmul_rn(h, e.weight[i]);
            if (e.product) e.product[c * n + i] = result;
        }
        if (e.records) ops::detail::write_record(e.records, n, e.cols, e.c0 + c, b, result, lane, e.chunk_cols);
    }
    __syncthreads();  // shared is read before a next column writes it
}

// After the CTA has stored its rows (rows row0 .. row0 + 15 of the launch, every column), by
// every thread of the CTA: the last CTA of the block's group of four finishes the block.
template <int NCols>
__device__ __forceinline__ void finish_swiglu(const mmvq_epilogue& e, int row0, int warp, int lane, int warps) {
    __syncthreads();  // every row of the CTA is stored
    const int group = ((e.row_offset + row0) % e.half) / 32;
    bool arrived_last = false;
    if (warp == 0 && lane == 0) {
        __threadfence();  // the CTA's rows are visible before its arrival is
        arrived_last = atomicAdd(&e.counters[group], 1) == 3;
    }
    // The CTA-wide answer without a shared variable: static shared memory of mmvq's CTAs is
    // budgeted to the byte (a few more bytes per CTA can cost a CTA per SM).
    if (!__syncthreads_or(arrived_last)) return;
    __threadfence();  // the other three CTAs' rows are read after their arrivals
    const int i = 32 * group + lane;
    for (int c = warp; c < NCols; c += warps) {
        const float* column = e.stack + c * e.stack_stride;
        const float v = __fmul_rn(ops::detail::silu(__ldcg(column + i)), __ldcg(column + e.half + i));
        if (e.h) e.h[int64_t(c) * e.half + i] = v;
        if (e.records) ops::detail::write_chunk_record(e.records, NCols, c, group, v, lane);
    }
    if (warp == 0 && lane == 0) e.counters[group] = 0;  // for the next launch, which waits for this grid
}

// After the CTA has stored its rows row0 .. row0 + 15 of slot blockIdx.y of token blockIdx.z (an
// mmvq_id launch, one column): the last CTA of the token's row tile adds the slots' rows.
// y_token: the token's slot 0; slot s at y_token + s · slot_stride.
// With e.length > 0 the norm step after the weighted_sum is chained (norm_tail's fields, the
// columns being the tokens): the last row tile of the token to finish (a second counter per
// token, past the row tiles') finishes the token's norm.
__device__ __forceinline__ void finish_weighted_sum(const mmvq_epilogue& e, const float* y_token, int64_t slot_stride,
                                                    int rows, int row0, int warp, int lane, int warps, double* shared) {
    __syncthreads();  // every row of the CTA is stored
    int32_t* counter = e.counters + int64_t(blockIdx.z) * gridDim.x + blockIdx.x;
    bool arrived_last = false;
    if (warp == 0 && lane == 0) {
        __threadfence();  // the CTA's rows are visible before its arrival is
        arrived_last = atomicAdd(counter, 1) == e.slots - 1;
    }
    if (!__syncthreads_or(arrived_last)) return;
    __threadfence();  // the other slots' rows are read after their arrivals
    const float* w = e.weights + int64_t(blockIdx.z) * e.slots;
    const int row = row0 + lane;
    if (warp == 0 && lane < 16 && row < rows) {
        float acc = __fmul_rn(w[0], __ldcg(y_token + row));
        for (int s = 1; s < e.slots; ++s) acc = __fadd_rn(acc, __fmul_rn(w[s], __ldcg(y_token + s * slot_stride + row)));
        e.out[int64_t(blockIdx.z) * e.out_stride + row] = acc;
    }
    if (warp == 0 && lane == 0) *counter = 0;  // for the next launch, which waits for this grid
    if (e.length == 0) return;
    __syncthreads();  // the tile's sums are stored
    int32_t* token_counter = e.counters + int64_t(gridDim.z) * gridDim.x + blockIdx.z;
    bool tile_last = false;
    if (warp == 0 && lane == 0) {
        __threadfence();  // the tile's sums are visible before its arrival is
        tile_last = atomicAdd(token_counter, 1) == int(gridDim.x) - 1;
    }
    if (!__syncthreads_or(tile_last)) return;
    __threadfence();  // the other tiles' sums are read after their arrivals
    norm_column(e, e.out + int64_t(blockIdx.z) * e.out_stride, blockIdx.z, warp, lane, warps, shared);
    if (warp == 0 && lane == 0) *token_counter = 0;
}

// After the CTA has stored its rows row0 .. row0 + 15 of column blockIdx.y of token blockIdx.z (an
// mmvq_id launch of halves 2: columns 0 .. slots − 1 gate's slots, then up's): the last of the
// four CTAs of the slot's block g finishes it. y_token: the token's column 0; column j at
// y_token + j · column_stride.
__device__ __forceinline__ void finish_swiglu_slots(const mmvq_epilogue& e, const float* y_token, int64_t column_stride,
                                                    int row0, int warp, int lane) {
    __syncthreads();  // every row of the CTA is stored
    const int slot = int(blockIdx.y) % e.slots, group = row0 / 32;
    const int64_t column = int64_t(blockIdx.z) * e.slots + slot;  // of h and of its records
    int32_t* counter = e.counters + column * (e.half / 32) + group;
    bool arrived_last = false;
    if (warp == 0 && lane == 0) {
        __threadfence();  // the CTA's rows are visible before its arrival is
        arrived_last = atomicAdd(counter, 1) == 3;
    }
    if (!__syncthreads_or(arrived_last)) return;
    __threadfence();  // the other three CTAs' rows are read after their arrivals
    if (warp != 0) return;
    const int i = 32 * group + lane;
    const float gv = __ldcg(y_token + slot * column_stride + i), uv = __ldcg(y_token + (e.slots + slot) * column_stride + i);
    const float v = e.oai ? ops::detail::swiglu_oai_value(gv, uv, e.alpha, e.limit) : __fmul_rn(ops::detail::silu(gv), uv);
    if (e.h) e.h[int64_t(blockIdx.z) * e.out_stride + int64_t(slot) * e.half + i] = v;
    if (e.records) ops::detail::write_record(e.records, e.half, column + 1, column, group, v, lane, 1);
    if (lane == 0) *counter = 0;  // for the next launch, which waits for this grid
}

// After the CTA has stored its rows of every column (a launch of one batch): the launch's last CTA
// finishes the norm step of every column.
template <int NCols>
__device__ __forceinline__ void finish_norm(const mmvq_epilogue& e, const float* y, int64_t y_col_stride, int warp, int lane,
                                            int warps, double* shared) {
    __syncthreads();  // every row of the CTA is stored
    bool arrived_last = false;
    if (warp == 0 && lane == 0) {
        __threadfence();  // the CTA's rows are visible before its arrival is
        arrived_last = atomicAdd(e.counters, 1) == int(gridDim.x * gridDim.y * gridDim.z) - 1;
    }
    if (!__syncthreads_or(arrived_last)) return;
    __threadfence();  // the other CTAs' rows are read after their arrivals
    for (int c = 0; c < NCols; ++c) norm_column(e, y + c * y_col_stride, c, warp, lane, warps, shared);
    if (warp == 0 && lane == 0) *e.counters = 0;  // for the next launch, which waits for this grid
}

// The host's checks of an epilogue against its launch: W's rows, Y and the column count.
inline void check_mmvq_epilogue(const mmvq_epilogue& e, int64_t rows, const output_columns& y, int64_t ncols,
                                int64_t batches, const char* op, const std::string& shapes) {
    if (e.kind == mmvq_finish::store) return;
    auto fail = [&](const std::string& why) {
        throw error(errc::invalid_argument, std::string(op) + ": " + shapes + ": epilogue: " + why);
    };
    if (batches != 1) fail("only launches of one batch finish a step");
    if (e.row_offset < 0) fail("negative row offset");
    if (e.kind == mmvq_finish::norm_tail) {
        if (e.length != rows || rows % 32 != 0 || rows > mmvq_norm_tail_max_length)
            fail("norm_tail needs columns of whole 32-value blocks, at most " + std::to_string(mmvq_norm_tail_max_length) +
                 ", as long as W's rows");
        if (!e.counters || !e.addend || !e.sum) fail("norm_tail without its counter, addend or sum");
        if (e.records && (!ops::valid_record_chunk_cols(e.chunk_cols) || e.c0 < 0 || e.c0 + ncols > e.cols))
            fail("norm_tail's record columns do not hold the launch's");
        return;
    }
    if (e.kind != mmvq_finish::swiglu_round) fail("only mmvq_id launches add weighted slots or finish slots");
    if (e.half <= 0 || e.half % 32 != 0 || e.row_offset % 32 != 0 || rows % 32 != 0 || e.row_offset + rows > 2 * int64_t(e.half))
        fail("swiglu_round needs gate and up of whole 32-row blocks");
    if (!e.stack || !e.counters) fail("swiglu_round without its stack or counters");
    if (y.data != e.stack + e.row_offset || (ncols > 1 && y.col_stride_or_dense() != e.stack_stride))
        fail("swiglu_round's Y must be the launch's rows of the stack");
}

}  // namespace detail

}  // namespace llmrt::cuda
