// Q2_K on the device (layout in llmrt/quant/q2_K.hpp): scales[16] at 0 (low nibble scale, high
// nibble min of each 16-element sub-block), qs[64] at 16, d at 80, dmin at 82.
// Element e = 128h + 32i + l of the super-block is (qs[32h + l] >> 2i) & 3: 32-block b = 4h + i
// reads the 32 bytes of half h at shift 2i; its sub-blocks are 2b (l < 16) and 2b + 1.
//
// Canonical order, per 32-block with I = Σ sc·q·qx and M = Σ m·qx (integers):
//   sd = fma(dx, I, sd), sm = fma(dx, M, sm); after each 4 blocks: acc = fma(d, sd, acc),
//   acc = fma(−dmin, sm, acc), sd = sm = 0.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/cuda/codec.cuh"
#include "llmrt/quant/q2_K.hpp"

namespace llmrt::cuda {

template <>
struct device_codec<q2_K> {
    static constexpr int align = 4;
    // Where the fields start (llmrt::q2_K): scales, qs, then d and dmin, read as one word.
    static constexpr int scales_at = int(offsetof(q2_K, scales)), qs_at = int(offsetof(q2_K, qs));
    static constexpr int dm_at = int(offsetof(q2_K, d));
    static_assert(offsetof(q2_K, dmin) == offsetof(q2_K, d) + 2, "q2_K: dmin follows d (read as one word)");

    // The 2-bit quants of 4 elements, at shift 2i of their bytes.
    __device__ __forceinline__ static uint32_t quants(uint32_t w, int i) { return (w >> (2 * i)) & 0x03030303u; }
    // The scale (low nibble) and min (high nibble) of each of the 8 sub-blocks of two scale words,
    // a byte each.
    __device__ __forceinline__ static void scales_and_mins(const uint32_t (&w)[2], uint32_t (&sc)[2], uint32_t (&mins)[2]) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            sc[h] = w[h] & 0x0f0f0f0fu;
            mins[h] = (w[h] >> 4) & 0x0f0f0f0fu;
        }
    }

    __device__ static float dot_q8_1(const q2_K& w, const q8_1* x) {
        const uint8_t* qs = w.qs;
        float sd = 0.0f, sm = 0.0f;
        for (int b = 0; b < 8; ++b) {
            const detail::q8_1_words xq = detail::load_q8_1(x[b]);
            const int h = b / 4, i = b % 4;
            int sa = 0, sb = 0;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int v = int(quants(detail::bytes_to_u32(qs + 32 * h + 4 * j), i));
                if (j < 4) sa = __dp4a(v, xq.q[j], sa);
                else sb = __dp4a(v, xq.q[j], sb);
            }
            const int sc_a = w.scales[2 * b], sc_b = w.scales[2 * b + 1];
            const int I = (sc_a & 15) * sa + (sc_b & 15) * sb;
            const int M = (sc_a >> 4) * xq.sum_lo + (sc_b >> 4) * xq.sum_hi;
            sd = detail::fma_rn(xq.d, detail::to_float(I), sd);
            sm = detail::fma_rn(xq.d, detail::to_float(M), sm);
        }
        const float d = __half2float(__ushort_as_half(w.d)), dmin = __half2float(__ushort_as_half(w.dmin));
        return detail::fma_rn(-dmin, sm, detail::mul_rn(d, sd));
    }

    template <int NCols>
    __device__ __forceinline__ static void dot_part(const uint8_t* block, int part, int, const uint8_t* records,
                                                    float (&acc)[NCols]) {
        using rec = detail::records<NCols>;
        uint32_t q[8], scales[2];
        ptx::load_words<align>(block + qs_at + 32 * part, q);
        ptx::load_words<align>(block + scales_at + 8 * part, scales);
        const uint32_t dm = ptx::load_u32<align>(block + dm_at);
        const float d = ptx::fp16_bits_to_float(dm & 0xffffu), dmin = ptx::fp16_bits_to_float(dm >> 16);
        uint32_t sc[2], mins[2];
        scales_and_mins(scales, sc, mins);
        float sd[NCols], sm[NCols];
#pragma unroll
        for (int c = 0; c < NCols; ++c) sd[c] = sm[c] = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            // The quants stay at bit 2i of their bytes (q·4^i <= 192): the sums carry a factor 4^i
            // that one shift removes, exactly.
            uint32_t v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) v[j] = q[j] & (0x03030303u << (2 * i));
            // Sub-blocks 2i and 2i + 1 of the part: bytes 2(i%2) and 2(i%2) + 1 of word i/2, which
            // one dp2a takes against the two sums packed as 16-bit halves (|Σ q·qx| <= 3·127·16,
            // |Σ qx| <= 128·16): I and M exactly, in two instructions each instead of four.
            const int sc_word = int(sc[i >> 1]), min_word = int(mins[i >> 1]);
            const uint8_t* record = records + i * rec::bytes;
