// The mmvq forms shared by the types made of 32-element slices, each with one scale: blocks of 32
// (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4), or blocks of 256 holding 8 such slices (IQ4_XS).
// Each type names how a slice's scale and its 32 values (bytes, four to a word) are read (Bits).
//
// Canonical order, per 32-slice b with I = Σ u·qx − offset·Σ qx (exact integers):
//   acc = fma(scale·dx, I, acc),   then, for the types with a minimum m:  acc = fma(m, d_sum, acc)
// (d_sum = dx·Σ qx, exact in the activation records).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/cuda/codec.cuh"

namespace llmrt::cuda::detail {

// Bits is a type with
//   static constexpr int align                                     (see codec.cuh)
//   static constexpr int offset: the values are u − offset for unsigned bytes u (0 where the
//   bytes are the signed values themselves)
//   static constexpr bool has_min: the slice adds m·Σx (x = d·u + m, as Q4_1 and Q5_1)
//   static float scale(const uint8_t* block, int slice)
//   static float min(const uint8_t* block, int slice)              where has_min
//   static void values(const uint8_t* block, int slice, uint32_t (&v)[8])
//       v[j]: elements 4j .. 4j+3 of the slice (u where offset or has_min, else signed values)
//   static constexpr int a_parts: 1, or 2 where the values come as two parts (value = positive −
//   negative, each part in [0, 127]), one mma each
//   template <int Residue> static void a_fragment(const uint8_t* block, int slice, int t, uint32_t (&w)[2 * a_parts])
//       w[0], w[1]: elements 4t.. and 16+4t.. of the slice (their positive parts where a_parts is
//       2, and w[2], w[3] their negative parts)
//   static constexpr bool paired_fragments: true where a_fragment gives instead elements 4t,
//   16+4t, 4t+1, 17+4t and 4t+2, 18+4t, 4t+3, 19+4t (the order of two 4-bit codes per byte). A
//   lane's A and B words cover the same 8 of the 32 k positions, so mma_step permutes its B
//   fragment within them alike: the same products, the same integer.
// where `block` is the block holding the slice, `slice` its index in the block (always 0 for
// blocks of 32), and Residue the block's address modulo 4 if known at compile time, else -1 (see
// ptx::load_words_at). mma_step takes the same for the step's rows: mmvq knows it wherever the
// rows it copied start word-aligned, which saves the unaligned reads' address work.

// The dp4a form's sum for one 32-slice of scale dw whose values are the 8 words v, against
// activation record `record`, for every column: acc[c] = fma(dw·dx, Σ v·x − offset·Σx, acc[c]),
// then acc[c] = fma(m, d_sum, acc[c]) where HasMin.
template <int NCols, int Offset = 0, bool HasMin = false>
__device__ __forceinline__ void accumulate_block32(const uint32_t (&v)[8], float dw, const uint8_t* record,
                                                   float (&acc)[NCols], [[maybe_unused]] float m = 0.0f) {
    constexpr bool unsigned_values = Offset != 0 || HasMin;
#pragma unroll
    for (int c = 0; c < NCols; ++c) {
        int I = record_dot<NCols, unsigned_values>(v, record, c);
        const q8_1_aux x = records<NCols>::aux(record, c);
        if constexpr (Offset != 0) I -= Offset * (x.sum_lo + x.sum_hi);
        acc[c] = fma_rn(mul_rn(dw, x.d), to_float(I), acc[c]);
        if constexpr (HasMin) acc[c] = fma_rn(m, x.d_sum, acc[c]);
    }
}

template <class Bits>
constexpr int bits_offset() {
    if constexpr (requires { Bits::offset; }) return Bits::offset;
    else return 0;
}
template <class Bits>
constexpr bool bits_has_min() {
    if constexpr (requires { Bits::has_min; }) return Bits::has_min;
    else return false;
}

template <class Block, class Bits>
struct block32_codec {
    static_assert(Block::block_size % 32 == 0 && 256 % Block::block_size == 0,
                  "block32_codec: the block must hold 32, 64, 128 or 256 elements (whole 32-slices of a 256 step)");
    static constexpr int align = Bits::align;
    static constexpr int slices_per_block = int(Block::block_size / 32);
    static constexpr int offset = bits_offset<Bits>();
    static constexpr bool has_min = bits_has_min<Bits>();

