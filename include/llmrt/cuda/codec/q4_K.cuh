// Q4_K on the device (layout in llmrt/quant/q4_K.hpp): d, dmin at 0, scales[12] at 4, qs[128] at
// 16. Sub-block j (32 elements, one 32-block) is nibble j%2 of qs[32(j/2) + l]. The codec and its
// canonical order are those of codec/scale_min.cuh.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/cuda/codec/scale_min.cuh"
#include "llmrt/quant/q4_K.hpp"

namespace llmrt::cuda {

namespace detail {

struct q4_K_bits {
    static constexpr int qs_offset = int(offsetof(q4_K, qs));
    static constexpr bool has_qh = false;
    __device__ __forceinline__ static uint32_t quants(uint32_t qs, uint32_t, int j) {
        return (qs >> (4 * (j % 2))) & 0x0f0f0f0fu;
    }
    // High nibbles stay in place (16·q <= 240): one shift of the scaled sum removes the 16.
    __device__ __forceinline__ static uint32_t quants_scaled(uint32_t qs, uint32_t, int j) {
        return qs & (0x0f0f0f0fu << (4 * (j % 2)));
    }
    __device__ __forceinline__ static int scale_shift(int j) { return 4 * (j % 2); }
};

}  // namespace detail

template <>
struct device_codec<q4_K> : detail::scale_min_codec<q4_K, detail::q4_K_bits> {};

}  // namespace llmrt::cuda
