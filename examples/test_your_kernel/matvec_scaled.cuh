// matvec_scaled for CUDA: y[r] = scales[r] · Σ_i W[r][i]·x[i], W a matrix of quant blocks (any
// llmrt weight type), x given as Q8_1 blocks (k/32 of them). One warp per row: lane l takes
// weight blocks l, l + 32, ... and dots each with its activations through llmrt::cuda::dot_q8_1
// (llmrt/cuda/codecs.cuh, the integer __dp4a dot of llmrt's own mat-vec); a warp sum follows.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include <llmrt/core/error.hpp>
#include <llmrt/cuda/codecs.cuh>
#include <llmrt/quant/codec.hpp>
#include <llmrt/quant/q8_1.hpp>
#include <llmrt/quant/traits.hpp>

namespace my_kernels {

template <class Block>
__global__ void matvec_scaled_kernel(const Block* w, const llmrt::q8_1* x, const float* scales, float* y,
                                     int64_t rows, int64_t blocks_per_row) {
    const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = int(threadIdx.x % 32);
    if (row >= rows) return;  // the whole warp leaves together
    constexpr int x_blocks_per_block = int(Block::block_size / llmrt::q8_1::block_size);
    float sum = 0.0f;
    for (int64_t b = lane; b < blocks_per_row; b += 32)
        sum += llmrt::cuda::dot_q8_1(w[row * blocks_per_row + b], x + b * x_blocks_per_block);
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[row] = scales[row] * sum;
}

// Launches on `stream` (without waiting): w holds rows rows of k / Block::block_size blocks, x
// holds k / 32 Q8_1 blocks (llmrt::quantize(qtype::q8_1, ...)), y receives rows floats. A k that
// is not whole blocks or a failed launch raises llmrt::error.
template <class Block>
void matvec_scaled(const Block* w, const llmrt::q8_1* x, const float* scales, float* y, int64_t rows, int64_t k,
                   cudaStream_t stream = nullptr) {
    static_assert(llmrt::weight_block<Block>, "matvec_scaled<Block>: Block must be an llmrt weight block type");
    (void)llmrt::row_size(Block::id, k);  // raises unless k is a whole number of blocks
    llmrt::check(rows >= 0, llmrt::errc::shape_mismatch,
                 [&] { return "matvec_scaled: " + std::to_string(rows) + " rows"; });
    if (rows == 0) return;
    constexpr int warps = 4;
    matvec_scaled_kernel<Block><<<unsigned((rows + warps - 1) / warps), 32 * warps, 0, stream>>>(
        w, x, scales, y, rows, k / Block::block_size);
    const cudaError_t status = cudaGetLastError();
    llmrt::check(status == cudaSuccess, llmrt::errc::device_error, [&] {
        return std::string("matvec_scaled<") + Block::name + ">: launch failed: " + cudaGetErrorString(status);
    });
}

}  // namespace my_kernels