    static constexpr unsigned reads_at_residue = residue_in_mma_step;

    // The block that holds 32-slice b of a step, and the slice's index in it.
    __device__ __forceinline__ static const uint8_t* block_of(const uint8_t* step, int b) {
        return step + (b / slices_per_block) * int(sizeof(Block));
    }

    template <int NCols>
    __device__ __forceinline__ static void dot_part(const uint8_t* step, int part, int nvalid, const uint8_t* records,
                                                    float (&acc)[NCols]) {
        using rec = detail::records<NCols>;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (i >= nvalid) break;
            const int b = 4 * part + i, slice = b % slices_per_block;
            const uint8_t* block = block_of(step, b);
            const float dw = Bits::scale(block, slice);
            uint32_t v[8];
            Bits::values(block, slice, v);
            [[maybe_unused]] float m = 0.0f;
            if constexpr (has_min) m = Bits::min(block, slice);
            accumulate_block32<NCols, offset, has_min>(v, dw, records + i * rec::bytes, acc, m);
        }
    }

    template <int NCols, int Residue = -1>
    __device__ __forceinline__ static void mma_step(const uint8_t* row_lo, const uint8_t* row_hi, int nvalid,
                                                    const uint8_t* records, int lane, float (&acc)[2][2][2]) {
        using rec = detail::records<NCols>;
        const int t = lane & 3;
        unrolled_for<8>([&](auto index) {
            constexpr int b = decltype(index)::value;
            constexpr int slice = b % slices_per_block, block_bytes = (b / slices_per_block) * int(sizeof(Block));
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
            [[maybe_unused]] float m[2] = {0.0f, 0.0f};
#pragma unroll
            for (int ri = 0; ri < 2; ++ri) {
                const uint8_t* block = (ri ? row_hi : row_lo) + block_bytes;
                dw[ri] = Bits::scale(block, slice);
                if constexpr (has_min) m[ri] = Bits::min(block, slice);
                Bits::template a_fragment<ptx::residue_after(Residue, block_bytes)>(block, slice, t, words[ri]);
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
            if constexpr (offset != 0 || has_min)
                rec::aux_pair_whole(record, lane, x);
            else
                rec::aux_pair(record, lane, x);
#pragma unroll
            for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                for (int ci = 0; ci < 2; ++ci) {
                    int I = c[2 * ri + ci];
                    if constexpr (offset != 0) I -= offset * (x[ci].sum_lo + x[ci].sum_hi);
                    float& sum = acc[b / 4][ri][ci];
                    sum = fma_rn(mul_rn(dw[ri], x[ci].d), to_float(I), sum);
                    if constexpr (has_min) sum = fma_rn(m[ri], x[ci].d_sum, sum);
                }
        });
    }

    // Σ w·x over one whole block and its block_size/32 Q8_1 blocks, in the canonical order (one
    // accumulator: the public block dot sums the slices in order).
    __device__ static float dot_q8_1(const Block& w, const q8_1* x) {
        const uint8_t* block = reinterpret_cast<const uint8_t*>(&w);
        float acc = 0.0f;
#pragma unroll
        for (int slice = 0; slice < slices_per_block; ++slice) {
            const q8_1_words xq = load_q8_1(x[slice]);
            uint32_t v[8];
            Bits::values(block, slice, v);
            int I = 0;
#pragma unroll
            for (int j = 0; j < 8; ++j)
                I = offset != 0 || has_min ? ptx::dp4a_u8s8(v[j], xq.q[j], I) : __dp4a(int(v[j]), xq.q[j], I);
            if constexpr (offset != 0) I -= offset * (xq.sum_lo + xq.sum_hi);
            acc = fma_rn(mul_rn(Bits::scale(block, slice), xq.d), to_float(I), acc);
            if constexpr (has_min) acc = fma_rn(Bits::min(block, slice), mul_rn(xq.d, to_float(xq.sum_lo + xq.sum_hi)), acc);
        }
        return acc;
    }
};

}  // namespace llmrt::cuda::detail
