// MXFP4 on the device (layout in llmrt/quant/mxfp4.hpp): e (E8M0) at 0, qs[16] at 1; element j in
// the low nibble of qs[j], j+16 in the high nibble. Values are the doubled E2M1 table, so they
// are integers in [-12, 12] and the scale is 2^(e-128).
//
// Canonical order, per 32-block with I = Σ value·qx:  acc = fma(de·dx, I, acc), de = 2^(e-128).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/cuda/codec/block32.cuh"
#include "llmrt/quant/mxfp4.hpp"

namespace llmrt::cuda {

namespace detail {

// The values of the 8 codes in the 4 bytes qs[4j..4j+3], in the order of the codes in the word
// (codec.cuh's table16_decode_word_paired over the doubled E2M1 table: its positive half
// {0,1,2,3,4,6,8,12}, then its negative half).
__device__ __forceinline__ void mxfp4_decode_word_paired(uint32_t w, uint32_t& pair0, uint32_t& pair1) {
    table16_decode_word_paired<0x03020100u, 0x0c080604u, 0xfdfeff00u, 0xf4f8fafcu>(w, pair0, pair1);
}

// The same values in element order: `low` holds elements 4j..4j+3 (low nibbles), `high`
// elements 16+4j..16+4j+3 (high nibbles). Two more permutes than the paired order.
__device__ __forceinline__ void mxfp4_decode_word(uint32_t w, uint32_t& low, uint32_t& high) {
    uint32_t pair0, pair1;
    mxfp4_decode_word_paired(w, pair0, pair1);
    low = ptx::byte_perm_unmasked(pair0, pair1, 0x6420u);
    high = ptx::byte_perm_unmasked(pair0, pair1, 0x7531u);
}

// The 8 codes of w as magnitudes in two parts, in the paired order (pair0: elements 4j, 16+4j,
// 4j+1, 17+4j; pair1: 4j+2, 18+4j, 4j+3, 19+4j): `positive` holds each positive code's magnitude
// and 0 for a negative one, `negative` the reverse, so value = positive − negative. prmt's
// sign-replicating selector nibbles (bit 3 set) give 0 from a table of bytes below 0x80: the code
// itself selects the magnitude of a positive code and 0 for a negative one, and the code with
// bit 3 flipped does the reverse from the same table. 7 instructions for 8 values.
__device__ __forceinline__ void mxfp4_signed_parts(uint32_t w, uint32_t (&positive)[2], uint32_t (&negative)[2]) {
    constexpr uint32_t magnitude_lo = 0x03020100u, magnitude_hi = 0x0c080604u;  // m = 0..7
    const uint32_t flipped = w ^ 0x88888888u;
    positive[0] = ptx::byte_perm_unmasked(magnitude_lo, magnitude_hi, w);
    positive[1] = ptx::byte_perm_unmasked(magnitude_lo, magnitude_hi, w >> 16);
    negative[0] = ptx::byte_perm_unmasked(magnitude_lo, magnitude_hi, flipped);
    negative[1] = ptx::byte_perm_unmasked(magnitude_lo, magnitude_hi, flipped >> 16);
}

// Σ value·x over the 8 codes of w against paired activation words x0 and x1, as the positive and
// negative parts' sums: 7 instructions and 4 dp4a for 8 values.
__device__ __forceinline__ void mxfp4_dot_word_signed_parts(uint32_t w, int x0, int x1, int& positive, int& negative) {
    uint32_t pos[2], neg[2];
    mxfp4_signed_parts(w, pos, neg);
    positive = ptx::dp4a_u8s8(pos[0], x0, positive);
    positive = ptx::dp4a_u8s8(pos[1], x1, positive);
    negative = ptx::dp4a_u8s8(neg[0], x0, negative);
    negative = ptx::dp4a_u8s8(neg[1], x1, negative);
}

struct mxfp4_bits {
    static constexpr int align = 1;
    static constexpr int e_at = int(offsetof(mxfp4, e)), qs_at = int(offsetof(mxfp4, qs));  // llmrt::mxfp4
    __device__ __forceinline__ static float scale(const uint8_t* block, int) { return e8m0_to_fp32_half(block[e_at]); }
    __device__ __forceinline__ static void values(const uint8_t* block, int, uint32_t (&v)[8]) {
        uint32_t q[4];
        ptx::load_words<align>(block + qs_at, q);
#pragma unroll
        for (int j = 0; j < 4; ++j) mxfp4_decode_word(q[j], v[j], v[4 + j]);
    }
    // The tensor-core form takes the codes' own order too (codec/block32.cuh): two permutes of
    // the B fragment per 32-block, shared by both rows, instead of two per row. On the H100, 8
    // columns: 14336×4096 24.3 -> 23.5 µs, 128256×4096 150.0 -> 147.5 µs.
    static constexpr bool paired_fragments = true;
    // And it takes the values as a positive and a negative part, one mma each (7 instructions for
    // 8 values instead of 11, and an mma and a subtraction per output more). On the H100, shared
    // X, 8 columns: 128256×4096 122.7 -> 107.8 µs, 14336×4096 14.9 -> 13.2 µs, 4096×4096 5.69 ->
    // 5.33 µs; 5 columns alike.
    static constexpr int a_parts = 2;
    template <int Residue>
    __device__ __forceinline__ static void a_fragment(const uint8_t* block, int, int t, uint32_t (&w)[4]) {
        uint32_t positive[2], negative[2];
        mxfp4_signed_parts(ptx::load_u32_at<align, ptx::residue_after(Residue, qs_at)>(block + qs_at + 4 * t), positive, negative);
        w[0] = positive[0], w[1] = positive[1], w[2] = negative[0], w[3] = negative[1];
    }
};

}  // namespace detail

// dot_part and mma_step: codec/block32.cuh.
template <>
struct device_codec<mxfp4> : detail::block32_codec<mxfp4, detail::mxfp4_bits> {
    // At one and two columns the dp4a form reads paired activation records (codec.cuh): in the
    // codes' own order 8 values take 11 instructions and 2 dp4a instead of 13 and 2, and at one
    // column the signed-parts dot takes 7 and 4. Measured on the H100, 1 column: 4096×4096 6.16 ->
    // 5.47 µs, 14336×4096 16.57 -> 15.30 µs; from 4 columns the rearranging costs more than it
    // saves (4096×14336: 16.8 -> 17.9 µs).
    using base = detail::block32_codec<mxfp4, detail::mxfp4_bits>;
    template <int NCols>
    static constexpr bool paired_records = NCols <= 2;

