// What an mmvq launch does with its sums besides storing Y: the step after a stacked matvec
// step, finished where the sums are (graph/lower.hpp: a matvec step that carries the next step),
// so that the step costs no launch of its own. The launch's Y is part of a stack of rows (the
// products of the matvec step side by side); row r of this launch is row row_offset + r of it.
//
//   store         Y only
//   rope_cache    the stack is q, k, v (q_rows, kv_rows, kv_rows rows): q' = rope(q) goes to q_out,
//                 rope(k) to column pos of the K cache, v to column pos of the V cache. Normal order
//                 only: the pair (2i, 2i+1) of a head is two neighbouring rows, which one CTA holds
//   swiglu_round  the stack is gate, up (half rows each, half a multiple of 32): the last of the
//                 four CTAs that compute gate and up rows 32g .. 32g + 31 (one counter per g,
//                 counted with an atomic add and left at zero) reads them back from the stack and
//                 writes h = silu(gate) ⊙ up and h's Q8_1 record for block g
//
// Every value has the bits that the separate kernels give it (ops::rope_cache, ops::swiglu_round).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/ops/elementwise.cuh"
#include "llmrt/cuda/ops/records.cuh"
#include "llmrt/cuda/ops/rope.cuh"

namespace llmrt::cuda {

enum class mmvq_finish : int32_t { store, rope_cache, swiglu_round };

struct mmvq_epilogue {
    mmvq_finish kind = mmvq_finish::store;
    int32_t row_offset = 0;
    // rope_cache: column c's position at pos[c]; q' at q_out + c · q_rows; the caches hold n_ctx
    // columns of kv_rows values, f16 (kv_half) or f32.
    int32_t q_rows = 0, kv_rows = 0, head_dim = 0, n_rot = 0;
    float theta_scale = 0.0f;  // ops::detail::rope_theta_scale
    float* q_out = nullptr;
    void* k_cache = nullptr;
    void* v_cache = nullptr;
    int32_t kv_half = 0;
    int64_t n_ctx = 0;
    const int32_t* pos = nullptr;
    // swiglu_round: column c of the stack at stack + c · stack_stride (this launch's Y is part of
    // it); h at h + c · half (null: not kept); the launch's columns' records at records (null:
    // none), laid out as quantize_activations lays out this many columns; half / 32 counters.
    int32_t half = 0;
    const float* stack = nullptr;
    int64_t stack_stride = 0;
    float* h = nullptr;
    uint8_t* records = nullptr;
    int32_t* counters = nullptr;
};

namespace detail {

// Rows (row, row + 1) of the launch (row even) of column c, whose sums are s0 and s1.
__device__ __forceinline__ void finish_rope_pair(const mmvq_epilogue& e, int c, int row, float s0, float s1) {
    const int r = e.row_offset + row;
    const int32_t pos = e.pos[c];
    const float nan = __int_as_float(0x7fc00000);
    // Slot i of its head: rotated below n_rot / 2, else passed through (a negative position,
    // which the executor refuses before a run, gives NaN as ops::rope does).
    auto rotated = [&](int in_region) {
        const int i = (in_region % e.head_dim) / 2;
        if (pos < 0) return make_float2(nan, nan);
        if (2 * i >= e.n_rot) return make_float2(s0, s1);
        return ops::detail::rope_rotate(s0, s1, pos, i, e.theta_scale);
    };
    if (r < e.q_rows) {
        const float2 y = rotated(r);
        float* q = e.q_out + int64_t(c) * e.q_rows + r;
        q[0] = y.x;
        q[1] = y.y;
        return;
    }
    if (pos < 0 || pos >= e.n_ctx) return;  // the executor refuses such positions before a run
    const int64_t column = int64_t(pos) * e.kv_rows;
    const bool is_k = r < e.q_rows + e.kv_rows;
    const int at = is_k ? r - e.q_rows : r - e.q_rows - e.kv_rows;
    const float2 y = is_k ? rotated(at) : make_float2(s0, s1);
    void* cache = is_k ? e.k_cache : e.v_cache;
    if (e.kv_half) {
        ops::detail::store_cache<uint16_t>(cache, column + at, y.x);
        ops::detail::store_cache<uint16_t>(cache, column + at + 1, y.y);
    } else {
        ops::detail::store_cache<float>(cache, column + at, y.x);
        ops::detail::store_cache<float>(cache, column + at + 1, y.y);
    }
}

// After the CTA has stored its rows (rows row0 .. row0 + 15 of the launch, every column), by
// every thread of the CTA: the last CTA of the block's group of four finishes the block.
template <int NCols>
__device__ __forceinline__ void finish_swiglu(const mmvq_epilogue& e, int row0, int warp, int lane, int warps) {
    __shared__ int last;
    __syncthreads();  // every row of the CTA is stored
    const int group = ((e.row_offset + row0) % e.half) / 32;
    if (warp == 0 && lane == 0) {
        __threadfence();  // the CTA's rows are visible before its arrival is
        last = atomicAdd(&e.counters[group], 1) == 3;
    }
    __syncthreads();
    if (!last) return;
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

// The host's checks of an epilogue against its launch: W's rows, Y and the column count.
inline void check_mmvq_epilogue(const mmvq_epilogue& e, int64_t rows, const output_columns& y, int64_t ncols,
                                int64_t batches, const char* op, const std::string& shapes) {
    if (e.kind == mmvq_finish::store) return;
    auto fail = [&](const std::string& why) {
        throw error(errc::invalid_argument, std::string(op) + ": " + shapes + ": epilogue: " + why);
    };
    if (batches != 1) fail("only launches of one batch finish a step");
    if (e.row_offset < 0) fail("negative row offset");
    if (e.kind == mmvq_finish::rope_cache) {
        if (e.head_dim < 2 || e.head_dim % 2 != 0 || e.n_rot < 0 || e.n_rot > e.head_dim)
            fail("rope_cache needs an even head_dim and n_rot <= head_dim");
        if (rows % 2 != 0 || e.row_offset % 2 != 0 || e.q_rows % e.head_dim != 0 || e.kv_rows % e.head_dim != 0)
            fail("rope_cache needs whole heads and pairs of rows");
        if (e.row_offset + rows > int64_t(e.q_rows) + 2 * int64_t(e.kv_rows)) fail("rows past q, k and v");
        if (!e.q_out || !e.k_cache || !e.v_cache || !e.pos || e.n_ctx < 1) fail("rope_cache without its outputs");
        return;
    }
    if (e.kind != mmvq_finish::swiglu_round) fail("unknown kind");
    if (e.half <= 0 || e.half % 32 != 0 || e.row_offset % 32 != 0 || rows % 32 != 0 || e.row_offset + rows > 2 * int64_t(e.half))
        fail("swiglu_round needs gate and up of whole 32-row blocks");
    if (!e.stack || !e.counters) fail("swiglu_round without its stack or counters");
    if (y.data != e.stack + e.row_offset || (ncols > 1 && y.col_stride_or_dense() != e.stack_stride))
        fail("swiglu_round's Y must be the launch's rows of the stack");
}

}  // namespace detail

}  // namespace llmrt::cuda
