// Writing your own CUDA kernel with llmrt's public device codecs.
//
// Two small kernels over one Q4_K row (any weight type works the same way):
//   dequantize_and_scale: y[i] = alpha · w[i], one thread per 256-value block, using
//                         llmrt::dequantize_block (the same code the CPU reference runs);
//   dot_with_q8_1:        Σ w·x with the activations quantized to Q8_1 on the device by
//                         llmrt::cuda::quantize_q8_1, one thread per block through
//                         llmrt::cuda::dot_q8_1 (the integer __dp4a dot), then a warp sum.
// Both are checked against the CPU. Without a CUDA device the program says so and exits 0.
//
//   llmrt-example-custom-kernel [n]     (n: row length, a multiple of 256; default 4096)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/check.cuh"
#include "llmrt/cuda/codecs.cuh"
#include "llmrt/quant/codec.hpp"
#include "llmrt/testing/generate.hpp"

using block = llmrt::q4_K;

__global__ void dequantize_and_scale(const block* w, float alpha, float* y, int nblocks) {
    const int b = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (b >= nblocks) return;
    float values[block::block_size];
    llmrt::dequantize_block(w[b], values);
    for (int i = 0; i < block::block_size; ++i) y[int64_t(b) * block::block_size + i] = alpha * values[i];
}

// One warp: lane l takes blocks l, l + 32, ...; the lanes' sums meet by shuffles.
__global__ void dot_with_q8_1(const block* w, const llmrt::q8_1* x, float* result, int nblocks) {
    float sum = 0.0f;
    for (int b = int(threadIdx.x); b < nblocks; b += 32)
        sum += llmrt::cuda::dot_q8_1(w[b], x + int64_t(b) * (block::block_size / 32));
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0) *result = sum;
}

int main(int argc, char** argv) {
    const int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
    if (n <= 0 || n % block::block_size != 0) {
        std::fprintf(stderr, "n must be a positive multiple of %d\n", int(block::block_size));
        return 2;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("custom_kernel: no CUDA device, nothing to run\n");
        return 0;
    }
    try {
        // A row of weights and activations, quantized on the host with llmrt's reference codecs.
        const std::vector<float> w = llmrt::testing::generate(llmrt::testing::distribution::gaussian, n, 1);
        const std::vector<float> x = llmrt::testing::generate(llmrt::testing::distribution::heavy_tailed, n, 2);
        const int nblocks = int(n / block::block_size);
        std::vector<block> wq(static_cast<std::size_t>(nblocks));
        llmrt::quantize(block::id, w.data(), wq.data(), n);

        block* d_w = nullptr;
        float *d_x = nullptr, *d_y = nullptr, *d_dot = nullptr;
        llmrt::q8_1* d_xq = nullptr;
        LLMRT_CUDA_CHECK(cudaMalloc(&d_w, wq.size() * sizeof(block)));
        LLMRT_CUDA_CHECK(cudaMalloc(&d_x, std::size_t(n) * sizeof(float)));
        LLMRT_CUDA_CHECK(cudaMalloc(&d_y, std::size_t(n) * sizeof(float)));
        LLMRT_CUDA_CHECK(cudaMalloc(&d_dot, sizeof(float)));
        LLMRT_CUDA_CHECK(cudaMalloc(&d_xq, std::size_t(n / 32) * sizeof(llmrt::q8_1)));
        LLMRT_CUDA_CHECK(cudaMemcpy(d_w, wq.data(), wq.size() * sizeof(block), cudaMemcpyHostToDevice));
        LLMRT_CUDA_CHECK(cudaMemcpy(d_x, x.data(), std::size_t(n) * sizeof(float), cudaMemcpyHostToDevice));

        const float alpha = 0.5f;
        dequantize_and_scale<<<(nblocks + 63) / 64, 64>>>(d_w, alpha, d_y, nblocks);
        LLMRT_CUDA_CHECK(cudaGetLastError());
        llmrt::cuda::quantize_q8_1(d_x, d_xq, n, nullptr);
        dot_with_q8_1<<<1, 32>>>(d_w, d_xq, d_dot, nblocks);
        LLMRT_CUDA_CHECK(cudaGetLastError());

        std::vector<float> y(static_cast<std::size_t>(n));
        float dot = 0.0f;
        LLMRT_CUDA_CHECK(cudaMemcpy(y.data(), d_y, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
        LLMRT_CUDA_CHECK(cudaMemcpy(&dot, d_dot, sizeof(float), cudaMemcpyDeviceToHost));

        // The CPU: the same dequantizer, and the double dot of the dequantized row with the
        // Q8_1-rounded activations.
        std::vector<float> wd(static_cast<std::size_t>(n)), xd(static_cast<std::size_t>(n));
        llmrt::dequantize(block::id, wq.data(), wd.data(), n);
        std::vector<llmrt::q8_1> xq(std::size_t(n / 32));
        llmrt::quantize_row(x.data(), xq.data(), n);
        llmrt::dequantize_row(xq.data(), xd.data(), n);
        int mismatches = 0;
        double expected_dot = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            mismatches += y[std::size_t(i)] != alpha * wd[std::size_t(i)];
            expected_dot += double(wd[std::size_t(i)]) * double(xd[std::size_t(i)]);
        }
        const double rel = std::fabs(double(dot) - expected_dot) / std::fabs(expected_dot);
        std::printf("dequantize_and_scale: %lld values, %d differ from the CPU\n", (long long)n, mismatches);
        std::printf("dot_with_q8_1: %.6f, CPU %.6f, relative difference %.1e\n", double(dot), expected_dot, rel);

        cudaFree(d_w);
        cudaFree(d_x);
        cudaFree(d_y);
        cudaFree(d_dot);
        cudaFree(d_xq);
        return mismatches == 0 && rel < 1e-5 ? 0 : 1;
    } catch (const llmrt::error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