    template <int NCols>
    __device__ __forceinline__ static void dot_part(const uint8_t* step, int part, int nvalid, const uint8_t* records,
                                                    float (&acc)[NCols]) {
        if constexpr (paired_records<NCols>)
            paired_dot_part<NCols>(step, part, nvalid, records, acc);
        else
            base::dot_part<NCols>(step, part, nvalid, records, acc);
    }

    // dot_part on paired records.
    template <int NCols>
    __device__ __forceinline__ static void paired_dot_part(const uint8_t* step, int part, int nvalid,
                                                           const uint8_t* records, float (&acc)[NCols]) {
        using rec = detail::records<NCols>;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (i >= nvalid) break;
            const uint8_t* block = step + (4 * part + i) * int(sizeof(mxfp4));
            const float dw = detail::mxfp4_bits::scale(block, 0);
            uint32_t q[4];
            ptx::load_words<align>(block + detail::mxfp4_bits::qs_at, q);
            const uint8_t* record = records + i * rec::bytes;
            if constexpr (NCols == 1) {
                int x[8];
                rec::quants(record, 0, x);
                int positive = 0, negative = 0;
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    detail::mxfp4_dot_word_signed_parts(q[j], x[2 * j], x[2 * j + 1], positive, negative);
                acc[0] = detail::fma_rn(detail::mul_rn(dw, rec::aux(record, 0).d), detail::to_float(positive - negative),
                                        acc[0]);
            } else {
                uint32_t v[8];
#pragma unroll
                for (int j = 0; j < 4; ++j) detail::mxfp4_decode_word_paired(q[j], v[2 * j], v[2 * j + 1]);
                detail::accumulate_block32<NCols>(v, dw, record, acc);
            }
        }
    }

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
