// Column-wise normalisations on the device, one block per column, as cpu/ops.hpp computes them:
//
//   rms_norm  y = x · 1/sqrt(Σx²/n + eps)             (Σ in double, then float as on the CPU)
//   softmax   y = exp(x − max) · (1 / Σ exp(x − max))  (Σ in double)
//   top_probability  y[c] = softmax's value at column c's largest element: float(1 / Σ)
//
// and the fusion a llama layer asks for, one kernel instead of three:
//
//   add_rms_norm_mul  s = a + b,  h = rms_norm(s),  y = h ⊙ w   (s written; h and y where kept;
//                     the add and the mul optional), every value the bits the separate ops give,
//                     and optionally the Q8_1 records of the result for the mul_mats that read it.
//
// The sums run in a fixed order (per thread, then block_reduce), so a column's bits do not
// depend on the run or on the other columns.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/cuda/ops/records.cuh"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int norm_threads = 256;

struct norm_args {
    const float* x;      // the input (Add: a)
    const float* b;      // Add: the addend, as many columns as x
    float* sum;          // Add: x + b
    float* norm;         // rms_norm of the input (or of the sum); null: not kept
    const float* w;      // Mul: one column
    float* product;      // Mul: norm ⊙ w; null: not kept
    uint8_t* records;    // the Q8_1 records of the result (the product, or the norm); null: none
    int64_t n;
    int64_t cols;        // the batch, for the records' chunk layout
    float eps;
    int64_t chunk_cols;  // the records' chunks: 8 columns, or 1 (write_record)
    // Without Add: group g (blockIdx.x) of x at x + (g / groups_per_col) · x_col_stride +
    // (g % groups_per_col) · n (a grouped norm of a stacked product); with Add x is dense.
    int64_t x_col_stride, groups_per_col;
};

// (32-bit: the grid and groups_per_col fit, and a 64-bit division is a long subroutine.)
__device__ __forceinline__ int64_t norm_input_base(const norm_args& p) {
    const unsigned g = blockIdx.x, groups = unsigned(p.groups_per_col);
    return int64_t(g / groups) * p.x_col_stride + int64_t(g % groups) * p.n;
}

// Columns longer than the wide kernel takes. Each thread reads back only the elements it wrote
// itself, so no barrier is needed between the passes besides the reduction's (whose barriers also
// publish the sums for the records).
template <int Threads, bool Add, bool Mul>
__global__ void __launch_bounds__(Threads) rms_norm_kernel(const norm_args p) {
    enter_kernel();
    __shared__ double partial[Threads / 32 + 1];
    const int64_t base = int64_t(blockIdx.x) * p.n;
    const float* x = Add ? p.sum + base : p.x + norm_input_base(p);
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
    if (p.norm || p.product) {
        for (int64_t i = threadIdx.x; i < p.n; i += Threads) {
            const float h = __fmul_rn(x[i], scale);
            if (p.norm) p.norm[base + i] = h;
            if constexpr (Mul)
                if (p.product) p.product[base + i] = __fmul_rn(h, p.w[i]);
        }
    }
    if (!p.records) return;
    // A warp per block of 32 values: the result again (the same bits), rounded for the mul_mats.
    const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
    for (int64_t b = warp; b < p.n / 32; b += Threads / 32) {
        const int64_t i = 32 * b + lane;
        float v = __fmul_rn(x[i], scale);
        if constexpr (Mul) v = __fmul_rn(v, p.w[i]);
        write_record(p.records, p.n, p.cols, blockIdx.x, b, v, lane, p.chunk_cols);
    }
}

// The same for columns of up to 8192 values, held in registers: 1024 threads, PerThread values
// each (thread t holds elements t + 1024j), so every value is loaded once and the latency of one
// round of loads, one reduction and one round of stores is all a column costs. Warp w's lanes
// hold elements 32w + 1024j + lane: block w + 32j of the Q8_1 records, rounded from registers.
constexpr int norm_wide_threads = 1024;

