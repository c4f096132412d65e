// Q6_K on the device (layout in llmrt/quant/q6_K.hpp): ql[128] at 0, qh[64] at 128, scales[16]
// (int8) at 192, d at 208. Element e = 128p + 32i + l: v = ((ql[64p + l + 32(i&1)] >> 4(i/2)) & 15)
// | ((qh[32p + l] >> 2i) & 3) << 4, q = v − 32; sub-blocks of 16 with int8 scales.
// The kernels multiply v (0..63) and subtract 32·Σqx from the exact sums in the records.
//
// Canonical order, per 32-block with I = sc_a·(Σ_a v·qx − 32·Σ_a qx) + sc_b·(...) (integers):
//   sd = fma(dx, I, sd); after each 4 blocks: acc = fma(d, sd, acc), sd = 0.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/cuda/codec.cuh"
#include "llmrt/quant/q6_K.hpp"

namespace llmrt::cuda {

template <>
struct device_codec<q6_K> {
    static constexpr int align = 2;
    // Where the fields start (llmrt::q6_K): ql, qh, scales, d.
    static constexpr int ql_at = int(offsetof(q6_K, ql)), qh_at = int(offsetof(q6_K, qh));
    static constexpr int scales_at = int(offsetof(q6_K, scales)), d_at = int(offsetof(q6_K, d));
    // mma_step reads at fixed offsets where mmvq knows its rows' address modulo 4 (codec.cuh); every
    // word it reads sits at a multiple of 4 bytes from the block start, so at that same residue.
    static constexpr unsigned reads_at_residue = detail::residue_in_mma_step;

    // v of 4 elements of 32-block i of a half: their ql word (already the right one of the two
    // 32-byte rows) and their qh word.
    __device__ __forceinline__ static uint32_t values(uint32_t ql, uint32_t qh, int i) {
        return ((ql >> (4 * (i / 2))) & 0x0f0f0f0fu) | (((qh >> (2 * i)) & 0x03030303u) << 4);
    }
    __device__ __forceinline__ static int scale_byte(uint32_t w, int byte) { return int(int8_t(uint8_t(w >> (8 * byte)))); }

    __device__ static float dot_q8_1(const q6_K& w, const q8_1* x) {
        float sd = 0.0f;
        for (int b = 0; b < 8; ++b) {
            const detail::q8_1_words xq = detail::load_q8_1(x[b]);
            const int p = b / 4, i = b % 4;
            int sa = 0, sb = 0;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                const int v = int(values(detail::bytes_to_u32(w.ql + 64 * p + 32 * (i & 1) + 4 * k),
                                         detail::bytes_to_u32(w.qh + 32 * p + 4 * k), i));
                if (k < 4) sa = __dp4a(v, xq.q[k], sa);
                else sb = __dp4a(v, xq.q[k], sb);
            }
            const int I = int(w.scales[2 * b]) * (sa - 32 * xq.sum_lo) + int(w.scales[2 * b + 1]) * (sb - 32 * xq.sum_hi);
            sd = detail::fma_rn(xq.d, detail::to_float(I), sd);
        }
        return detail::mul_rn(__half2float(__ushort_as_half(w.d)), sd);
    }

    template <int NCols>
    __device__ __forceinline__ static void dot_part(const uint8_t* block, int part, int, const uint8_t* records,
                                                    float (&acc)[NCols]) {
        using rec = detail::records<NCols>;
        uint32_t ql[16], qh[8], scales[2];
        ptx::load_words<align>(block + ql_at + 64 * part, ql);
        ptx::load_words<align>(block + qh_at + 32 * part, qh);
        ptx::load_words<align>(block + scales_at + 8 * part, scales);
        const float d = ptx::load_fp16(block + d_at);
        float sd[NCols];
#pragma unroll
        for (int c = 0; c < NCols; ++c) sd[c] = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            uint32_t v[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) v[k] = values(ql[8 * (i & 1) + k], qh[k], i);
            const int sc_a = scale_byte(scales[i >> 1], 2 * (i & 1)), sc_b = scale_byte(scales[i >> 1], 2 * (i & 1) + 1);
            detail::accumulate_sub16<NCols>(v, sc_a, sc_b, 0, 32, records + i * rec::bytes, sd);
        }
#pragma unroll
        for (int c = 0; c < NCols; ++c) acc[c] = detail::fma_rn(d, sd[c], acc[c]);
    }

    template <int NCols, int Residue = -1>
    __device__ __forceinline__ static void mma_step(const uint8_t* row_lo, const uint8_t* row_hi, int,
                                                    const uint8_t* records, int lane, float (&acc)[2][2][2]) {
        using rec = detail::records<NCols>;
        const int t = lane & 3;
        float d[2];
#pragma unroll
        for (int ri = 0; ri < 2; ++ri) d[ri] = ptx::load_fp16((ri ? row_hi : row_lo) + d_at);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            uint32_t qh_a[2], qh_b[2], scales[2][2];
#pragma unroll
            for (int ri = 0; ri < 2; ++ri) {
                const uint8_t* block = ri ? row_hi : row_lo;
                qh_a[ri] = ptx::load_u32_at<align, Residue>(block + qh_at + 32 * h + 4 * t);
                qh_b[ri] = ptx::load_u32_at<align, Residue>(block + qh_at + 16 + 32 * h + 4 * t);
                ptx::load_words_at<align, Residue>(block + scales_at + 8 * h, scales[ri]);
            }
            float sd[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int b = 4 * h + i;
                const uint8_t* record = records + b * rec::bytes;
                uint32_t b0, b1;
                rec::b_fragment(record, lane, b0, b1);
                uint32_t va[2], vb[2];
                int sc_a[2], sc_b[2];
#pragma unroll
                for (int ri = 0; ri < 2; ++ri) {
                    const uint8_t* ql = (ri ? row_hi : row_lo) + ql_at + 64 * h + 32 * (i & 1) + 4 * t;
                    va[ri] = values(ptx::load_u32_at<align, Residue>(ql), qh_a[ri], i);
                    vb[ri] = values(ptx::load_u32_at<align, Residue>(ql + 16), qh_b[ri], i);
                    sc_a[ri] = scale_byte(scales[ri][i >> 1], 2 * (i & 1));
                    sc_b[ri] = scale_byte(scales[ri][i >> 1], 2 * (i & 1) + 1);
                }
                int ca[4] = {0, 0, 0, 0}, cb[4] = {0, 0, 0, 0};
                ptx::mma_s8_m16n8k16(ca, va[0], va[1], b0);
                ptx::mma_s8_m16n8k16(cb, vb[0], vb[1], b1);
                q8_1_aux x[2];
                rec::aux_pair(record, lane, x);
                detail::accumulate_sub16_mma(ca, cb, sc_a, sc_b, 32, x, sd);
            }
#pragma unroll
            for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                for (int ci = 0; ci < 2; ++ci) acc[h][ri][ci] = detail::fma_rn(d[ri], sd[ri][ci], acc[h][ri][ci]);
        }
    }
};

}  // namespace llmrt::cuda
