// Where a fused op writes the Q8_1 rounding of its result for the mul_mats after it: mmvq's
// activation records (activations.cuh), in the chunks mul_mat_quantized reads. For `cols`
// columns of k values, chunk i holds columns 8i .. 8i + w − 1 (w = min(8, cols − 8i)) at byte
// i · activation_scratch_bytes(k, 8), laid out as records of w columns; so a producer that knows
// the batch writes exactly what quantize_activations would have written for each chunk. For
// mul_mat_id (an experts step) the chunks are one column wide.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"

namespace llmrt::cuda::ops {

// Bytes of the records of cols columns of k values (k a multiple of 32), in chunks of 8 columns.
inline std::size_t rounded_records_bytes(int64_t k, int64_t cols) {
    const int64_t chunks = (cols + 7) / 8;
    return activation_scratch_bytes(k, 8, chunks);
}

// The chunk widths write_record takes.
constexpr bool valid_record_chunk_cols(int64_t chunk_cols) { return chunk_cols == 1 || chunk_cols == 8; }

// The host's check of them, for an op that writes records (records: whether it does).
inline void check_record_chunk_cols(const char* op, bool records, int64_t chunk_cols) {
    check(!records || valid_record_chunk_cols(chunk_cols), errc::invalid_argument, [&] {
        return std::string(op) + ": records in chunks of 1 or 8 columns, got " + std::to_string(chunk_cols);
    });
}

namespace detail {

// The same inside one chunk of `width` columns at `chunk`: column c (< width), block b.
__device__ __forceinline__ void write_chunk_record(uint8_t* chunk, int64_t width, int64_t c, int64_t b, float x, int lane) {
    llmrt::cuda::detail::store_q8_1_record(chunk + b * activation_record_bytes(width), width, c, lane,
                                           llmrt::cuda::detail::quantize_q8_1_lane(x, lane));
}

// One warp holds the 32 values of block b (elements 32b .. 32b + 31) of column c, one per lane,
// and writes their Q8_1 record: bit for bit what quantize_activations writes for them.
// chunk_cols: 8 (mul_mat's chunks), or 1: each column a batch of one column (what mmvq_id
// quantizes for mul_mat_id; such records take no more bytes than the chunks of 8 do). The hosts
// check valid_record_chunk_cols. Only those two, so the chunk is a shift: a 64-bit division by
// a runtime value is a subroutine of tens of instructions, and a one-block norm of 4096 values
// paid several per thread (2.5 us of each llama 8B norm step on an H100).
__device__ __forceinline__ void write_record(uint8_t* records, int64_t k, int64_t cols, int64_t c, int64_t b, float x,
                                             int lane, int64_t chunk_cols = 8) {
    const bool single = chunk_cols == 1;
    const int64_t chunk = single ? c : c >> 3;
    const int64_t width = single ? 1 : (cols - (chunk << 3) < 8 ? cols - (chunk << 3) : 8);
    write_chunk_record(records + chunk * (k >> 5) * activation_record_bytes(single ? 1 : 8), width, single ? 0 : c & 7, b,
                       x, lane);
}

}  // namespace detail

}  // namespace llmrt::cuda::ops
