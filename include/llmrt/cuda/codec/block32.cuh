// The mmvq forms shared by the types whose blocks are 32 elements with one scale (Q8_0, MXFP4).
// Each type names how a block's scale and its 32 values (int8, four to a word) are read (Bits).
//
// Canonical order, per 32-block b with I = Σ value·qx:  acc = fma(scale·dx, I, acc).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/cuda/codec.cuh"

namespace llmrt::cuda::detail {

// Bits is a type with
//   static constexpr int align                                     (see codec.cuh)
//   static float scale(const uint8_t* block)
//   static void values(const uint8_t* block, uint32_t (&v)[8])     v[j]: elements 4j .. 4j+3
//   static constexpr int a_parts: 1, or 2 where the values come as two parts (value = positive −
//   negative, each part in [0, 127]), one mma each
//   template <int Residue> static void a_fragment(const uint8_t* block, int t, uint32_t (&w)[2 * a_parts])
//       w[0], w[1]: elements 4t.. and 16+4t.. as int8 (their positive parts where a_parts is 2,
//       and w[2], w[3] their negative parts)
//   static constexpr bool paired_fragments: true where a_fragment gives instead elements 4t,
//   16+4t, 4t+1, 17+4t and 4t+2, 18+4t, 4t+3, 19+4t (the order of two 4-bit codes per byte). A
//   lane's A and B words cover the same 8 of the 32 k positions, so mma_step permutes its B
//   fragment within them alike: the same products, the same integer.
// where Residue is the block's address modulo 4 if known at compile time, else -1 (see
// ptx::load_words_at). mma_step takes the same for the step's rows: mmvq knows it wherever the
// rows it copied start word-aligned, which saves the unaligned reads' address work.
// The dp4a form's sum for one 32-block of scale dw whose values are the 8 words v, against
// activation record `record`, for every column: acc[c] = fma(dw·dx, Σ v·x, acc[c]).
template <int NCols>
__device__ __forceinline__ void accumulate_block32(const uint32_t (&v)[8], float dw, const uint8_t* record,
                                                   float (&acc)[NCols]) {
#pragma unroll
    for (int c = 0; c < NCols; ++c)
        acc[c] = fma_rn(mul_rn(dw, records<NCols>::aux(record, c).d), to_float(record_dot<NCols, false>(v, record, c)),
                        acc[c]);
}

template <class Block, class Bits>
struct block32_codec {
    static_assert(Block::block_size == 32, "block32_codec: the block must hold 32 elements");
    static constexpr int align = Bits::align;

    static constexpr unsigned reads_at_residue = residue_in_mma_step;

    template <int NCols>
    __device__ __forceinline__ static void dot_part(const uint8_t* step, int part, int nvalid, const uint8_t* records,
                                                    float (&acc)[NCols]) {
        using rec = detail::records<NCols>;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (i >= nvalid) break;
            const uint8_t* block = step + (4 * part + i) * int(sizeof(Block));
            const float dw = Bits::scale(block);
            uint32_t v[8];
            Bits::values(block, v);
            accumulate_block32<NCols>(v, dw, records + i * rec::bytes, acc);
        }
    }

    template <int NCols, int Residue = -1>
    __device__ __forceinline__ static void mma_step(const uint8_t* row_lo, const uint8_t* row_hi, int nvalid,
                                                    const uint8_t* records, int lane, float (&acc)[2][2][2]) {
        using rec = detail::records<NCols>;
        const int t = lane & 3;
        unrolled_for<8>([&](auto index) {
            constexpr int b = decltype(index)::value;
            if (b >= nvalid) return;
            const uint8_t* record = records + b * rec::bytes;
            uint32_t b0, b1;
            rec::b_fragment(record, lane, b0, b1);
            if constexpr (Bits::paired_fragments) {
                const uint32_t low = b0, high = b1;
                to_paired_order(low, high, b0, b1);
            }
            constexpr int parts = Bits::a_parts;
            uint32_t words[2][2 * parts];  // [row lo/hi]
            float dw[2];
#pragma unroll
            for (int ri = 0; ri < 2; ++ri) {
                const uint8_t* block = (ri ? row_hi : row_lo) + b * int(sizeof(Block));
                dw[ri] = Bits::scale(block);
                Bits::template a_fragment<ptx::residue_after(Residue, b * int(sizeof(Block)))>(block, t, words[ri]);
            }
            int c[4] = {0, 0, 0, 0};
            const uint32_t a[4] = {words[0][0], words[1][0], words[0][1], words[1][1]};
            ptx::mma_s8_m16n8k32(c, a, b0, b1);
            if constexpr (parts == 2) {
                int negative[4] = {0, 0, 0, 0};
                const uint32_t an[4] = {words[0][2], words[1][2], words[0][3], words[1][3]};
                ptx::mma_s8_m16n8k32(negative, an, b0, b1);
#pragma unroll
                for (int j = 0; j < 4; ++j) c[j] -= negative[j];
            }
            q8_1_aux x[2];
            rec::aux_pair(record, lane, x);
#pragma unroll
            for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                for (int ci = 0; ci < 2; ++ci)
                    acc[b / 4][ri][ci] = fma_rn(mul_rn(dw[ri], x[ci].d), to_float(c[2 * ri + ci]), acc[b / 4][ri][ci]);
        });
    }
};

}  // namespace llmrt::cuda::detail
