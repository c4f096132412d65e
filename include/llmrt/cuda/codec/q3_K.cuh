// Q3_K on the device (layout in llmrt/quant/q3_K.hpp): hmask[32] at 0, qs[64] at 32, scales[12]
// at 96, d at 108. Element e = 32b + l: low 2 bits (qs[32(b/4) + l] >> 2(b%4)) & 3, and
// q = low − 4 unless bit b of hmask[l] is set; sub-blocks of 16 with six-bit scales minus 32.
//
// Canonical order, per 32-block with I = sc_a·Σ_a q·qx + sc_b·Σ_b q·qx (integers):
//   sd = fma(dx, I, sd); after each 4 blocks: acc = fma(d, sd, acc), sd = 0.
// Both mmvq forms compute it with 4·I and d/4 (scale_words_times4): the same bits.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/cuda/codec.cuh"
#include "llmrt/quant/q3_K.hpp"

namespace llmrt::cuda {

template <>
struct device_codec<q3_K> {
    static constexpr int align = 2;
    // Where the fields start (llmrt::q3_K): hmask, qs, scales, d.
    static constexpr int hmask_at = int(offsetof(q3_K, hmask)), qs_at = int(offsetof(q3_K, qs));
    static constexpr int scales_at = int(offsetof(q3_K, scales)), d_at = int(offsetof(q3_K, d));
    // mma_step and dot_part read at fixed offsets where mmvq knows their rows' address modulo 4
    // (codec.cuh, mmvq.cuh); every word they read sits at a multiple of 4 bytes from the block
    // start, so at that same residue.
    static constexpr unsigned reads_at_residue = detail::residue_in_mma_step | detail::residue_in_dot_part;

    // The signed quants of 4 elements of 32-block b: `low` their qs word shifted right by
    // 2(b%4), `hmask` their hmask word. A clear hmask bit makes low − 4, i.e. low | 0xfc: one LOP3
    // (merge_bits_not), where the same formula in C++ compiled to three. On the H100, 8 columns,
    // shared X: 4096×4096 4.30 -> 4.17 µs, 14336×4096 13.08 -> 11.84 µs, 4096×14336 13.42 -> 12.45
    // µs, 128256×4096 105.3 -> 103.2 µs; 1 to 4 columns (the dp4a form) unchanged.
    __device__ __forceinline__ static uint32_t quants(uint32_t low, uint32_t hmask, int b) {
        const uint32_t high_set = ptx::spread_byte_signs(hmask << (7 - b));
        return ptx::merge_bits_not(low, high_set, 0x03030303u);
    }

    // The eight six-bit scales v of sub-blocks 8·part .. 8·part+7 (low four bits in s[0..1], high
    // two in s[2]) as int8 bytes 4·(v − 32) of two words: v's six bits at bits 2..7, the top one
    // flipped (4v − 128 either way), three integer operations a word fewer than v − 32. Both
    // forms take each integer sum four times so, and a quarter of d: exact, the same bits.
    __device__ __forceinline__ static void scale_words_times4(const uint32_t (&s)[3], int part, uint32_t (&words)[2]) {
#pragma unroll
        for (int g = 0; g < 2; ++g) {
            // This part's nibbles at bits 2..5: a rotation by 2 or by −2 (one operation where part
            // is not known at compile time).
            const uint32_t low = __funnelshift_l(s[g], s[g], 2 - 4 * part);
            const uint32_t high = s[2] << (6 - 2 * (2 * part + g));  // their two high bits at 6..7
            words[g] = ((low & 0x3c3c3c3cu) | (high & 0xc0c0c0c0u)) ^ 0x80808080u;
        }
    }

    __device__ static float dot_q8_1(const q3_K& w, const q8_1* x) {
        float sd = 0.0f;
        for (int b = 0; b < 8; ++b) {
            const detail::q8_1_words xq = detail::load_q8_1(x[b]);
            int sa = 0, sb = 0;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const uint32_t low = detail::bytes_to_u32(w.qs + 32 * (b / 4) + 4 * j) >> (2 * (b % 4));
                const int v = int(quants(low, detail::bytes_to_u32(w.hmask + 4 * j), b));
                if (j < 4) sa = __dp4a(v, xq.q[j], sa);
                else sb = __dp4a(v, xq.q[j], sb);
            }
            const int I = q3_K_scale(w.scales, 2 * b) * sa + q3_K_scale(w.scales, 2 * b + 1) * sb;
            sd = detail::fma_rn(xq.d, detail::to_float(I), sd);
        }
        return detail::mul_rn(__half2float(__ushort_as_half(w.d)), sd);
    }

