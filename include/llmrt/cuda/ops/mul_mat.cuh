// mul_mat on the device: y[:, t] = W · x[:, t] for W of `rows` rows of k elements (GGUF's
// layout, one row per output) and any number of columns.
//
//   block-quantized W   llmrt's mmvq (include/llmrt/cuda/mmvq.cuh) on activations rounded through
//                       Q8_1, in chunks of up to 8 columns: chunk i's activation records sit at
//                       slot i of `records` (mul_mat_records_bytes), so several W that read the
//                       same x can share one quantization (quantize = false reuses the records).
//                       mmvq gives a column the same bits whatever the chunk's width, so the
//                       result of a column never depends on the batch.
//   f32 / f16 / bf16 W  four warps per (row, column), lanes striding k, butterfly sums: float
//                       activations, as the CPU backend's float path takes them.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/mmvq.cuh"
#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda::ops {

// The unquantized weight types, which take the float kernel.
using float_weight_types = type_list<f32, f16, bf16>;

// Bytes of activation records mul_mat_quantized needs for `cols` columns of k.
inline std::size_t mul_mat_records_bytes(int64_t k, int64_t cols) {
    const int64_t chunks = (cols + mmvq_max_cols - 1) / mmvq_max_cols;
    return activation_scratch_bytes(k, mmvq_max_cols, chunks);
}

namespace detail {

constexpr int mul_mat_warps = 8;
constexpr int mul_mat_row_warps = 4;  // warps per (row, column): a router's 128 rows still fill 64 blocks
constexpr int mul_mat_rows_per_block = mul_mat_warps / mul_mat_row_warps;

// The end of mul_mat_float_rows (every thread calls it, with acc its lane's part of the block's
// row `row`): each warp's butterfly sum, then the row's warps' sums in warp order into y (and
// biased = y + bias, with a bias).
__device__ __forceinline__ void store_row_sum(float acc, int64_t row, int64_t rows, float* y, const float* bias,
                                              float* biased) {
    __shared__ float partial[mul_mat_warps];
    const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x) & 31;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, offset));
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp % mul_mat_row_warps != 0 || lane != 0 || row >= rows) return;
    float sum = partial[warp];
#pragma unroll
    for (int p = 1; p < mul_mat_row_warps; ++p) sum = __fadd_rn(sum, partial[warp + p]);
    y[int64_t(blockIdx.y) * rows + row] = sum;
    if (bias) biased[int64_t(blockIdx.y) * rows + row] = __fadd_rn(sum, bias[row]);
}

// The block's rows of column blockIdx.y (a block of mul_mat_warps warps; every thread calls it).
// Warp p of a row's four takes the elements p·32 + lane + 128·i; each warp's butterfly sum, then
// the four warps' sums in warp order.
// With bias (one float per row), biased = y + bias too (the add after the product, as its op gives).
template <class B>
__device__ __forceinline__ void mul_mat_float_rows(const B* w, const float* x, float* y, int64_t rows, int64_t k,
                                                   const float* bias = nullptr, float* biased = nullptr) {
    const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x) & 31;
    const int part = warp % mul_mat_row_warps;
    const int64_t row = int64_t(blockIdx.x) * mul_mat_rows_per_block + warp / mul_mat_row_warps;
    float acc = 0.0f;
    if (row < rows) {
        const B* wr = w + row * k;
        const float* xc = x + int64_t(blockIdx.y) * k;
#pragma unroll 4
        for (int64_t i = part * 32 + lane; i < k; i += 32 * mul_mat_row_warps) {
            float wi;
            dequantize_block(wr[i], &wi);
            acc = __fmaf_rn(wi, xc[i], acc);
        }
    }
    store_row_sum(acc, row, rows, y, bias, biased);
}

// mul_mat_float_rows with W's elements (a weight: no kernel writes it) loaded into registers
// before the kernel waits for the one before it, and x's after: the same products added in the
// same order, the same bits. Each lane holds KPerLane elements, at least ceil(k / (32 ·
// mul_mat_row_warps)) (mul_mat_early_lanes). Calls enter_kernel() itself.
template <class B, int KPerLane>
__device__ __forceinline__ void mul_mat_float_rows_early(const B* w, const float* x, float* y, int64_t rows, int64_t k,
                                                         const float* bias = nullptr, float* biased = nullptr) {
    const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x) & 31;
    const int part = warp % mul_mat_row_warps;
    const int64_t row = int64_t(blockIdx.x) * mul_mat_rows_per_block + warp / mul_mat_row_warps;
    constexpr int64_t stride = 32 * mul_mat_row_warps;
    B wv[KPerLane];
    if (row < rows) {
        const B* wr = w + row * k;
#pragma unroll
        for (int j = 0; j < KPerLane; ++j) {
            const int64_t i = part * 32 + lane + j * stride;
            if (i < k) wv[j] = wr[i];
        }
    }
    enter_kernel();
    float acc = 0.0f;
    if (row < rows) {
        const float* xc = x + int64_t(blockIdx.y) * k;
        float xv[KPerLane];
#pragma unroll
        for (int j = 0; j < KPerLane; ++j) {
            const int64_t i = part * 32 + lane + j * stride;
            xv[j] = i < k ? xc[i] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < KPerLane; ++j) {
            if (part * 32 + lane + j * stride < k) {
                float wi;
                dequantize_block(wv[j], &wi);
                acc = __fmaf_rn(wi, xv[j], acc);
            }
        }
    }
    store_row_sum(acc, row, rows, y, bias, biased);
}

