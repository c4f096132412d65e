// dequantize_scaled for CUDA: y[r·k + i] = scales[r] · W[r][i], W a matrix of quant blocks (any
// llmrt weight type: q4_K, q8_0, ...). One thread decodes one block with llmrt::dequantize_block,
// the reference dequantizer itself (llmrt/quant/<type>.hpp, host and device), so the result is
// the CPU's bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include <llmrt/core/error.hpp>
#include <llmrt/quant/codec.hpp>
#include <llmrt/quant/traits.hpp>

namespace my_kernels {

template <class Block>
__global__ void dequantize_scaled_kernel(const Block* w, const float* scales, float* y, int64_t rows,
                                         int64_t blocks_per_row) {
    const int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // block b of the whole matrix
    if (b >= rows * blocks_per_row) return;
    float values[Block::block_size];
    llmrt::dequantize_block(w[b], values);
    const float scale = scales[b / blocks_per_row];
    for (int i = 0; i < int(Block::block_size); ++i) y[b * Block::block_size + i] = __fmul_rn(scale, values[i]);
}

// Launches on `stream` (without waiting): w holds rows rows of k / Block::block_size blocks, y
// receives rows·k floats. A k that is not whole blocks or a failed launch raises llmrt::error.
template <class Block>
void dequantize_scaled(const Block* w, const float* scales, float* y, int64_t rows, int64_t k,
                       cudaStream_t stream = nullptr) {
    static_assert(llmrt::weight_block<Block>, "dequantize_scaled<Block>: Block must be an llmrt weight block type");
    (void)llmrt::row_size(Block::id, k);  // raises unless k is a whole number of blocks
    llmrt::check(rows >= 0, llmrt::errc::shape_mismatch,
                 [&] { return "dequantize_scaled: " + std::to_string(rows) + " rows"; });
    const int64_t blocks = rows * (k / Block::block_size);
    if (blocks == 0) return;
    constexpr int threads = 128;
    dequantize_scaled_kernel<Block>
        <<<unsigned((blocks + threads - 1) / threads), threads, 0, stream>>>(w, scales, y, rows, k / Block::block_size);
    const cudaError_t status = cudaGetLastError();
    llmrt::check(status == cudaSuccess, llmrt::errc::device_error, [&] {
        return std::string("dequantize_scaled<") + Block::name + ">: launch failed: " + cudaGetErrorString(status);
    });
}

}  // namespace my_kernels
