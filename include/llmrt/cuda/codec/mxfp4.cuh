// MXFP4 on the device (layout in llmrt/quant/mxfp4.hpp): e (E8M0) at 0, qs[16] at 1; element j in
// the low nibble of qs[j], j+16 in the high nibble. Values are the doubled E2M1 table, so they
// are integers in [-12, 12] and the scale is 2^(e-128).
//
// Canonical order, per 32-block with I = Σ value·qx:  acc = fma(de·dx, I, acc), de = 2^(e-128).
#pragma once

#include "llmrt/cuda/codec/block32.cuh"
#include "llmrt/quant/mxfp4.hpp"

namespace llmrt::cuda {

namespace detail {

// The values of the 8 codes in the 4 bytes qs[4j..4j+3]: `low` holds elements 4j..4j+3 (low
// nibbles), `high` elements 16+4j..16+4j+3 (high nibbles), each as 4 int8.
// A code indexes the positive half of the table {0,1,2,3,4,6,8,12} and the negative half alike by
// its low 3 bits; a third permute picks, per byte, the half that the code's bit 3 names (selector
// nibble n: byte n, or byte 4 + n). Two lookups of 4 codes (the low and high 16 bits of w) give
// the values in nibble order (low0 high0 low1 high1 ...), two more permutes split them into low
// and high elements: 13 instructions for 8 values.
__device__ __forceinline__ void mxfp4_decode_word(uint32_t w, uint32_t& low, uint32_t& high) {
    constexpr uint32_t positive_lo = 0x03020100u, positive_hi = 0x0c080604u;
    constexpr uint32_t negative_lo = 0xfdfeff00u, negative_hi = 0xf4f8fafcu;
    const uint32_t index = w & 0x77777777u;
    const uint32_t half = ((w >> 1) & 0x44444444u) | 0x32103210u;
    const uint32_t index1 = index >> 16, half1 = half >> 16;
    const uint32_t v0 = ptx::byte_perm_unmasked(ptx::byte_perm_unmasked(positive_lo, positive_hi, index),
                                                ptx::byte_perm_unmasked(negative_lo, negative_hi, index), half);
    const uint32_t v1 = ptx::byte_perm_unmasked(ptx::byte_perm_unmasked(positive_lo, positive_hi, index1),
                                                ptx::byte_perm_unmasked(negative_lo, negative_hi, index1), half1);
    low = ptx::byte_perm_unmasked(v0, v1, 0x6420u);
    high = ptx::byte_perm_unmasked(v0, v1, 0x7531u);
}

struct mxfp4_bits {
    static constexpr int align = 1;
    __device__ __forceinline__ static float scale(const uint8_t* block) { return e8m0_to_fp32_half(*block); }
    __device__ __forceinline__ static void values(const uint8_t* block, uint32_t (&v)[8]) {
        uint32_t q[4];
        ptx::load_words<align>(block + 1, q);
#pragma unroll
        for (int j = 0; j < 4; ++j) mxfp4_decode_word(q[j], v[j], v[4 + j]);
    }
    __device__ __forceinline__ static void a_fragment(const uint8_t* block, int t, uint32_t& lo, uint32_t& hi) {
        mxfp4_decode_word(ptx::load_u32<align>(block + 1 + 4 * t), lo, hi);
    }
};

}  // namespace detail

// dot_part and mma_step: codec/block32.cuh.
template <>
struct device_codec<mxfp4> : detail::block32_codec<mxfp4, detail::mxfp4_bits> {
    __device__ static float dot_q8_1(const mxfp4& w, const q8_1* x) {
        const detail::q8_1_words xq = detail::load_q8_1(x[0]);
        const uint8_t* qs = reinterpret_cast<const uint8_t*>(w.qs);
        int sum = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            uint32_t low, high;
            detail::mxfp4_decode_word(detail::bytes_to_u32(qs + 4 * j), low, high);
            sum = __dp4a(int(low), xq.q[j], sum);
            sum = __dp4a(int(high), xq.q[4 + j], sum);
        }
        return detail::mul_rn(detail::mul_rn(e8m0_to_fp32_half(w.e), xq.d), detail::to_float(sum));
    }
};

}  // namespace llmrt::cuda