// The KPerLane mul_mat_float_rows_early needs for rows of k elements.
constexpr int64_t mul_mat_early_lanes(int64_t k) { return (k + 32 * mul_mat_row_warps - 1) / (32 * mul_mat_row_warps); }

template <class B>
__global__ void __launch_bounds__(32 * mul_mat_warps)
    mul_mat_float_kernel(const B* w, const float* x, float* y, int64_t rows, int64_t k) {
    enter_kernel();
    mul_mat_float_rows<B>(w, x, y, rows, k);
}

// Calls f(std::integral_constant<int, n>{}) for the runtime n in 1..mmvq_max_cols.
template <int N = 1, class F>
void with_column_count(int64_t n, F&& f) {
    if (n == N) {
        f(std::integral_constant<int, N>{});
    } else if constexpr (N < mmvq_max_cols) {
        with_column_count<N + 1>(n, std::forward<F>(f));
    } else {
        throw error(errc::invalid_argument, "cuda::ops::mul_mat: " + std::to_string(n) + " columns in one chunk");
    }
}

}  // namespace detail

// W of a float type (f32, f16, bf16): rows × k elements; x: cols columns of k; y: cols columns of rows.
inline void mul_mat_float(qtype type, const void* w, int64_t rows, int64_t k, const float* x, float* y, int64_t cols,
                          cudaStream_t stream, const launch_options& o = {}) {
    if (rows == 0 || cols == 0) return;
    detail::check_columns(cols, "cuda::ops::mul_mat");
    dispatch<float_weight_types>(type, "cuda::ops::mul_mat (float weights)", [&](auto tag) {
        using B = typename decltype(tag)::type;
        const dim3 grid(detail::blocks_for(rows, detail::mul_mat_rows_per_block, "cuda::ops::mul_mat"), unsigned(cols));
        detail::launch("cuda::ops::mul_mat", detail::mul_mat_float_kernel<B>, grid, dim3(32 * detail::mul_mat_warps), 0,
                       stream, o, static_cast<const B*>(w), x, y, rows, k);
    });
}

// W block-quantized in B: mmvq per chunk of up to 8 columns. records: mul_mat_records_bytes(k,
// cols) bytes, 16-byte aligned; quantize = false when they already hold x's records (the same
// x quantized by an earlier call on the same stream).
template <class B>
void mul_mat_quantized(const void* w, int64_t rows, int64_t k, const float* x, float* y, int64_t cols, void* records,
                       std::size_t records_bytes, bool quantize, cudaStream_t stream, const launch_options& options = {}) {
    static_assert(list_contains_v<B, weight_types>, "cuda::ops::mul_mat_quantized<B>: B must be a weight type");
    if (rows == 0 || cols == 0) return;
    check(records_bytes >= mul_mat_records_bytes(k, cols), errc::invalid_argument, [&] {
        return "cuda::ops::mul_mat: " + std::to_string(records_bytes) + " bytes for activation records, " +
               std::to_string(mul_mat_records_bytes(k, cols)) + " needed";
    });
    const std::size_t slot_bytes = activation_scratch_bytes(k, mmvq_max_cols);
    for (int64_t c0 = 0; c0 < cols; c0 += mmvq_max_cols) {
        const int64_t n = cols - c0 < mmvq_max_cols ? cols - c0 : mmvq_max_cols;
        void* slot = static_cast<uint8_t*>(records) + std::size_t(c0 / mmvq_max_cols) * slot_bytes;
        input_columns xs;
        xs.data = x + c0 * k;
        xs.length = k;
        xs.ncols = n;
        if (quantize) quantize_activations(xs, slot, slot_bytes, stream, options);
        qmatrix_view wv;
        wv.type = B::id;
        wv.data = w;
        wv.rows = rows;
        wv.k = k;
        output_columns ys;
        ys.data = y + c0 * rows;
        ys.length = rows;
        ys.ncols = n;
        detail::with_column_count(n, [&](auto ncols) {
            mmvq<B, decltype(ncols)::value>(wv, prepared_from(xs, slot), ys, stream, options);
        });
    }
}

}  // namespace llmrt::cuda::ops