#pragma unroll
            for (int c = 0; c < NCols; ++c) {
                int sa, sb;
                const q8_1_aux xa = detail::column_sub16_dots<NCols>(v, record, c, sa, sb);
                const int sums = ptx::pack_low_halves(sa >> (2 * i), sb >> (2 * i));
                const int I = ptx::dp2a(sums, sc_word, 0, i & 1);
                const int M = ptx::dp2a(ptx::pack_low_halves(xa.sum_lo, xa.sum_hi), min_word, 0, i & 1);
                sd[c] = detail::fma_rn(xa.d, detail::to_float(I), sd[c]);
                sm[c] = detail::fma_rn(xa.d, detail::to_float(M), sm[c]);
            }
        }
#pragma unroll
        for (int c = 0; c < NCols; ++c) {
            acc[c] = detail::fma_rn(d, sd[c], acc[c]);
            acc[c] = detail::fma_rn(-dmin, sm[c], acc[c]);
        }
    }

    // The scale is folded into the int8 A operand (sc·q <= 45), so one mma gives I. M takes one
    // dp2a per row and column: the column's two sub-block sums as 16-bit halves against the
    // row's min bytes, started from float_bias_bits (|M| <= 2·15·2032, below 2^22), which
    // from_biased converts on an FMA pipe. Against a second mma with each min repeated in every
    // byte (the same integers), on the H100, 8 columns, shared X: 128256×4096 97.3 -> 92.0 µs,
    // 14336×4096 11.9 -> 11.5 µs, 4096×4096 4.25 -> 4.10 µs.
    template <int NCols>
    __device__ __forceinline__ static void mma_step(const uint8_t* row_lo, const uint8_t* row_hi, int,
                                                    const uint8_t* records, int lane, float (&acc)[2][2][2]) {
        using rec = detail::records<NCols>;
        const int t = lane & 3;
        float d[2], dmin[2];
#pragma unroll
        for (int ri = 0; ri < 2; ++ri) {
            const uint32_t dm = ptx::load_u32<align>((ri ? row_hi : row_lo) + dm_at);
            d[ri] = ptx::fp16_bits_to_float(dm & 0xffffu);
            dmin[ri] = ptx::fp16_bits_to_float(dm >> 16);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            uint32_t qa[2], qb[2], sc[2][2], mins[2][2];
#pragma unroll
            for (int ri = 0; ri < 2; ++ri) {
                const uint8_t* block = ri ? row_hi : row_lo;
                qa[ri] = ptx::load_u32<align>(block + qs_at + 32 * h + 4 * t);
                qb[ri] = ptx::load_u32<align>(block + qs_at + 16 + 32 * h + 4 * t);
                uint32_t scales[2];
                ptx::load_words<align>(block + scales_at + 8 * h, scales);
                scales_and_mins(scales, sc[ri], mins[ri]);
            }
            float sd[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}}, sm[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const uint8_t* record = records + (4 * h + i) * rec::bytes;
                uint32_t b0, b1;
                rec::b_fragment(record, lane, b0, b1);
                uint32_t a[4];
#pragma unroll
                for (int ri = 0; ri < 2; ++ri) {
                    const int sa = 2 * (i & 1), sb = sa + 1;  // sub-blocks 2i, 2i + 1: bytes of word i/2
                    a[ri] = quants(qa[ri], i) * uint32_t(detail::byte_of(sc[ri][i >> 1], sa));
                    a[ri + 2] = quants(qb[ri], i) * uint32_t(detail::byte_of(sc[ri][i >> 1], sb));
                }
                int c[4] = {0, 0, 0, 0};
                ptx::mma_s8_m16n8k32(c, a, b0, b1);
                q8_1_aux x[2];
                rec::aux_pair_whole(record, lane, x);
                int sums[2];
#pragma unroll
                for (int ci = 0; ci < 2; ++ci) sums[ci] = ptx::pack_low_halves(x[ci].sum_lo, x[ci].sum_hi);
#pragma unroll
                for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                    for (int ci = 0; ci < 2; ++ci) {
                        const int M = ptx::dp2a(sums[ci], int(mins[ri][i >> 1]), detail::float_bias_bits, i & 1);
                        sd[ri][ci] = detail::fma_rn(x[ci].d, detail::to_float(c[2 * ri + ci]), sd[ri][ci]);
                        sm[ri][ci] = detail::fma_rn(x[ci].d, detail::from_biased(M), sm[ri][ci]);
                    }
            }
#pragma unroll
            for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                for (int ci = 0; ci < 2; ++ci) {
                    acc[h][ri][ci] = detail::fma_rn(d[ri], sd[ri][ci], acc[h][ri][ci]);
                    acc[h][ri][ci] = detail::fma_rn(-dmin[ri], sm[ri][ci], acc[h][ri][ci]);
                }
        }
    }
};

}  // namespace llmrt::cuda
