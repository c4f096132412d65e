// Column-wise normalisations on the device, one block per column, as cpu/ops.hpp computes them:
//
//   rms_norm  y = x · 1/sqrt(Σx²/n + eps)             (Σ in double, then float as on the CPU)
//   softmax   y = exp(x − max) · (1 / Σ exp(x − max))  (Σ in double)
//
// and the fusion a llama layer asks for, one kernel instead of three:
//
//   add_rms_norm_mul  s = a + b,  h = rms_norm(s),  y = h ⊙ w   (each of s, h, y written; the add
//                     and the mul optional), every value the bits the separate ops give.
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

struct norm_args {
    const float* x;      // the input (Add: a)
    const float* b;      // Add: the addend, as many columns as x
    float* sum;          // Add: x + b
    float* norm;         // rms_norm of the input (or of the sum)
    const float* w;      // Mul: one column
    float* product;      // Mul: norm ⊙ w
    int64_t n;
    float eps;
};

// Each thread reads back only the elements it wrote itself, so no barrier is needed between
// the passes besides the reduction's.
template <int Threads, bool Add, bool Mul>
__global__ void __launch_bounds__(Threads) rms_norm_kernel(const norm_args p) {
    enter_kernel();
    __shared__ double partial[Threads / 32 + 1];
    const int64_t base = int64_t(blockIdx.x) * p.n;
    const float* x = Add ? p.sum + base : p.x + base;
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < p.n; i += Threads) {
        float v;
        if constexpr (Add) {
            v = __fadd_rn(p.x[base + i], p.b[base + i]);
            p.sum[base + i] = v;
        } else {
            v = x[i];
        }
        sum += double(v) * double(v);
    }
    sum = block_reduce<Threads>(sum, sum_op{}, partial);
    const float mean = float(sum / double(p.n));
    const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, p.eps)));
    for (int64_t i = threadIdx.x; i < p.n; i += Threads) {
        const float h = __fmul_rn(x[i], scale);
        p.norm[base + i] = h;
        if constexpr (Mul) p.product[base + i] = __fmul_rn(h, p.w[i]);
    }
}

template <int Threads>
__global__ void __launch_bounds__(Threads) softmax_kernel(const float* x, float* y, int64_t n) {
    enter_kernel();
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

// sum = a + b (when b is given), norm = rms_norm(sum or a), product = norm ⊙ w (when w is given;
// w one column of n): cols columns of n floats, one kernel.
inline void add_rms_norm_mul(const float* a, const float* b, float* sum, float* norm, const float* w, float* product,
                             int64_t n, int64_t cols, float eps, cudaStream_t stream, const launch_options& o = {}) {
    const char* op = "cuda::ops::rms_norm";
    if (n == 0 || cols == 0) return;
    check(cols <= 0x7fffffff, errc::invalid_argument, "cuda::ops::rms_norm: too many columns");
    const detail::norm_args p{a, b, sum, norm, w, product, n, eps};
    const dim3 grid(static_cast<unsigned>(cols)), block(detail::norm_threads);
    constexpr int t = detail::norm_threads;
    if (b && w) detail::launch(op, detail::rms_norm_kernel<t, true, true>, grid, block, 0, stream, o, p);
    else if (b) detail::launch(op, detail::rms_norm_kernel<t, true, false>, grid, block, 0, stream, o, p);
    else if (w) detail::launch(op, detail::rms_norm_kernel<t, false, true>, grid, block, 0, stream, o, p);
    else detail::launch(op, detail::rms_norm_kernel<t, false, false>, grid, block, 0, stream, o, p);
}

// y = rms_norm(x) per column: cols columns of n floats.
inline void rms_norm(const float* x, float* y, int64_t n, int64_t cols, float eps, cudaStream_t stream,
                     const launch_options& o = {}) {
    add_rms_norm_mul(x, nullptr, nullptr, y, nullptr, nullptr, n, cols, eps, stream, o);
}

// y = softmax(x) per column; x and y may be the same memory.
inline void softmax(const float* x, float* y, int64_t n, int64_t cols, cudaStream_t stream, const launch_options& o = {}) {
    if (n == 0 || cols == 0) return;
    check(cols <= 0x7fffffff, errc::invalid_argument, "cuda::ops::softmax: too many columns");
    detail::launch("cuda::ops::softmax", detail::softmax_kernel<detail::norm_threads>, dim3(unsigned(cols)),
                   dim3(detail::norm_threads), 0, stream, o, x, y, n);
}

}  // namespace llmrt::cuda::ops
