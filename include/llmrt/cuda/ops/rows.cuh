// Row gathers and scatters on the device:
//
//   get_rows  y[:, t] = dequantize(table row ids[t])   any type of llmrt::all_types, through the
//                                                      host/device reference codec (dequantize_block),
//                                                      so the bits equal cpu::get_rows'
//   set_rows  cache[:, pos[t]] = src[:, t]              f32, or f16 rounded as fp32_to_fp16 rounds
//
// Ids and positions live on the device and cannot be checked before the launch: an id outside
// the table gives a column of NaN, a position outside the cache writes nothing (the CPU backend
// raises an error for both; llama_model checks them on the host before every run).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/quant/codec.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int rows_threads = 128;

// One block per column; thread j dequantizes blocks j, j + threads, ... of the row.
template <class B>
__global__ void __launch_bounds__(rows_threads)
    get_rows_kernel(const uint8_t* table, int64_t row_bytes, int64_t n_rows, const int32_t* ids, float* y, int64_t ne0) {
    enter_kernel();
    const int32_t id = ids[blockIdx.x];
    float* out = y + int64_t(blockIdx.x) * ne0;
    const int64_t nblocks = ne0 / B::block_size;
    if (id < 0 || id >= n_rows) {
        for (int64_t i = threadIdx.x; i < ne0; i += rows_threads) out[i] = __int_as_float(0x7fc00000);
        return;
    }
    const B* row = reinterpret_cast<const B*>(table + int64_t(id) * row_bytes);
    for (int64_t b = threadIdx.x; b < nblocks; b += rows_threads) dequantize_block(row[b], out + b * B::block_size);
}

template <int Half>
__global__ void __launch_bounds__(rows_threads)
    set_rows_kernel(void* cache, int64_t ne0, int64_t n_ctx, const float* src, const int32_t* pos) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * rows_threads + threadIdx.x;
    if (i >= ne0) return;
    const int32_t p = pos[blockIdx.y];
    if (p < 0 || p >= n_ctx) return;
    const float v = src[int64_t(blockIdx.y) * ne0 + i];
    if (Half)
        static_cast<uint16_t*>(cache)[int64_t(p) * ne0 + i] = fp32_to_fp16(v);
    else
        static_cast<float*>(cache)[int64_t(p) * ne0 + i] = v;
}

}  // namespace detail

// y[:, t] = row ids[t] of a table of n_rows rows of ne0 elements of `type` (one of List).
template <class List = all_types>
void get_rows(qtype type, const void* table, int64_t ne0, int64_t n_rows, const int32_t* ids, float* y, int64_t cols,
              cudaStream_t stream, const launch_options& o = {}) {
    if (cols == 0 || ne0 == 0) return;
    check(cols <= 0x7fffffff, errc::invalid_argument, "cuda::ops::get_rows: too many columns");
    dispatch<List>(type, "cuda::ops::get_rows", [&](auto tag) {
        using B = typename decltype(tag)::type;
        check(ne0 % B::block_size == 0, errc::shape_mismatch, [&] {
            return "cuda::ops::get_rows: rows of " + std::to_string(ne0) + " elements are not whole " + B::name +
                   " blocks of " + std::to_string(B::block_size);
        });
        detail::launch("cuda::ops::get_rows", detail::get_rows_kernel<B>, dim3(unsigned(cols)), dim3(detail::rows_threads),
                       0, stream, o, static_cast<const uint8_t*>(table), int64_t(row_size(B::id, ne0)), n_rows, ids, y,
                       ne0);
    });
}

// Column pos[t] of the cache (n_ctx columns of ne0 elements of f32 or f16) = src[:, t], t < cols.
inline void set_rows(qtype cache_type, void* cache, int64_t ne0, int64_t n_ctx, const float* src, const int32_t* pos,
                     int64_t cols, cudaStream_t stream, const launch_options& o = {}) {
    check(cache_type == qtype::f32 || cache_type == qtype::f16, errc::unsupported_type,
          [&] { return std::string("cuda::ops::set_rows: caches are f32 or f16, not ") + name(cache_type); });
    if (cols == 0 || ne0 == 0) return;
    detail::check_columns(cols, "cuda::ops::set_rows");
    const dim3 grid(detail::blocks_for(ne0, detail::rows_threads, "cuda::ops::set_rows"), unsigned(cols));
    const char* op = "cuda::ops::set_rows";
    if (cache_type == qtype::f16)
        detail::launch(op, detail::set_rows_kernel<1>, grid, dim3(detail::rows_threads), 0, stream, o, cache, ne0, n_ctx, src, pos);
    else
        detail::launch(op, detail::set_rows_kernel<0>, grid, dim3(detail::rows_threads), 0, stream, o, cache, ne0, n_ctx, src, pos);
}

}  // namespace llmrt::cuda::ops
