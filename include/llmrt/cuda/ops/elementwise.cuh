// Element-wise ops of the graph executor on the device, the same formulas as cpu/ops.hpp:
//
//   mul     y = a ⊙ b          add  y = a + b      (b: as many columns as a, or one for all)
//   silu    y = x / (1 + exp(−x))
//   swiglu  y = silu(g) · u
//   swiglu_oai  g = min(gate, limit), u = clamp(up, −limit, limit), y = g / (1 + exp(alpha·(−g))) · (u + 1)
//           (min and clamp as std::min and std::clamp: a NaN stays NaN, unlike fminf)
//
// Every float step is spelled with the _rn intrinsics, so nvcc contracts nothing the CPU does
// not (only exp differs from the host's libm, by an ulp or so).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstdint>

#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/cuda/ops/records.cuh"

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

__device__ __forceinline__ float swiglu_oai_value(float gv, float uv, float alpha, float limit) {
    const float g = limit < gv ? limit : gv;
    const float u = uv < -limit ? -limit : limit < uv ? limit : uv;
    const float s = __fdiv_rn(g, __fadd_rn(1.0f, expf(__fmul_rn(alpha, -g))));
    return __fmul_rn(s, __fadd_rn(u, 1.0f));
}

template <int Gated>
__global__ void __launch_bounds__(elementwise_threads)
    silu_kernel(const float* x, const float* up, float* y, int64_t count) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * elementwise_threads + threadIdx.x;
    if (i >= count) return;
    const float s = silu(x[i]);
    y[i] = Gated ? __fmul_rn(s, up[i]) : s;
}

template <int Threads>
__global__ void __launch_bounds__(Threads)
    swiglu_oai_kernel(const float* gate, const float* up, float* y, int64_t count, float alpha, float limit) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * Threads + threadIdx.x;
    if (i >= count) return;
    y[i] = swiglu_oai_value(gate[i], up[i], alpha, limit);
}

// One warp per block of 32 values of a column: y = silu(gate) · up with gate and up read with
// column strides (a stacked matvec step's products), y written where kept and its Q8_1 records
// where asked (n a multiple of 32 then). Grid x: blocks of 8 warps over ceil(n/32) · cols items.
struct swiglu_round_args {
    const float* gate;
    const float* up;
    int64_t gate_stride, up_stride;
    float* y;           // dense (null: not kept)
    uint8_t* records;   // null: none
    int64_t n, cols;
    int64_t chunk_cols;  // the records' chunks: 8 columns, or 1 (write_record)
    int32_t oai;         // 1: swiglu_oai with alpha and limit
    float alpha, limit;
};

constexpr int swiglu_round_warps = 8;

// A template (of its work-group size) so that, like every kernel of these headers, it may be
// defined in several translation units of one program: a plain __global__ function defined in a
// header is defined again in each, and the link fails.
template <int Warps>
__global__ void __launch_bounds__(32 * Warps) swiglu_round_kernel(const swiglu_round_args p) {
    enter_kernel();
    const int lane = int(threadIdx.x) & 31;
    const int64_t blocks = (p.n + 31) / 32;
    const int64_t item = int64_t(blockIdx.x) * Warps + (threadIdx.x >> 5);
    if (item >= blocks * p.cols) return;
    const int64_t c = item / blocks, b = item % blocks, i = 32 * b + lane;
    float v = 0.0f;
    if (i < p.n) {
        const float gv = p.gate[c * p.gate_stride + i], uv = p.up[c * p.up_stride + i];
        v = p.oai ? swiglu_oai_value(gv, uv, p.alpha, p.limit) : __fmul_rn(silu(gv), uv);
    }
    if (p.y && i < p.n) p.y[c * p.n + i] = v;
    if (p.records) write_record(p.records, p.n, p.cols, c, b, v, lane, p.chunk_cols);
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

// gpt-oss's clamped SwiGLU over count floats (graph::op::swiglu_oai).
inline void swiglu_oai(const float* gate, const float* up, float* y, int64_t count, float alpha, float limit,
                       cudaStream_t stream, const launch_options& o = {}) {
    if (count == 0) return;
    const char* op = "cuda::ops::swiglu_oai";
    detail::launch(op, detail::swiglu_oai_kernel<detail::elementwise_threads>,
                   dim3(detail::blocks_for(count, detail::elementwise_threads, op)), detail::elementwise_threads, 0, stream, o,
                   gate, up, y, count, alpha, limit);
}

// The swiglu step's activation: swiglu, or swiglu_oai with its alpha and limit.
struct gated_activation {
    bool oai = false;
    float alpha = 0.0f, limit = 0.0f;
};

// The swiglu step: y = silu(gate) ⊙ up (or swiglu_oai) over cols columns of n, gate and up with
// column strides, y dense (null: not kept) and, when records is given, the Q8_1 records of y
// (rounded_records_bytes(n, cols) bytes; n a multiple of 32) in chunks of record_chunk_cols
// columns (ops/records.cuh).
inline void swiglu_round(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* y,
                         void* records, int64_t n, int64_t cols, cudaStream_t stream, const launch_options& o = {},
                         gated_activation act = {}, int64_t record_chunk_cols = 8) {
    const char* op = "cuda::ops::swiglu";
    if (n == 0 || cols == 0) return;
    check(!records || n % 32 == 0, errc::shape_mismatch, [&] {
        return std::string(op) + ": Q8_1 records need a length that is a multiple of 32, got " + std::to_string(n);
    });
    check_record_chunk_cols(op, records != nullptr, record_chunk_cols);
    const int64_t items = (n + 31) / 32 * cols;
    const detail::swiglu_round_args a{gate, up,  gate_stride, up_stride, y, static_cast<uint8_t*>(records), n, cols,
                                      record_chunk_cols, act.oai ? 1 : 0, act.alpha, act.limit};
    detail::launch(op, detail::swiglu_round_kernel<detail::swiglu_round_warps>, dim3(detail::blocks_for(items, detail::swiglu_round_warps, op)),
                   dim3(32 * detail::swiglu_round_warps), 0, stream, o, a);
}

}  // namespace llmrt::cuda::ops
