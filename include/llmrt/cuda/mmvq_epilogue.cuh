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
//   weighted_sum  an mmvq_id launch of one product (the experts' down): the last of the n_used
//                 CTAs that compute rows 16t .. 16t + 15 of a token's slots (one counter per
//                 token and row tile, left at zero) reads them back and writes
//                 out = ((w₀y₀ + w₁y₁) + ...) for those rows, the bits ops::weighted_sum gives
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

enum class mmvq_finish : int32_t { store, swiglu_round, weighted_sum };

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
};

namespace detail {

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
__device__ __forceinline__ void finish_weighted_sum(const mmvq_epilogue& e, const float* y_token, int64_t slot_stride,
                                                    int rows, int row0, int warp, int lane) {
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
    if (e.kind != mmvq_finish::swiglu_round) fail("only mmvq_id launches add weighted slots");
    if (e.half <= 0 || e.half % 32 != 0 || e.row_offset % 32 != 0 || rows % 32 != 0 || e.row_offset + rows > 2 * int64_t(e.half))
        fail("swiglu_round needs gate and up of whole 32-row blocks");
    if (!e.stack || !e.counters) fail("swiglu_round without its stack or counters");
    if (y.data != e.stack + e.row_offset || (ncols > 1 && y.col_stride_or_dense() != e.stack_stride))
        fail("swiglu_round's Y must be the launch's rows of the stack");
}

}  // namespace detail

}  // namespace llmrt::cuda
