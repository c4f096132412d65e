// Q8_0 on the device (layout in llmrt/quant/q8_0.hpp): d (fp16) at 0, qs[32] int8 at 2.
//
// Canonical order, per 32-block b with I = Σ qs·qx:  acc = fma(dw·dx, I, acc).
#pragma once

#include "llmrt/cuda/codec.cuh"
#include "llmrt/quant/q8_0.hpp"

namespace llmrt::cuda {

template <>
struct device_codec<q8_0> {
    static constexpr int align = 2;

    __device__ static float dot_q8_1(const q8_0& w, const q8_1* x) {
        const detail::q8_1_words xq = detail::load_q8_1(x[0]);
        const uint8_t* qs = reinterpret_cast<const uint8_t*>(w.qs);
        int sum = 0;
#pragma unroll
        for (int j = 0; j < 8; ++j) sum = __dp4a(int(detail::bytes_to_u32(qs + 4 * j)), xq.q[j], sum);
        return detail::mul_rn(detail::mul_rn(__half2float(__ushort_as_half(w.d)), xq.d), detail::to_float(sum));
    }

    template <int NCols>
    __device__ __forceinline__ static void dot_part(const uint8_t* step, int part, int nvalid, const uint8_t* records,
                                                    float (&acc)[NCols]) {
        using rec = detail::records<NCols>;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (i >= nvalid) break;
            const uint8_t* block = step + (4 * part + i) * int(sizeof(q8_0));
            const float dw = ptx::load_fp16(block);
            uint32_t w[8];
            ptx::load_words<align>(block + 2, w);
            const uint8_t* record = records + i * rec::bytes;
#pragma unroll
            for (int c = 0; c < NCols; ++c) {
                int x[8];
                rec::quants(record, c, x);
                int sum = 0;
#pragma unroll
                for (int j = 0; j < 8; ++j) sum = __dp4a(int(w[j]), x[j], sum);
                const float dx = rec::aux(record, c).d;
                acc[c] = detail::fma_rn(detail::mul_rn(dw, dx), detail::to_float(sum), acc[c]);
            }
        }
    }

    template <int NCols>
    __device__ __forceinline__ static void mma_step(const uint8_t* row_lo, const uint8_t* row_hi, int nvalid,
                                                    const uint8_t* records, int lane, float (&acc)[2][2][2]) {
        using rec = detail::records<NCols>;
        const int t = lane & 3;
#pragma unroll
        for (int b = 0; b < 8; ++b) {
            if (b >= nvalid) break;
            const uint8_t* record = records + b * rec::bytes;
            uint32_t b0, b1;
            rec::b_fragment(record, lane, b0, b1);
            uint32_t a[4];
            float dw[2];
#pragma unroll
            for (int ri = 0; ri < 2; ++ri) {
                const uint8_t* block = (ri ? row_hi : row_lo) + b * int(sizeof(q8_0));
                dw[ri] = ptx::load_fp16(block);
                a[ri] = ptx::load_u32<align>(block + 2 + 4 * t);
                a[ri + 2] = ptx::load_u32<align>(block + 18 + 4 * t);
            }
            int c[4] = {0, 0, 0, 0};
            ptx::mma_s8_m16n8k32(c, a, b0, b1);
            q8_1_aux x[2];
            rec::aux_pair(record, lane, x);
#pragma unroll
            for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                for (int ci = 0; ci < 2; ++ci)
                    acc[b / 4][ri][ci] = detail::fma_rn(detail::mul_rn(dw[ri], x[ci].d),
                                                        detail::to_float(c[2 * ri + ci]), acc[b / 4][ri][ci]);
        }
    }
};

}  // namespace llmrt::cuda
