// argmax on the device: y[t] = the first index of the largest element of column t, as
// cpu::argmax finds it (a strict > scan from index 0: NaNs are never picked, except that a NaN at
// index 0 is never beaten and gives 0). One block per column; each thread scans its strided
// share in increasing order, then the (value, index) pairs meet in a fixed tree that keeps the
// larger value and, on a tie, the smaller index.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/cuda/ops/common.cuh"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int argmax_threads = 1024;

struct best_entry {
    float value;
    int64_t index;  // -1: nothing seen yet
};

__device__ __forceinline__ best_entry better(best_entry a, best_entry b) {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
    return a;
}

// The best of x[begin, end) by one block: each thread scans its strided share in increasing
// order, then a fixed tree keeps the larger value and, on a tie, the smaller index.
template <int Threads>
__device__ best_entry block_best(const float* x, int64_t begin, int64_t end, float* values, int64_t* indices) {
    best_entry best{0.0f, -1};
    // Four loads in flight per thread, then their comparisons in index order.
    for (int64_t i0 = begin + threadIdx.x; i0 < end; i0 += 4 * Threads) {
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = i0 + u * Threads < end ? x[i0 + u * Threads] : 0.0f;
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int64_t i = i0 + u * Threads;
            if (i >= end || v[u] != v[u]) continue;  // past the end, or NaN: never larger than anything
            if (best.index < 0 || v[u] > best.value) best = best_entry{v[u], i};
        }
    }
    values[threadIdx.x] = best.value;
    indices[threadIdx.x] = best.index;
    __syncthreads();
    for (int stride = Threads / 2; stride > 0; stride >>= 1) {
        if (int(threadIdx.x) < stride) {
            const best_entry r = better(best_entry{values[threadIdx.x], indices[threadIdx.x]},
                                        best_entry{values[threadIdx.x + stride], indices[threadIdx.x + stride]});
            values[threadIdx.x] = r.value;
            indices[threadIdx.x] = r.index;
        }
        __syncthreads();
    }
    return best_entry{values[0], indices[0]};
}

template <int Threads>
__global__ void __launch_bounds__(Threads) argmax_kernel(const float* x, int32_t* y, int64_t n) {
    enter_kernel();
    __shared__ float values[Threads];
    __shared__ int64_t indices[Threads];
    x += int64_t(blockIdx.x) * n;
    const best_entry best = block_best<Threads>(x, 0, n, values, indices);
    if (threadIdx.x == 0) {
        const float first = x[0];
        y[blockIdx.x] = (first != first || best.index < 0) ? 0 : int32_t(best.index);
    }
}

// Grid (parts, cols): block (k, t) finds the best of slice k of column t into `slices`; the block
// that finishes its column last (an integer counter per column, left at zero) picks the best of
// the slices. `better` is associative and commutative, so the result is the single scan's.
template <int Threads>
__global__ void __launch_bounds__(Threads) argmax_parts_kernel(const float* x, int32_t* y, int64_t n, best_entry* slices,
                                                                int32_t* counters) {
    enter_kernel();
    __shared__ float values[Threads];
    __shared__ int64_t indices[Threads];
    __shared__ int last;
    const int parts = int(gridDim.x), k = int(blockIdx.x), t = int(blockIdx.y);
    x += int64_t(t) * n;
    const int64_t per = (n + parts - 1) / parts;
    const int64_t begin = int64_t(k) * per, end = begin + per < n ? begin + per : n;
    const best_entry best = block_best<Threads>(x, begin, end, values, indices);
    if (threadIdx.x == 0) {
        slices[int64_t(t) * parts + k] = best;
        __threadfence();
        last = atomicAdd(counters + t, 1) == parts - 1;
        if (last) counters[t] = 0;
    }
    __syncthreads();
    if (!last || threadIdx.x != 0) return;
    __threadfence();
    best_entry all{0.0f, -1};
    for (int j = 0; j < parts; ++j) {
        const best_entry b{__ldcg(&slices[int64_t(t) * parts + j].value), __ldcg(&slices[int64_t(t) * parts + j].index)};
        all = better(all, b);
    }
    const float first = x[0];
    y[t] = (first != first || all.index < 0) ? 0 : int32_t(all.index);
}

constexpr int64_t argmax_slice = 4 * argmax_threads;  // one round of loads per thread

}  // namespace detail

// y[t] = argmax of column t of x (cols columns of n floats).
inline void argmax(const float* x, int32_t* y, int64_t n, int64_t cols, cudaStream_t stream, const launch_options& o = {}) {
    if (cols == 0) return;
    check(n >= 1 && n <= 0x7fffffff && cols <= 0x7fffffff, errc::invalid_argument,
          "cuda::ops::argmax: columns of 1..2^31-1 elements, at most 2^31-1 of them");
    detail::launch("cuda::ops::argmax", detail::argmax_kernel<detail::argmax_threads>, dim3(unsigned(cols)),
                   dim3(detail::argmax_threads), 0, stream, o, x, y, n);
}

// Slices a long column's argmax is split into, and the scratch and counters that takes.
inline int64_t argmax_parts(int64_t n) {
    const int64_t parts = (n + detail::argmax_slice - 1) / detail::argmax_slice;
    return parts < 1 ? 1 : parts > 128 ? 128 : parts;
}
inline std::size_t argmax_scratch_bytes(int64_t n, int64_t cols) {
    return std::size_t(argmax_parts(n) * cols) * sizeof(detail::best_entry);
}
inline std::size_t argmax_counter_bytes(int64_t cols) { return std::size_t(cols) * sizeof(int32_t); }

// The same, with a column split over argmax_parts(n) blocks (one round of loads each) where it
// is long: scratch of argmax_scratch_bytes(n, cols) bytes, counters of argmax_counter_bytes(cols)
// bytes that are zero before the first launch (the kernel leaves them zero).
inline void argmax(const float* x, int32_t* y, int64_t n, int64_t cols, void* scratch, std::size_t scratch_bytes,
                   int32_t* counters, std::size_t counter_bytes, cudaStream_t stream, const launch_options& o = {}) {
    const int64_t parts = argmax_parts(n);
    if (parts == 1 || cols == 0) return argmax(x, y, n, cols, stream, o);
    check(n <= 0x7fffffff && cols <= 65535, errc::invalid_argument,
          "cuda::ops::argmax: columns of 1..2^31-1 elements, at most 65535 of them");
    check(scratch_bytes >= argmax_scratch_bytes(n, cols) && counter_bytes >= argmax_counter_bytes(cols),
          errc::invalid_argument, [&] {
              return "cuda::ops::argmax: scratch of " + std::to_string(scratch_bytes) + " bytes and counters of " +
                     std::to_string(counter_bytes) + ", " + std::to_string(argmax_scratch_bytes(n, cols)) + " and " +
                     std::to_string(argmax_counter_bytes(cols)) + " needed";
          });
    detail::launch("cuda::ops::argmax", detail::argmax_parts_kernel<detail::argmax_threads>,
                   dim3(unsigned(parts), unsigned(cols)), dim3(detail::argmax_threads), 0, stream, o, x, y, n,
                   static_cast<detail::best_entry*>(scratch), counters);
}

}  // namespace llmrt::cuda::ops