    // The dp4a form takes each quant as u = low + 4·high (0..7), so q = u − 4 and
    //   Σ q·x = Σ u·x − 4·Σ x   over a 16-element sub-block (Σ x: the record's sums).
    // u is formed in place: 32-block i of the part keeps its low bits at bit 2e of their bytes
    // (e = i, but 2 for i = 3, whose bits move down two places so that u·4^e fits a byte) and
    // its high bit (bit 4·part + i of hmask) goes to bit 2e + 2 by rotating the hmask word left
    // by 2e + 2 − i − 4·part (mod 32: every byte's bit lands in its own byte, and the other bits
    // are masked off), one rotation per word for i = 1 and 3 alike; the dot then carries the
    // factor 4^e, which one exact shift removes. Three operations per 4 quants and a rotation.
    template <int NCols, int Residue = -1>
    __device__ __forceinline__ static void dot_part(const uint8_t* block, int part, int, const uint8_t* records,
                                                    float (&acc)[NCols]) {
        using rec = detail::records<NCols>;
        uint32_t q[8], hmask[8], s[3], scales[2];
        ptx::load_words_at<align, Residue>(block + qs_at + 32 * part, q);
        ptx::load_words_at<align, Residue>(block, hmask);
        ptx::load_words_at<align, Residue>(block + scales_at, s);
        scale_words_times4(s, part, scales);
        const float d = detail::mul_rn(0.25f, ptx::load_fp16(block + d_at));  // the scales are times 4
        float sd[NCols];
#pragma unroll
        for (int c = 0; c < NCols; ++c) sd[c] = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int e = i < 3 ? i : 2;
            const uint32_t low_mask = 0x03030303u << (2 * e), high_mask = 0x04040404u << (2 * e);
            uint32_t v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const uint32_t low = i < 3 ? q[j] : q[j] >> 2;
                v[j] = (low & low_mask) | (__funnelshift_l(hmask[j], hmask[j], 2 * e + 2 - i - 4 * part) & high_mask);
            }
            // Per column, the sub-blocks' Σ q·qx = Σ u·qx / 4^e − 4·Σ qx (|.| <= 4·127·16, so
            // 16-bit halves), times four times their scales (bytes 2(i%2), 2(i%2) + 1 of word
            // i/2) in one dp2a: 4·I, whose sums are those of I times 4 exactly.
            const uint8_t* record = records + i * rec::bytes;
            const int word = int(scales[i >> 1]);
#pragma unroll
            for (int c = 0; c < NCols; ++c) {
                int sa, sb;
                const q8_1_aux xa = detail::column_sub16_dots<NCols>(v, record, c, sa, sb);
                const int sums = ptx::pack_low_halves((sa >> (2 * e)) - 4 * xa.sum_lo, (sb >> (2 * e)) - 4 * xa.sum_hi);
                const int I = ptx::dp2a(sums, word, 0, i & 1);
                sd[c] = detail::fma_rn(xa.d, detail::to_float(I), sd[c]);
            }
        }
#pragma unroll
        for (int c = 0; c < NCols; ++c) acc[c] = detail::fma_rn(d, sd[c], acc[c]);
    }

    // One k16 mma per sub-block (the scales differ and sc·q can reach 128).
    template <int NCols, int Residue = -1>
    __device__ __forceinline__ static void mma_step(const uint8_t* row_lo, const uint8_t* row_hi, int,
                                                    const uint8_t* records, int lane, float (&acc)[2][2][2]) {
        using rec = detail::records<NCols>;
        const int t = lane & 3;
        float d[2];
        uint32_t s[2][3], hm_a[2], hm_b[2];
#pragma unroll
        for (int ri = 0; ri < 2; ++ri) {
            const uint8_t* block = ri ? row_hi : row_lo;
            d[ri] = detail::mul_rn(0.25f, ptx::load_fp16(block + d_at));  // the scales are times 4
            ptx::load_words_at<align, Residue>(block + scales_at, s[ri]);
            hm_a[ri] = ptx::load_u32_at<align, Residue>(block + hmask_at + 4 * t);
            hm_b[ri] = ptx::load_u32_at<align, Residue>(block + hmask_at + 16 + 4 * t);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            uint32_t qa[2], qb[2], scales[2][2];
#pragma unroll
            for (int ri = 0; ri < 2; ++ri) {
                const uint8_t* block = ri ? row_hi : row_lo;
                qa[ri] = ptx::load_u32_at<align, Residue>(block + qs_at + 32 * h + 4 * t);
                qb[ri] = ptx::load_u32_at<align, Residue>(block + qs_at + 16 + 32 * h + 4 * t);
                scale_words_times4(s[ri], h, scales[ri]);  // read whole by the dp2a below
            }
            float sd[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int b = 4 * h + i;
                const uint8_t* record = records + b * rec::bytes;
                uint32_t b0, b1;
                rec::b_fragment(record, lane, b0, b1);
                uint32_t va[2], vb[2];
#pragma unroll
                for (int ri = 0; ri < 2; ++ri) {
                    va[ri] = quants(qa[ri] >> (2 * i), hm_a[ri], b);
                    vb[ri] = quants(qb[ri] >> (2 * i), hm_b[ri], b);
                }
                int ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
                ptx::mma_s8_m16n8k16(ca, va[0], va[1], b0);
                ptx::mma_s8_m16n8k16(cb, vb[0], vb[1], b1);
                q8_1_aux x[2];
                rec::aux_pair(record, lane, x);
                // Signed quants: no offset. As in dot_part, the two sub-block sums as 16-bit halves
                // against the row's scale bytes in one dp2a: 4·I, |4·I| <= 4·2·32·4·127·16, below
                // 2^22, so started from float_bias_bits, and the sums of 4·I are those of I times
                // 4 exactly, which the quarter of d undoes. Against each scale as a signed byte and
                // two multiply-adds, on the H100, 8 columns, shared X: 128256×4096 112.2 -> 106.3 µs,
                // 14336×4096 13.9 -> 13.0 µs, 4096×14336 14.0 -> 13.1 µs.
#pragma unroll
                for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                    for (int ci = 0; ci < 2; ++ci) {
                        const int sums = ptx::pack_low_halves(ca[2 * ri + ci], cb[2 * ri + ci]);
                        const int I = ptx::dp2a(sums, int(scales[ri][i >> 1]), detail::float_bias_bits, i & 1);
                        sd[ri][ci] = detail::fma_rn(x[ci].d, detail::from_biased(I), sd[ri][ci]);
                    }
            }
#pragma unroll
            for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                for (int ci = 0; ci < 2; ++ci) acc[h][ri][ci] = detail::fma_rn(d[ri], sd[ri][ci], acc[h][ri][ci]);
        }
    }
};

}  // namespace llmrt::cuda
