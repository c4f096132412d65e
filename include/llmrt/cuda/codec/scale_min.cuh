// The device codec shared by Q4_K and Q5_K, the k-quants with a six-bit scale and min per
// 32-element sub-block: d, dmin (fp16) at 0, scales[12] at 4, then (Q5_K only) qh[32] at 16, then
// qs[128]. Sub-block j is nibble j%2 of qs[32(j/2) + l], plus bit j of qh[l] as its fifth bit.
// Each type names only where its qs start and how a word of 4 quants is formed (Bits below).
//
// Canonical order, per 32-block j with I = sc_j·Σ q·qx (integer):
//   sd = fma(dx, I, sd), sm = fma(m_j, d_sum, sm)   (d_sum = dx·Σqx, exact in the records);
//   after each 4 blocks: acc = fma(d, sd, acc), acc = fma(−dmin, sm, acc), sd = sm = 0.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/cuda/codec.cuh"
#include "llmrt/quant/q4_K.hpp"

namespace llmrt::cuda::detail {

// The six-bit scales and mins of sub-blocks 4·part .. 4·part+3 of a Q4_K/Q5_K super-block, one
// per byte, from its 12 packed scale bytes s[0..2] (unpack_k4_scale_min, four at a time).
__device__ __forceinline__ void k4_scale_min_words(const uint32_t (&s)[3], int part, uint32_t& scales,
                                                   uint32_t& mins) {
    if (part == 0) {
        scales = s[0] & 0x3f3f3f3fu;
        mins = s[1] & 0x3f3f3f3fu;
    } else {
        scales = (s[2] & 0x0f0f0f0fu) | ((s[0] >> 2) & 0x30303030u);
        mins = ((s[2] >> 4) & 0x0f0f0f0fu) | ((s[1] >> 2) & 0x30303030u);
    }
}

// Bits is a type with
//   static constexpr int qs_offset                      where qs start in the block
//   static constexpr bool has_qh                        whether a fifth bit comes from qh[32]
//   static constexpr int qh_offset                      where qh starts, where has_qh
//   static uint32_t quants(uint32_t qs, uint32_t qh, int j)        4 quants of sub-block j
//   static uint32_t quants_scaled(uint32_t qs, uint32_t qh, int j) the same times 2^scale_shift(j)
//   static int scale_shift(int j)                                   (a byte must still hold them)
template <class Block, class Bits>
struct scale_min_codec {
    static constexpr int align = 16;
    // Where d (then dmin, read as one word with it) and the packed scales start.
    static constexpr int dm_at = int(offsetof(Block, d)), scales_at = int(offsetof(Block, scales));
    static_assert(offsetof(Block, dmin) == offsetof(Block, d) + 2, "scale_min_codec: dmin follows d (read as one word)");

    __device__ static float dot_q8_1(const Block& w, const q8_1* x) {
        float sd = 0.0f, sm = 0.0f;
        for (int j = 0; j < 8; ++j) {
            const q8_1_words xq = load_q8_1(x[j]);
            int sum = 0;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                uint32_t qh = 0;
                if constexpr (Bits::has_qh) qh = bytes_to_u32(w.qh + 4 * k);
                sum = ptx::dp4a_u8s8(Bits::quants(bytes_to_u32(w.qs + 32 * (j / 2) + 4 * k), qh, j), xq.q[k], sum);
            }
            const k4_scale_min sm_j = unpack_k4_scale_min(w.scales, j);
            sd = fma_rn(xq.d, to_float(sm_j.scale * sum), sd);
            sm = fma_rn(to_float(sm_j.min), mul_rn(xq.d, to_float(xq.sum_lo + xq.sum_hi)), sm);
        }
        const float d = __half2float(__ushort_as_half(w.d)), dmin = __half2float(__ushort_as_half(w.dmin));
        return fma_rn(-dmin, sm, mul_rn(d, sd));
    }

