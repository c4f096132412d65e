// Column-wise normalisations on the device, one block per column, as cpu/ops.hpp computes them:
//
//   rms_norm  y = x · 1/sqrt(Σx²/n + eps)             (Σ in double, then float as on the CPU)
//   softmax   y = exp(x − max) · (1 / Σ exp(x − max))  (Σ in double)
//
// The sums run in a fixed order (per thread, then block_reduce), so a column's bits do not
// depend on the run or on the other columns.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "llmrt/cuda/ops/common.cuh"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int norm_threads = 256;

template <int Threads>
__global__ void __launch_bounds__(Threads) rms_norm_kernel(const float* x, float* y, int64_t n, float eps) {
    __shared__ double partial[Threads / 32 + 1];
    x += int64_t(blockIdx.x) * n;
    y += int64_t(blockIdx.x) * n;
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += Threads) sum += double(x[i]) * double(x[i]);
    sum = block_reduce<Threads>(sum, sum_op{}, partial);
    const float mean = float(sum / double(n));
    const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
    for (int64_t i = threadIdx.x; i < n; i += Threads) y[i] = __fmul_rn(x[i], scale);
}

template <int Threads>
__global__ void __launch_bounds__(Threads) softmax_kernel(const float* x, float* y, int64_t n) {
    __shared__ float partial_max[Threads / 32 + 1];
    __shared__ double partial_sum[Threads / 32 + 1];
    x += int64_t(blockIdx.x) * n;
    y += int64_t(blockIdx.x) * n;
    float max = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += Threads) max = fmaxf(max, x[i]);
    max = block_reduce<Threads>(max, max_op{}, partial_max);
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += Threads) {
        const float e = expf(__fsub_rn(x[i], max));
        y[i] = e;
        sum += double(e);
    }
    sum = block_reduce<Threads>(sum, sum_op{}, partial_sum);
    const float inv = float(1.0 / sum);
    // Each thread rescales the elements it wrote itself: no other thread's writes are read.
    for (int64_t i = threadIdx.x; i < n; i += Threads) y[i] = __fmul_rn(y[i], inv);
}

}  // namespace detail

// y = rms_norm(x) per column: cols columns of n floats.
inline void rms_norm(const float* x, float* y, int64_t n, int64_t cols, float eps, cudaStream_t stream) {
    if (n == 0 || cols == 0) return;
    check(cols <= 0x7fffffff, errc::invalid_argument, "cuda::ops::rms_norm: too many columns");
    detail::rms_norm_kernel<detail::norm_threads><<<unsigned(cols), detail::norm_threads, 0, stream>>>(x, y, n, eps);
    detail::check_launch("cuda::ops::rms_norm");
}

// y = softmax(x) per column; x and y may be the same memory.
inline void softmax(const float* x, float* y, int64_t n, int64_t cols, cudaStream_t stream) {
    if (n == 0 || cols == 0) return;
    check(cols <= 0x7fffffff, errc::invalid_argument, "cuda::ops::softmax: too many columns");
    detail::softmax_kernel<detail::norm_threads><<<unsigned(cols), detail::norm_threads, 0, stream>>>(x, y, n);
    detail::check_launch("cuda::ops::softmax");
}

}  // namespace llmrt::cuda::ops