// With PrefetchW, w is read before the kernel waits for the one before it (a weight, which no
// kernel writes): one round trip fewer after the wait.
template <bool Add, bool Mul, int PerThread, bool PrefetchW>
__global__ void __launch_bounds__(norm_wide_threads) rms_norm_wide_kernel(const norm_args p) {
    __shared__ double partial[norm_wide_threads / 32 + 1];
    const int64_t base = int64_t(blockIdx.x) * p.n;
    const int t = int(threadIdx.x);
    float wv[PerThread];
    if constexpr (Mul && PrefetchW) {
#pragma unroll
        for (int j = 0; j < PerThread; ++j) {
            const int64_t i = t + int64_t(j) * norm_wide_threads;
            wv[j] = i < p.n ? p.w[i] : 0.0f;
        }
    }
    enter_kernel();
    if constexpr (Mul && !PrefetchW) {
#pragma unroll
        for (int j = 0; j < PerThread; ++j) {
            const int64_t i = t + int64_t(j) * norm_wide_threads;
            wv[j] = i < p.n ? p.w[i] : 0.0f;
        }
    }
    float v[PerThread];
    const int64_t in = Add ? base : norm_input_base(p);
#pragma unroll
    for (int j = 0; j < PerThread; ++j) {
        const int64_t i = t + int64_t(j) * norm_wide_threads;
        v[j] = 0.0f;
        if (i < p.n) {
            if constexpr (Add)
                v[j] = __fadd_rn(p.x[base + i], p.b[base + i]);
            else
                v[j] = p.x[in + i];
        }
    }
    double sum = 0.0;
#pragma unroll
    for (int j = 0; j < PerThread; ++j) {
        const int64_t i = t + int64_t(j) * norm_wide_threads;
        if (i < p.n) {
            if constexpr (Add) p.sum[base + i] = v[j];
            sum += double(v[j]) * double(v[j]);
        }
    }
    sum = block_reduce<norm_wide_threads>(sum, sum_op{}, partial);
    const float mean = float(sum / double(p.n));
    const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, p.eps)));
    const int warp = t >> 5, lane = t & 31;
#pragma unroll
    for (int j = 0; j < PerThread; ++j) {
        const int64_t i = t + int64_t(j) * norm_wide_threads;
        const float h = __fmul_rn(v[j], scale);
        float y = h;
        if (i < p.n) {
            if (p.norm) p.norm[base + i] = h;
            if constexpr (Mul) {
                y = __fmul_rn(h, wv[j]);
                if (p.product) p.product[base + i] = y;
            }
        }
        // Records need n a multiple of 32, so a block is wholly inside or wholly past the column.
        if (p.records && int64_t(warp) * 32 + int64_t(j) * norm_wide_threads < p.n)
            write_record(p.records, p.n, p.cols, blockIdx.x, warp + 32 * j, y, lane, p.chunk_cols);
    }
}

// TopOnly: y holds one float per column, softmax's value at the column's largest element
// (exp(0) · inv = inv), and the column's own values are not written.
template <int Threads, bool TopOnly = false>
__global__ void __launch_bounds__(Threads) softmax_kernel(const float* x, float* y, int64_t n) {
    enter_kernel();
    __shared__ float partial_max[Threads / 32 + 1];
    __shared__ double partial_sum[Threads / 32 + 1];
    x += int64_t(blockIdx.x) * n;
    y += int64_t(blockIdx.x) * (TopOnly ? 1 : n);
    float max = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += Threads) max = fmaxf(max, x[i]);
    max = block_reduce<Threads>(max, max_op{}, partial_max);
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += Threads) {
        const float e = expf(__fsub_rn(x[i], max));
        if constexpr (!TopOnly) y[i] = e;
        sum += double(e);
    }
    sum = block_reduce<Threads>(sum, sum_op{}, partial_sum);
    const float inv = float(1.0 / sum);
    if constexpr (TopOnly) {
        if (threadIdx.x == 0) y[0] = inv;
    } else {
        // Each thread rescales the elements it wrote itself: no other thread's writes are read.
        for (int64_t i = threadIdx.x; i < n; i += Threads) y[i] = __fmul_rn(y[i], inv);
    }
}

}  // namespace detail

