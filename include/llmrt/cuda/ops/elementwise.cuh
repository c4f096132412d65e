// Element-wise ops of the graph executor on the device, the same formulas as cpu/ops.hpp:
//
//   mul     y = a ⊙ b          add  y = a + b      (b: as many columns as a, or one for all)
//   silu    y = x / (1 + exp(−x))
//   swiglu  y = silu(g) · u
//
// Every float step is spelled with the _rn intrinsics, so nvcc contracts nothing the CPU does
// not (only exp differs from the host's libm, by an ulp or so).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "llmrt/cuda/ops/common.cuh"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int elementwise_threads = 256;

enum class binary_op : int { mul, add };

template <int Op>
__global__ void __launch_bounds__(elementwise_threads)
    binary_kernel(const float* a, const float* b, float* y, int64_t n, int64_t count, int broadcast_b) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * elementwise_threads + threadIdx.x;
    if (i >= count) return;
    const float bv = b[broadcast_b ? i % n : i];
    y[i] = Op == int(binary_op::mul) ? __fmul_rn(a[i], bv) : __fadd_rn(a[i], bv);
}

__device__ __forceinline__ float silu(float x) { return __fdiv_rn(x, __fadd_rn(1.0f, expf(-x))); }

template <int Gated>
__global__ void __launch_bounds__(elementwise_threads)
    silu_kernel(const float* x, const float* up, float* y, int64_t count) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * elementwise_threads + threadIdx.x;
    if (i >= count) return;
    const float s = silu(x[i]);
    y[i] = Gated ? __fmul_rn(s, up[i]) : s;
}

inline void binary(binary_op op, const float* a, const float* b, float* y, int64_t n, int64_t cols, bool broadcast_b,
                   cudaStream_t stream, const launch_options& o, const char* name) {
    const int64_t count = n * cols;
    if (count == 0) return;
    const dim3 grid(blocks_for(count, elementwise_threads, name));
    if (op == binary_op::mul)
        launch(name, binary_kernel<int(binary_op::mul)>, grid, elementwise_threads, 0, stream, o, a, b, y, n, count,
               int(broadcast_b));
    else
        launch(name, binary_kernel<int(binary_op::add)>, grid, elementwise_threads, 0, stream, o, a, b, y, n, count,
               int(broadcast_b));
}

}  // namespace detail

// y = a ⊙ b over cols columns of n floats; b has cols columns, or one when broadcast_b.
inline void mul(const float* a, const float* b, float* y, int64_t n, int64_t cols, bool broadcast_b, cudaStream_t stream,
                const launch_options& o = {}) {
    detail::binary(detail::binary_op::mul, a, b, y, n, cols, broadcast_b, stream, o, "cuda::ops::mul");
}

inline void add(const float* a, const float* b, float* y, int64_t n, int64_t cols, bool broadcast_b, cudaStream_t stream,
                const launch_options& o = {}) {
    detail::binary(detail::binary_op::add, a, b, y, n, cols, broadcast_b, stream, o, "cuda::ops::add");
}

inline void silu(const float* x, float* y, int64_t count, cudaStream_t stream, const launch_options& o = {}) {
    if (count == 0) return;
    const char* op = "cuda::ops::silu";
    detail::launch(op, detail::silu_kernel<0>, dim3(detail::blocks_for(count, detail::elementwise_threads, op)),
                   detail::elementwise_threads, 0, stream, o, x, static_cast<const float*>(nullptr), y, count);
}

inline void swiglu(const float* gate, const float* up, float* y, int64_t count, cudaStream_t stream,
                   const launch_options& o = {}) {
    if (count == 0) return;
    const char* op = "cuda::ops::swiglu";
    detail::launch(op, detail::silu_kernel<1>, dim3(detail::blocks_for(count, detail::elementwise_threads, op)),
                   detail::elementwise_threads, 0, stream, o, gate, up, y, count);
}

}  // namespace llmrt::cuda::ops
