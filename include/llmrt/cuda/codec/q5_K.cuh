// Q5_K on the device (layout in llmrt/quant/q5_K.hpp): d, dmin at 0, scales[12] at 4, qh[32] at
// 16, qs[128] at 48. As Q4_K, with the fifth bit of element l of sub-block j in bit j of qh[l]. The
// codec and its canonical order are those of codec/scale_min.cuh.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/cuda/codec/scale_min.cuh"
#include "llmrt/quant/q5_K.hpp"

namespace llmrt::cuda {

namespace detail {

struct q5_K_bits {
    static constexpr int qs_offset = int(offsetof(q5_K, qs));
    static constexpr int qh_offset = int(offsetof(q5_K, qh));
    static constexpr bool has_qh = true;
    // The nibble at shift 4(j%2) of their qs word and bit j of their qh word.
    __device__ __forceinline__ static uint32_t quants(uint32_t qs, uint32_t qh, int j) {
        return ((qs >> (4 * (j % 2))) & 0x0f0f0f0fu) | (((qh >> j) << 4) & 0x10101010u);
    }
    // An odd sub-block's 5-bit quants would not fit a byte at bit 4: no scaling.
    __device__ __forceinline__ static uint32_t quants_scaled(uint32_t qs, uint32_t qh, int j) { return quants(qs, qh, j); }
    __device__ __forceinline__ static int scale_shift(int) { return 0; }
};

}  // namespace detail

template <>
struct device_codec<q5_K> : detail::scale_min_codec<q5_K, detail::q5_K_bits> {};

}  // namespace llmrt::cuda