// sum = a + b (when b is given), norm = rms_norm(sum or a), product = norm ⊙ w (when w is given;
// w one column of n): cols columns of n floats, one kernel. norm and product may be null (not
// kept); records, when given, receive the Q8_1 rounding of the last result (rounded_records_bytes
// (n, cols) bytes; n a multiple of 32) in chunks of record_chunk_cols columns (ops/records.cuh).
// Without b, the cols columns may be groups of x's columns: groups_per_col of them in each
// column, the columns x_col_stride floats apart (0: dense); the results are dense.
// w_is_constant: no kernel writes w (a weight), so it may be read before the previous kernel ends.
inline void add_rms_norm_mul(const float* a, const float* b, float* sum, float* norm, const float* w, float* product,
                             int64_t n, int64_t cols, float eps, cudaStream_t stream, const launch_options& o = {},
                             void* records = nullptr, bool w_is_constant = false, int64_t record_chunk_cols = 8,
                             int64_t x_col_stride = 0, int64_t groups_per_col = 1) {
    const char* op = "cuda::ops::rms_norm";
    if (n == 0 || cols == 0) return;
    check(cols <= 0x7fffffff, errc::invalid_argument, "cuda::ops::rms_norm: too many columns");
    check(!records || n % 32 == 0, errc::shape_mismatch, [&] {
        return "cuda::ops::rms_norm: Q8_1 records need a length that is a multiple of 32, got " + std::to_string(n);
    });
    check_record_chunk_cols(op, records != nullptr, record_chunk_cols);
    check(groups_per_col >= 1 && groups_per_col <= 0x7fffffff &&
              (x_col_stride == 0 || (!b && x_col_stride >= groups_per_col * n)),
          errc::invalid_argument,
          "cuda::ops::rms_norm: strided input columns are for a norm without add, each stride holding its groups");
    const detail::norm_args p{a,    b,   sum, norm, w, product, static_cast<uint8_t*>(records), n, cols, eps, record_chunk_cols,
                              x_col_stride ? x_col_stride : groups_per_col * n, groups_per_col};
    const dim3 grid(static_cast<unsigned>(cols));
    if (n <= 8 * detail::norm_wide_threads) {
        const int per_thread = n <= 1024 ? 1 : n <= 2048 ? 2 : n <= 4096 ? 4 : 8;
        auto wide = [&](auto add, auto mul) {
            constexpr bool A = decltype(add)::value, M = decltype(mul)::value;
            const dim3 block(detail::norm_wide_threads);
            auto go = [&](auto kernel) { detail::launch(op, kernel, grid, block, 0, stream, o, p); };
            auto with = [&](auto per) {
                constexpr int P = decltype(per)::value;
                if (w_is_constant) go(detail::rms_norm_wide_kernel<A, M, P, true>);
                else go(detail::rms_norm_wide_kernel<A, M, P, false>);
            };
            switch (per_thread) {
                case 1: with(std::integral_constant<int, 1>{}); break;
                case 2: with(std::integral_constant<int, 2>{}); break;
                case 4: with(std::integral_constant<int, 4>{}); break;
                default: with(std::integral_constant<int, 8>{}); break;
            }
        };
        using yes = std::true_type;
        using no = std::false_type;
        if (b && w) wide(yes{}, yes{});
        else if (b) wide(yes{}, no{});
        else if (w) wide(no{}, yes{});
        else wide(no{}, no{});
        return;
    }
    const dim3 block(detail::norm_threads);
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

// y[c] = softmax(x[:, c]) at the column's largest element (one float per column).
inline void top_probability(const float* x, float* y, int64_t n, int64_t cols, cudaStream_t stream,
                            const launch_options& o = {}) {
    if (n == 0 || cols == 0) return;
    check(cols <= 0x7fffffff, errc::invalid_argument, "cuda::ops::top_probability: too many columns");
    // 1024 threads: a column is a vocabulary of logits (128256 for Llama 3), one block each.
    detail::launch("cuda::ops::top_probability", detail::softmax_kernel<1024, true>, dim3(unsigned(cols)), dim3(1024), 0,
                   stream, o, x, y, n);
}

}  // namespace llmrt::cuda::ops
