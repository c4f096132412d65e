// f32 -> Q8_1 activation quantization on the device, bit-exact with llmrt::quantize_row(const
// float*, q8_1*, n): per 32 values d = amax/127 (fp32), q = roundf(x·(1/d)), d stored as fp16.
//
// Two output forms:
//  * quantize_q8_1: ggml's block_q8_1 array (d, s = fp16(Σq·d), qs[32]), byte-identical to the CPU.
//  * quantize_activations: the record layout mmvq reads (below), holding the same values.
//
// mmvq's activation records. For each batch (i2, i3), k/32 records of `ncols` columns; record b
// covers elements 32b..32b+31 of every column and is 48·ncols bytes:
//
// | offset           | field                  | meaning                                             |
// |------------------|------------------------|-----------------------------------------------------|
// | 32·c             | qs[32] int8            | the quants of column c                              |
// | 32·ncols + 16·c  | d (f32)                | fp16_to_fp32 of the stored fp16 scale               |
// | + 4              | d_sum (f32)            | d · Σ qs (exact: 11-bit d times a 12-bit sum)       |
// | + 8              | sum_lo (i32)           | Σ qs[0..15]                                         |
// | + 12             | sum_hi (i32)           | Σ qs[16..31]                                        |
//
// Batches follow each other, batch (i2, i3) at (i3·batch2 + i2)·(k/32)·48·ncols bytes.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/cuda/check.cuh"
#include "llmrt/cuda/ptx.cuh"
#include "llmrt/cuda/views.cuh"
#include "llmrt/quant/q8_1.hpp"

