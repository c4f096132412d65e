// The device half of the CUDA backend's all_gather (graph::op::all_gather): after NCCL gathered
// every rank's slice into one slot per rank, this kernel drops the slots' padding and interleaves
// the columns, y[:, t] = x₀[:, t] ‖ x₁[:, t] ‖ ..., the layout the CPU backend's all_gather writes.
//
//   gathered   ranks slots of `slot` floats each; rank r's slot starts with its slice's cols
//              columns of part(r) floats, dense (part(r) = shard_begin(total, ranks, r + 1) −
//              shard_begin(total, ranks, r): floor or ceil(total / ranks)); the rest is padding
//   y          cols columns of total floats, dense
//
// A pure copy: the same bits as the CPU backend's memcpys.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "llmrt/cuda/ops/common.cuh"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int interleave_threads = 256;

// One thread per element of y. A template (of its block size) so that it may be defined in
// several translation units of one program, as every kernel of these headers.
template <int Threads>
__global__ void __launch_bounds__(Threads)
    interleave_slices_kernel(const float* gathered, int64_t slot, int32_t ranks, int64_t total, float* y, int64_t count) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * Threads + threadIdx.x;
    if (i >= count) return;
    const int64_t c = i / total, e = i % total;
    // shard_begin's split: the first `rem` ranks hold q + 1 elements, the others q (q >= 1).
    const int64_t q = total / ranks, rem = total % ranks, wide = rem * (q + 1);
    const int64_t r = e < wide ? e / (q + 1) : rem + (e - wide) / q;
    const int64_t part = q + (r < rem ? 1 : 0);
    const int64_t begin = q * r + (r < rem ? r : rem);
    y[i] = gathered[r * slot + c * part + (e - begin)];
}

}  // namespace detail

// The floats of one rank's slot for an all_gather of cols columns of total over ranks: the widest
// slice's columns, so that every rank sends the same count (NCCL's all_gather needs that).
inline int64_t gather_slot_floats(int64_t total, int32_t ranks, int64_t cols) {
    return (total + ranks - 1) / ranks * cols;
}

// y (cols columns of total floats) from the ranks' slots of `slot` floats at gathered (above).
inline void interleave_slices(const float* gathered, int64_t slot, int32_t ranks, int64_t total, float* y, int64_t cols,
                              cudaStream_t stream, const launch_options& o = {}) {
    const char* op = "cuda::ops::interleave_slices";
    check(ranks >= 1 && total >= ranks && cols >= 0 && slot >= gather_slot_floats(total, ranks, cols),
          errc::invalid_argument, [&] {
              return std::string(op) + ": " + std::to_string(total) + " floats per column over " + std::to_string(ranks) +
                     " ranks, " + std::to_string(cols) + " columns, slots of " + std::to_string(slot) +
                     " floats: need ranks >= 1, total >= ranks and slots of ceil(total / ranks) per column";
          });
    const int64_t count = total * cols;
    if (count == 0) return;
    detail::launch(op, detail::interleave_slices_kernel<detail::interleave_threads>,
                   dim3(detail::blocks_for(count, detail::interleave_threads, op)), detail::interleave_threads, 0, stream,
                   o, gathered, slot, ranks, total, y, count);
}

}  // namespace llmrt::cuda::ops
