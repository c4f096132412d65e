// Shared pieces of the graph executor's CUDA ops (include/llmrt/cuda/ops/*.cuh): the launch
// (llmrt::cuda::detail::launch, with programmatic dependent launch when asked: every op kernel
// begins with enter_kernel(), so it may start while the kernel before it drains), grid sizing, and
// the fixed-order block reductions that keep every op deterministic (the same tree on every run,
// no atomics).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/ptx.cuh"

namespace llmrt::cuda::ops {

namespace detail {

// The first statement of every op kernel. Launched as a programmatic dependent launch, the kernel
// may be running before the previous kernel on the stream has finished: it waits for that kernel
// (and so for everything before it) before it reads or writes any memory, then lets the next
// kernel launch early in turn. Without that launch attribute both are no-ops.
__device__ __forceinline__ void enter_kernel() {
    ptx::wait_for_prerequisite_grids();
    ptx::allow_dependent_grids();
}

// The launch: llmrt::cuda::detail::launch (activations.cuh), which names `op` on failure.
using llmrt::cuda::detail::launch;

// Grid x of ceil(n / per_block) blocks, refused beyond CUDA's limit.
inline unsigned blocks_for(int64_t n, int64_t per_block, const char* op) {
    const int64_t blocks = (n + per_block - 1) / per_block;
    check(blocks >= 1 && blocks <= 0x7fffffff, errc::invalid_argument, [&] {
        return std::string(op) + ": " + std::to_string(n) + " elements need " + std::to_string(blocks) +
               " blocks, outside CUDA's grid limit";
    });
    return unsigned(blocks);
}

// Columns go to grid y (or z): at most 65535.
inline void check_columns(int64_t cols, const char* op) {
    check(cols >= 1 && cols <= 65535, errc::invalid_argument, [&] {
        return std::string(op) + ": " + std::to_string(cols) + " columns; 1..65535 supported";
    });
}

struct sum_op {
    template <class T>
    __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct max_op {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// The reduction of one value per thread of a block of Threads threads, returned to every thread:
// a butterfly inside each warp, then warp 0's lane 0 folds the warps' results in warp order.
// `shared` holds Threads / 32 + 1 values. Fixed order, so the same inputs give the same bits.
template <int Threads, class T, class Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T* shared) {
    static_assert(Threads % 32 == 0 && Threads <= 1024, "block_reduce: Threads must be whole warps, at most 1024");
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
    __syncthreads();  // `shared` may still be read from a previous reduction
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        T r = shared[0];
        for (int w = 1; w < Threads / 32; ++w) r = op(r, shared[w]);
        shared[Threads / 32] = r;
    }
    __syncthreads();
    return shared[Threads / 32];
}

}  // namespace detail

}  // namespace llmrt::cuda::ops