    template <int NCols>
    __device__ __forceinline__ static void dot_part(const uint8_t* block, int part, int, const uint8_t* records,
                                                    float (&acc)[NCols]) {
        using rec = detail::records<NCols>;
        const uint32_t dm = ptx::load_u32<align>(block + dm_at);
        const float d = ptx::fp16_bits_to_float(dm & 0xffffu), dmin = ptx::fp16_bits_to_float(dm >> 16);
        uint32_t s[3], scales, mins, q[16], qh[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        ptx::load_words<4>(block + scales_at, s);
        k4_scale_min_words(s, part, scales, mins);
        if constexpr (Bits::has_qh) ptx::load_words<align>(block + Bits::qh_offset, qh);
        ptx::load_words<align>(block + Bits::qs_offset + 64 * part, q);
        float sd[NCols], sm[NCols];
#pragma unroll
        for (int c = 0; c < NCols; ++c) sd[c] = sm[c] = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int j = 4 * part + i;
            uint32_t v[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) v[k] = Bits::quants_scaled(q[8 * (i / 2) + k], qh[k], j);
            const int sc = byte_of(scales, i);
            const float m = to_float(byte_of(mins, i));
            const uint8_t* record = records + i * rec::bytes;
#pragma unroll
            for (int c = 0; c < NCols; ++c) {
                const int sum = record_dot<NCols, true>(v, record, c);
                const q8_1_aux xa = rec::aux(record, c);
                sd[c] = fma_rn(xa.d, to_float((sc * sum) >> Bits::scale_shift(j)), sd[c]);
                sm[c] = fma_rn(m, xa.d_sum, sm[c]);
            }
        }
#pragma unroll
        for (int c = 0; c < NCols; ++c) {
            acc[c] = fma_rn(d, sd[c], acc[c]);
            acc[c] = fma_rn(-dmin, sm[c], acc[c]);
        }
    }

    template <int NCols>
    __device__ __forceinline__ static void mma_step(const uint8_t* row_lo, const uint8_t* row_hi, int,
                                                    const uint8_t* records, int lane, float (&acc)[2][2][2]) {
        using rec = detail::records<NCols>;
        const int t = lane & 3;
        float d[2], dmin[2];
        uint32_t s[2][3], qh_a[2] = {0, 0}, qh_b[2] = {0, 0};
#pragma unroll
        for (int ri = 0; ri < 2; ++ri) {
            const uint8_t* block = ri ? row_hi : row_lo;
            const uint32_t dm = ptx::load_u32<align>(block + dm_at);
            d[ri] = ptx::fp16_bits_to_float(dm & 0xffffu);
            dmin[ri] = ptx::fp16_bits_to_float(dm >> 16);
            ptx::load_words<4>(block + scales_at, s[ri]);
            if constexpr (Bits::has_qh) {
                qh_a[ri] = ptx::load_u32<4>(block + Bits::qh_offset + 4 * t);
                qh_b[ri] = ptx::load_u32<4>(block + Bits::qh_offset + 16 + 4 * t);
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            uint32_t scales[2], mins[2];
#pragma unroll
            for (int ri = 0; ri < 2; ++ri) k4_scale_min_words(s[ri], h, scales[ri], mins[ri]);
            float sd[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}}, sm[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
            uint32_t wa[2] = {0, 0}, wb[2] = {0, 0};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int j = 4 * h + i;
                if (i % 2 == 0) {
#pragma unroll
                    for (int ri = 0; ri < 2; ++ri) {
                        const uint8_t* block = ri ? row_hi : row_lo;
                        wa[ri] = ptx::load_u32<4>(block + Bits::qs_offset + 32 * (j / 2) + 4 * t);
                        wb[ri] = ptx::load_u32<4>(block + Bits::qs_offset + 16 + 32 * (j / 2) + 4 * t);
                    }
                }
                const uint8_t* record = records + j * rec::bytes;
                uint32_t b0, b1;
                rec::b_fragment(record, lane, b0, b1);
                uint32_t a[4];
                int sc[2];
                float m[2];
#pragma unroll
                for (int ri = 0; ri < 2; ++ri) {
                    a[ri] = Bits::quants(wa[ri], qh_a[ri], j);
                    a[ri + 2] = Bits::quants(wb[ri], qh_b[ri], j);
                    sc[ri] = byte_of(scales[ri], i);
                    m[ri] = to_float(byte_of(mins[ri], i));
                }
                int c[4] = {0, 0, 0, 0};
                ptx::mma_s8_m16n8k32(c, a, b0, b1);
                q8_1_aux x[2];
                rec::aux_pair(record, lane, x);
#pragma unroll
                for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                    for (int ci = 0; ci < 2; ++ci) {
                        sd[ri][ci] = fma_rn(x[ci].d, to_float(sc[ri] * c[2 * ri + ci]), sd[ri][ci]);
                        sm[ri][ci] = fma_rn(m[ri], x[ci].d_sum, sm[ri][ci]);
                    }
            }
#pragma unroll
            for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                for (int ci = 0; ci < 2; ++ci) {
                    acc[h][ri][ci] = fma_rn(d[ri], sd[ri][ci], acc[h][ri][ci]);
                    acc[h][ri][ci] = fma_rn(-dmin[ri], sm[ri][ci], acc[h][ri][ci]);
                }
        }
    }
};

}  // namespace llmrt::cuda::detail