namespace llmrt::cuda {

// The per-column side data of an activation record.
struct q8_1_aux {
    float d;
    float d_sum;
    int32_t sum_lo;
    int32_t sum_hi;
};
static_assert(sizeof(q8_1_aux) == 16, "q8_1_aux is read as one 16-byte vector");

// Bytes of one record of `ncols` columns, and of the records of one batch.
LLMRT_HOST_DEVICE constexpr int64_t activation_record_bytes(int64_t ncols) { return 48 * ncols; }
inline int64_t activation_batch_bytes(int64_t k, int64_t ncols) { return (k / 32) * activation_record_bytes(ncols); }

// Bytes of scratch that quantize_activations (and mmvq, which calls it) needs.
inline std::size_t activation_scratch_bytes(int64_t k, int64_t ncols, int64_t batches = 1) {
    check(k >= 0 && ncols >= 0 && batches >= 0, errc::invalid_argument, [&] {
        return "activation_scratch_bytes: negative size (k " + std::to_string(k) + ", ncols " +
               std::to_string(ncols) + ", batches " + std::to_string(batches) + ")";
    });
    return std::size_t(activation_batch_bytes(k, ncols) * batches);
}

namespace detail {

// One 32-value block of one column, held one value per lane: the Q8_1 quantization every
// lane agrees on. Matches quantize_row: same amax, same IEEE division and reciprocal (the _rn
// intrinsics keep that under --use_fast_math), same roundf.
struct q8_1_lane_result {
    int q;             // this lane's quant
    float d;           // amax / 127, unrounded (ggml's s uses it)
    uint16_t d_fp16;   // the stored scale
    int sum_lo, sum_hi;
};

__device__ __forceinline__ q8_1_lane_result quantize_q8_1_lane(float x, int lane) {
    float amax = fabsf(x);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = d != 0.0f ? __frcp_rn(d) : 0.0f;
    const int q = int(roundf(__fmul_rn(x, id)));
    int half_sum = q;
#pragma unroll
    for (int offset = 8; offset > 0; offset >>= 1) half_sum += __shfl_xor_sync(0xffffffffu, half_sum, offset);
    q8_1_lane_result r;
    r.q = q;
    r.d = d;
    r.d_fp16 = fp32_to_fp16(d);
    r.sum_lo = __shfl_sync(0xffffffffu, half_sum, 0);
    r.sum_hi = __shfl_sync(0xffffffffu, half_sum, 16);
    (void)lane;
    return r;
}

// Column c's part of one record of ncols columns (the layout above): this lane's quant, and the
// side data from lane 0.
__device__ __forceinline__ void store_q8_1_record(uint8_t* record, int64_t ncols, int64_t c, int lane,
                                                  const q8_1_lane_result& r) {
    record[32 * c + lane] = uint8_t(int8_t(r.q));
    if (lane == 0) {
        const float d = __half2float(__ushort_as_half(r.d_fp16));
        q8_1_aux aux;
        aux.d = d;
        aux.d_sum = __fmul_rn(d, float(r.sum_lo + r.sum_hi));
        aux.sum_lo = r.sum_lo;
        aux.sum_hi = r.sum_hi;
        *reinterpret_cast<q8_1_aux*>(record + 32 * ncols + 16 * c) = aux;
    }
}

constexpr int quantize_warps_per_block = 8;

struct activation_quantize_params {
    const float* x;
    int64_t x_col_stride, x_stride2, x_stride3;  // floats
    uint8_t* out;
    int32_t nblocks;  // k / 32
    int32_t ncols;
    int32_t batch2;
};

// One warp per (32-block, column) of one batch; grid (ceil(nblocks·ncols / Warps), batch2, batch3).
// (A template, as every kernel in these headers, so that including TUs share one definition.)
template <int Warps>
__global__ void __launch_bounds__(32 * Warps) quantize_activations_kernel(activation_quantize_params p) {
    // The dependent mmvq may start now (its weights do not depend on this grid); it reads these
    // records only after this grid completes. This grid reads x only after its prerequisites.
    ptx::allow_dependent_grids();
    ptx::wait_for_prerequisite_grids();
    const int lane = int(threadIdx.x) & 31;
    const int64_t item = int64_t(blockIdx.x) * Warps + (threadIdx.x >> 5);
    if (item >= int64_t(p.nblocks) * p.ncols) return;
    const int64_t b = item / p.ncols;
    const int c = int(item % p.ncols);
    const float* x = p.x + int64_t(blockIdx.y) * p.x_stride2 + int64_t(blockIdx.z) * p.x_stride3 + c * p.x_col_stride;
    const q8_1_lane_result r = quantize_q8_1_lane(x[32 * b + lane], lane);
    const int64_t record_bytes = activation_record_bytes(p.ncols);
    uint8_t* record = p.out + (int64_t(blockIdx.z) * p.batch2 + blockIdx.y) * p.nblocks * record_bytes + b * record_bytes;
    store_q8_1_record(record, p.ncols, c, lane, r);
}

// ggml's block_q8_1 layout: one warp per block.
template <int Warps>
__global__ void __launch_bounds__(32 * Warps) quantize_q8_1_kernel(const float* x, q8_1* y, int64_t nblocks) {
    // The dependent mmvq may start now (its weights do not depend on this grid); it reads these
    // records only after this grid completes. This grid reads x only after its prerequisites.
    ptx::allow_dependent_grids();
    ptx::wait_for_prerequisite_grids();
    const int lane = int(threadIdx.x) & 31;
    const int64_t b = int64_t(blockIdx.x) * Warps + (threadIdx.x >> 5);
    if (b >= nblocks) return;
    const q8_1_lane_result r = quantize_q8_1_lane(x[32 * b + lane], lane);
    y[b].qs[lane] = int8_t(r.q);
    if (lane == 0) {
        y[b].d = r.d_fp16;
        y[b].s = fp32_to_fp16(__fmul_rn(float(r.sum_lo + r.sum_hi), r.d));
    }
}

inline void check_launch_dims(int64_t blocks_x, int64_t y, int64_t z, const char* operation) {
    check(blocks_x <= 0x7fffffff && y <= 65535 && z <= 65535, errc::invalid_argument, [&] {
        return std::string(operation) + ": grid " + std::to_string(blocks_x) + " x " + std::to_string(y) + " x " +
               std::to_string(z) + " exceeds CUDA's limits (2^31-1 x 65535 x 65535)";
    });
}

}  // namespace detail

// Quantizes n floats (n a multiple of 32) at device address x into n/32 ggml block_q8_1 at y,
// ordered on `stream`. Bytes equal llmrt::quantize_row(x, y, n) on the host.
inline void quantize_q8_1(const float* x, q8_1* y, int64_t n, cudaStream_t stream) {
    check(n >= 0 && n % 32 == 0, errc::invalid_argument, [&] {
        return "cuda::quantize_q8_1: " + std::to_string(n) + " elements is not a non-negative multiple of 32";
    });
    if (n == 0) return;
    check(x != nullptr && y != nullptr, errc::invalid_argument, "cuda::quantize_q8_1: null pointer");
    const int64_t nblocks = n / 32;
    const int64_t grid = (nblocks + detail::quantize_warps_per_block - 1) / detail::quantize_warps_per_block;
    detail::check_launch_dims(grid, 1, 1, "cuda::quantize_q8_1");
    detail::quantize_q8_1_kernel<detail::quantize_warps_per_block><<<unsigned(grid), 32 * detail::quantize_warps_per_block, 0, stream>>>(x, y, nblocks);
    LLMRT_CUDA_CHECK(cudaGetLastError());
}

// How an mmvq launch orders its reads of X (its prepared activations) against the previous kernel on
// the stream, under programmatic dependent launch. Reading X once the previous kernel is complete
// costs a kernel boundary on every launch: the wait returns only after the previous grid's memory is
// flushed, which on the H100 took 0.4 to 3.8 µs, longer the more weight bytes the new launch
// already has in flight, and X's copy then queues behind those bytes. Where X was written earlier,
// mmvq can read it at once and wait only before it writes Y.
enum class activation_order : uint8_t {
    // X may be written by the previous kernel: mmvq reads it once that kernel is complete, and lets
    // the next kernel start at once (to prefetch its weights).
    after_previous,
    // The same, but the next kernel may start only once this one has waited for the previous one,
    // so that X is complete by then: the first of several mmvq on one X.
    first_of_shared,
    // X was complete before the previous kernel let this one start: the previous kernel is an mmvq
    // on the same X launched first_of_shared or shared. mmvq reads X at once and waits for the
    // previous kernel only before writing Y (the previous kernel may read or write the same Y).
    shared,
};

// Launch options shared by llmrt's CUDA launchers.
struct launch_options {
    // Launch with programmatic stream serialization (sm_90): the kernel may start while the
    // previous kernel on the stream finishes, prefetching what does not depend on it (weights),
    // and waits for it before reading its results.
    bool programmatic_dependent_launch = false;
    // mmvq loads W's rows as tensor-map (TMA) boxes where W's address and strides are multiples
    // of 16 bytes; false makes it copy row by row always (same results, for comparison).
    bool allow_tensor_map = true;
    // mmvq only: see activation_order. The default is right for any X; mmvq_prepared_many sets the
    // others for several W sharing one X.
    activation_order activations = activation_order::after_previous;
    // mmvq only: at most this many warps per CTA share a row tile's k-split (1, 2, 4 or 8; 0: as
    // mmvq chooses). A warp then runs several shares of the split and keeps their sums apart, so
    // results never change; launches whose warps take k by turns (see mmvq_interleaves) ignore it.
    // For tuning experiments.
    int mmvq_max_warps = 0;
};

namespace detail {

// kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent launch when
// options.programmatic_dependent_launch; a failure raises llmrt::error naming `op`. The one
// launcher of llmrt's CUDA kernels (mmvq, the activation quantizer, the graph executor's ops).
template <class... Params, class... Args>
void launch(const char* op, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
            const launch_options& options, Args... args) {
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    cudaLaunchAttribute attribute[1];
    if (options.programmatic_dependent_launch) {
        attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute[0].val.programmaticStreamSerializationAllowed = 1;
        config.attrs = attribute;
        config.numAttrs = 1;
    }
    const cudaError_t status = cudaLaunchKernelEx(&config, kernel, Params(args)...);
    if (status != cudaSuccess) {
        cudaGetLastError();
        throw error(errc::device_error, std::string(op) + ": kernel launch failed: " + cudaGetErrorName(status) + ": " +
                                            cudaGetErrorString(status));
    }
}

}  // namespace detail

// Quantizes x (ncols columns of k floats, k a multiple of 32, in batch2 × batch3 batches) into
// mmvq's activation records in `scratch` (activation_scratch_bytes(k, ncols, batch2·batch3)
// bytes, 16-byte aligned), ordered on `stream`.
inline void quantize_activations(input_columns x, void* scratch, std::size_t scratch_bytes, cudaStream_t stream,
                                 const launch_options& options = {}) {
    check(x.length >= 0 && x.length % 32 == 0 && x.ncols >= 1 && x.batch2 >= 1 && x.batch3 >= 1,
          errc::shape_mismatch, [&] {
              return "cuda::quantize_activations: activations " + x.describe() +
                     " need a length that is a multiple of 32 and at least one column and batch";
          });
    check(x.col_stride_or_dense() >= x.length || x.ncols == 1, errc::shape_mismatch, [&] {
        return "cuda::quantize_activations: column stride " + std::to_string(x.col_stride) +
               " is shorter than a column of " + x.describe();
    });
    const std::size_t needed = activation_scratch_bytes(x.length, x.ncols, x.batch2 * x.batch3);
    check(scratch_bytes >= needed, errc::invalid_argument, [&] {
        return "cuda::quantize_activations: scratch of " + std::to_string(scratch_bytes) + " bytes, " +
               std::to_string(needed) + " needed for " + x.describe();
    });
    if (x.length == 0) return;
    check(x.data != nullptr && scratch != nullptr, errc::invalid_argument,
          "cuda::quantize_activations: null pointer");
    check(reinterpret_cast<uintptr_t>(scratch) % 16 == 0, errc::invalid_argument,
          "cuda::quantize_activations: scratch must be 16-byte aligned");
    const int64_t nblocks = x.length / 32;
    const int64_t grid = (nblocks * x.ncols + detail::quantize_warps_per_block - 1) / detail::quantize_warps_per_block;
    detail::check_launch_dims(grid, x.batch2, x.batch3, "cuda::quantize_activations");
    detail::activation_quantize_params p;
    p.x = x.data;
    p.x_col_stride = x.col_stride_or_dense();
    p.x_stride2 = x.stride2_or_dense();
    p.x_stride3 = x.stride3_or_dense();
    p.out = static_cast<uint8_t*>(scratch);
    p.nblocks = int32_t(nblocks);
    p.ncols = int32_t(x.ncols);
    p.batch2 = int32_t(x.batch2);
    detail::launch("cuda::quantize_activations", detail::quantize_activations_kernel<detail::quantize_warps_per_block>,
                   dim3(unsigned(grid), unsigned(x.batch2), unsigned(x.batch3)),
                   dim3(32 * detail::quantize_warps_per_block), 0, stream, options, p);
}

}  // namespace llmrt::cuda
