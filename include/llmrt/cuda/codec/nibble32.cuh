// The device codec of the nibble32 family (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS), read from the
// type's layout (llmrt/quant/layout.hpp): one codec for every such type, no per-type code.
//
// Canonical order: codec/block32.cuh, with u the code (offset the layout's code_offset, a minimum
// where the layout has one) for the linear types, and the table values (signed, offset 0) for
// the IQ4_NL table types.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <numeric>

#include "llmrt/cuda/codec/block32.cuh"
#include "llmrt/quant/iq4_nl.hpp"
#include "llmrt/quant/layout.hpp"

namespace llmrt::cuda {

namespace detail {

// The IQ4_NL values of the 8 codes of w: table16_decode_word_paired (codec.cuh) over ggml's table
// (llmrt::iq4nl_table_word).
__device__ __forceinline__ void iq4nl_decode_word_paired(uint32_t w, uint32_t& pair0, uint32_t& pair1) {
    table16_decode_word_paired<iq4nl_table_word(0), iq4nl_table_word(1), iq4nl_table_word(2), iq4nl_table_word(3)>(
        w, pair0, pair1);
}

// Four fifth bits (bits 0..3 of `bits4`) as bit 4 of four bytes: bit i to bit 8i + 4.
__device__ __forceinline__ uint32_t spread_fifth_bits(uint32_t bits4) { return ((bits4 * 0x00204081u) & 0x01010101u) << 4; }

template <class B>
struct nibble32_bits {
    static constexpr nibble32_layout L = block_layout<B>::value;
    static_assert(L.bytes == int(sizeof(B)) && L.slices_per_block * 32 == int(B::block_size),
                  "nibble32: the block's layout must give its size and 32-value slices");
    static constexpr int align = std::gcd(int(sizeof(B)), 16);
    // The alignment a field at `offset` has in a block whose start is `align`-aligned.
    static constexpr int field_align(int offset) { return std::gcd(align, offset == 0 ? 16 : offset); }
    static constexpr bool table = L.iq4nl_table;
    static constexpr int offset = L.code_offset;
    static constexpr bool has_min = L.m >= 0;
    static constexpr bool paired_fragments = table;
    static constexpr int a_parts = 1;

    __device__ __forceinline__ static float scale(const uint8_t* block, int slice) {
        const float d = ptx::load_fp16(block + L.d);
        if constexpr (L.scales_l >= 0) {
            const int low = (block[L.scales_l + slice / 2] >> (4 * (slice % 2))) & 15;
            const int high = (int(*reinterpret_cast<const uint16_t*>(block + L.scales_h)) >> (2 * slice)) & 3;
            return mul_rn(d, to_float((low | high << 4) - 32));
        } else {
            return d;
        }
    }
    __device__ __forceinline__ static float min(const uint8_t* block, int) { return ptx::load_fp16(block + L.m); }

    // The 32 fifth bits of the block's codes.
    __device__ __forceinline__ static uint32_t fifth_bits(const uint8_t* block) {
        return ptx::load_u32<field_align(L.qh)>(block + L.qh);
    }

    // v[j]: elements 4j..4j+3 of the slice (codes, or table values).
    __device__ __forceinline__ static void values(const uint8_t* block, int slice, uint32_t (&v)[8]) {
        uint32_t q[4];
        ptx::load_words<field_align(L.qs)>(block + L.qs + 16 * slice, q);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            if constexpr (table) {
                uint32_t pair0, pair1;
                iq4nl_decode_word_paired(q[j], pair0, pair1);
                v[j] = ptx::byte_perm_unmasked(pair0, pair1, 0x6420u);
                v[4 + j] = ptx::byte_perm_unmasked(pair0, pair1, 0x7531u);
            } else {
                v[j] = q[j] & 0x0f0f0f0fu;
                v[4 + j] = (q[j] >> 4) & 0x0f0f0f0fu;
            }
        }
        if constexpr (L.qh >= 0) {
            const uint32_t h = fifth_bits(block);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                v[j] |= spread_fifth_bits((h >> (4 * j)) & 15u);
                v[4 + j] |= spread_fifth_bits((h >> (16 + 4 * j)) & 15u);
            }
        }
    }

    template <int Residue>
    __device__ __forceinline__ static void a_fragment(const uint8_t* block, int slice, int t, uint32_t (&w)[2]) {
        const uint32_t q = ptx::load_u32_at<field_align(L.qs), ptx::residue_after(Residue, L.qs)>(block + L.qs + 16 * slice + 4 * t);
        if constexpr (table) {
            iq4nl_decode_word_paired(q, w[0], w[1]);
        } else {
            w[0] = q & 0x0f0f0f0fu;
            w[1] = (q >> 4) & 0x0f0f0f0fu;
            if constexpr (L.qh >= 0) {
                const uint32_t h = ptx::load_u32_at<field_align(L.qh), ptx::residue_after(Residue, L.qh)>(block + L.qh);
                w[0] |= spread_fifth_bits((h >> (4 * t)) & 15u);
                w[1] |= spread_fifth_bits((h >> (16 + 4 * t)) & 15u);
            }
        }
    }
};

}  // namespace detail

// Every nibble32 type: dot_part, mma_step and dot_q8_1 from codec/block32.cuh over its layout.
template <nibble32_block B>
struct device_codec<B> : detail::block32_codec<B, detail::nibble32_bits<B>> {};

}  // namespace llmrt::cuda
