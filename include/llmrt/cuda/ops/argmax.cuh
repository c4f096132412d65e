// argmax on the device: y[t] = the first index of the largest element of column t, as
// cpu::argmax finds it (a strict > scan from index 0: NaNs are never picked, except that a NaN at
// index 0 is never beaten and gives 0). One block per column; each thread scans its strided
// share in increasing order, then the (value, index) pairs meet in a fixed tree that keeps the
// larger value and, on a tie, the smaller index.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

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

template <int Threads>
__global__ void __launch_bounds__(Threads) argmax_kernel(const float* x, int32_t* y, int64_t n) {
    enter_kernel();
    __shared__ float values[Threads];
    __shared__ int64_t indices[Threads];
    x += int64_t(blockIdx.x) * n;
    best_entry best{0.0f, -1};
    // Four loads in flight per thread, then their comparisons in index order.
    for (int64_t i0 = threadIdx.x; i0 < n; i0 += 4 * Threads) {
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = i0 + u * Threads < n ? x[i0 + u * Threads] : 0.0f;
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int64_t i = i0 + u * Threads;
            if (i >= n || v[u] != v[u]) continue;  // past the end, or NaN: never larger than anything
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
    if (threadIdx.x == 0) {
        const float first = x[0];
        y[blockIdx.x] = (first != first || indices[0] < 0) ? 0 : int32_t(indices[0]);
    }
}

}  // namespace detail

// y[t] = argmax of column t of x (cols columns of n floats).
inline void argmax(const float* x, int32_t* y, int64_t n, int64_t cols, cudaStream_t stream, const launch_options& o = {}) {
    if (cols == 0) return;
    check(n >= 1 && n <= 0x7fffffff && cols <= 0x7fffffff, errc::invalid_argument,
          "cuda::ops::argmax: columns of 1..2^31-1 elements, at most 2^31-1 of them");
    detail::launch("cuda::ops::argmax", detail::argmax_kernel<detail::argmax_threads>, dim3(unsigned(cols)),
                   dim3(detail::argmax_threads), 0, stream, o, x, y, n);
}

}  // namespace llmrt::cuda::ops
