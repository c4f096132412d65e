// Device codecs: what CUDA code needs to read each quant block type.
//
// Public building blocks, for any kernel (see examples/custom_kernel):
//   llmrt::dequantize_block(const B&, float*)   the reference dequantizer, host and device, bit-exact
//                                               with ggml (include/llmrt/quant/<type>.hpp)
//   llmrt::cuda::dot_q8_1(const B&, const q8_1*) Σ w·x over one weight block and its block_size/32
//                                               Q8_1 activation blocks: the integer dot with __dp4a,
//                                               scaled once per sub-block
//
// Behind them, device_codec<B> holds each type's pieces for mmvq (include/llmrt/cuda/mmvq.cuh):
//
//   static constexpr int align                  alignment in bytes that W's rows must have (the
//                                               launchers check it): gcd(sizeof(B), 16)
//   dot_q8_1(const B&, const q8_1*)             the block dot above
//   dot_part<NCols>(step, part, nvalid, records, acc)
//       the dp4a form: one lane, one row, one half ("part") of a 256-element substep
//   mma_step<NCols>(row_lo, row_hi, nvalid, records, lane, acc)
//       the tensor-core form: one warp, 16 rows, a whole 256-element substep
//   optional: paired_records<NCols> and reads_at_residue, below
//
// Both mmvq forms compute the same integers (exact) and then the same float operations in the
// same order, spelled with the _rn intrinsics so no contraction differs: that is what makes a
// column's result independent of how many columns share a launch. The "canonical order" for
// one (row, column): per 256-element substep, 32-blocks 0..3 go to accumulator 0 and 4..7 to
// accumulator 1; each type's comment says what it adds per 32-block and per step.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "llmrt/core/config.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/ptx.cuh"
#include "llmrt/quant/q8_1.hpp"

namespace llmrt::cuda {

// The contract is written above; each type's specialization lives in codec/<type>.cuh.
template <class B>
struct device_codec {
    static_assert(llmrt::detail::always_false<B>,
                  "llmrt::cuda::device_codec<B>: no device codec for this block type; add "
                  "include/llmrt/cuda/codec/<type>.cuh and include it from llmrt/cuda/codecs.cuh");
};

namespace detail {

// f(std::integral_constant<int, I>{}) for I = 0..N-1, so that I can name a template argument.
template <int N, class F>
__device__ __forceinline__ void unrolled_for(F&& f) {
    [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }(
        std::make_integer_sequence<int, N>{});
}

// Byte i of w (one prmt: bytes 1..3 of the result come from the zero word).
__device__ __forceinline__ int byte_of(uint32_t w, int i) { return int(ptx::byte_perm_unmasked(w, 0, 0x4440u + unsigned(i))); }

// Float steps of the canonical order, rounded exactly as written.
__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float to_float(int v) { return __int2float_rn(v); }

// Integer-to-float by a bias: an integer sum started from float_bias_bits (the bits of 1.5·2^23)
// ends at the bits of 1.5·2^23 + I, which for |I| < 2^22 is that float exactly; one exact
// subtraction then gives float(I), the value to_float(I) gives. Where the sum is a chain of
// multiply-adds (or an mma accumulator) the bias costs nothing, and the subtraction runs on an
// FMA pipe instead of the conversion's. Measured on the H100 at 8 columns: Q3_K's scaled
// sub-block sums 1-2% faster on every shape; Q2_K's mma results started from the bias 2-5% slower
// on the three large shapes (four registers more), MXFP4 and Q8_0 the same; so the bias goes
// where a dp2a forms the sum (Q2_K's min terms, Q3_K's scaled sums), not into mma accumulators.
inline constexpr int float_bias_bits = 0x4B400000;
__device__ __forceinline__ float from_biased(int biased) { return __fsub_rn(__int_as_float(biased), 12582912.0f); }

// Reading mmvq's activation records (layout in activations.cuh) from shared memory.
template <int NCols>
struct records {
    static constexpr int bytes = int(activation_record_bytes(NCols));

    // The 8 words of column c's quants in record `record`.
    __device__ __forceinline__ static void quants(const uint8_t* record, int c, int (&x)[8]) {
        const int4 lo = *reinterpret_cast<const int4*>(record + 32 * c);
        const int4 hi = *reinterpret_cast<const int4*>(record + 32 * c + 16);
        x[0] = lo.x, x[1] = lo.y, x[2] = lo.z, x[3] = lo.w;
        x[4] = hi.x, x[5] = hi.y, x[6] = hi.z, x[7] = hi.w;
    }
    __device__ __forceinline__ static q8_1_aux aux(const uint8_t* record, int c) {
        return *reinterpret_cast<const q8_1_aux*>(record + 32 * NCols + 16 * c);
    }
    // The tensor-core B fragment of column g = lane/4: words t and 4+t (t = lane%4), zero for
    // the columns past NCols.
    __device__ __forceinline__ static void b_fragment(const uint8_t* record, int lane, uint32_t& b0, uint32_t& b1) {
        const int g = lane >> 2, t = lane & 3;
        b0 = b1 = 0;
        if (NCols == 8 || g < NCols) {  // g < 8: no test at 8 columns
            b0 = *reinterpret_cast<const uint32_t*>(record + 32 * g + 4 * t);
            b1 = *reinterpret_cast<const uint32_t*>(record + 32 * g + 16 + 4 * t);
        }
    }
    // The side data of the two accumulator columns 2t, 2t+1 of this lane (zero past NCols).
    __device__ __forceinline__ static void aux_pair(const uint8_t* record, int lane, q8_1_aux (&a)[2]) {
        const int t = lane & 3;
#pragma unroll
        for (int ci = 0; ci < 2; ++ci) {
            a[ci] = q8_1_aux{0.0f, 0.0f, 0, 0};
            if (NCols == 8 || 2 * t + ci < NCols) a[ci] = aux(record, 2 * t + ci);
        }
    }
    // The same as one 16-byte load each, for codecs that read the sums too (the compiler
    // otherwise loads the fields one by one).
    __device__ __forceinline__ static void aux_pair_whole(const uint8_t* record, int lane, q8_1_aux (&a)[2]) {
        const int t = lane & 3;
#pragma unroll
        for (int ci = 0; ci < 2; ++ci) {
            int4 v = make_int4(0, 0, 0, 0);
            if (NCols == 8 || 2 * t + ci < NCols) v = *reinterpret_cast<const int4*>(record + 32 * NCols + 16 * (2 * t + ci));
            a[ci] = q8_1_aux{__int_as_float(v.x), __int_as_float(v.y), v.z, v.w};
        }
    }
};

// Paired records. A codec whose dp4a decoder yields a word's values in the order its codes sit in
// the word (two 4-bit codes per byte: elements 4j, 16+4j, 4j+1, 17+4j, then 4j+2, 18+4j, 4j+3,
// 19+4j) declares `template <int NCols> static constexpr bool paired_records`, true for the column
// counts where its dot_part reads records whose quant words 2j and 2j+1 hold those elements: mmvq
// rearranges each step's records in shared memory once (the whole warp, after they land) instead of
// every row's lane splitting its values. The tensor-core form reads records as they are.
template <class Codec, int NCols>
constexpr bool pairs_records() {
    if constexpr (requires { Codec::template paired_records<NCols>; })
        return Codec::template paired_records<NCols>;
    else
        return false;
}

// Whether a codec's `form` (mma_step or dot_part) takes a second template argument: the address
// modulo 4 of its rows where the launch knows it at compile time, else -1 (see codec/block32.cuh).
// A codec declares the forms that do as the mask `static constexpr unsigned reads_at_residue`.
inline constexpr unsigned residue_in_mma_step = 1, residue_in_dot_part = 2;
template <class Codec>
constexpr bool reads_at_residue(unsigned form) {
    if constexpr (requires { Codec::reads_at_residue; })
        return (Codec::reads_at_residue & form) != 0;
    else
        return false;
}

// The values of the 8 codes of w (two 4-bit codes per byte) in a 16-entry int8 table whose entries
// 0..3, 4..7, 8..11 and 12..15 are the words T0..T3, in the codes' own order: `pair0` holds
// elements 4j, 16+4j, 4j+1, 17+4j (the low 16 bits: low nibble, high nibble, ...), `pair1`
// elements 4j+2, 18+4j, 4j+3, 19+4j. A code's low 3 bits index each half of the table; a third
// permute picks, per byte, the half that its bit 3 names (selector nibble n: byte n of the first
// half's lookup, or byte 4 + n of the second's). 11 instructions for 8 values (MXFP4, IQ4_NL).
template <uint32_t T0, uint32_t T1, uint32_t T2, uint32_t T3>
__device__ __forceinline__ void table16_decode_word_paired(uint32_t w, uint32_t& pair0, uint32_t& pair1) {
    const uint32_t index = w & 0x77777777u;
    const uint32_t half = ((w >> 1) & 0x44444444u) | 0x32103210u;
    const uint32_t index1 = index >> 16, half1 = half >> 16;
    pair0 = ptx::byte_perm_unmasked(ptx::byte_perm_unmasked(T0, T1, index), ptx::byte_perm_unmasked(T2, T3, index), half);
    pair1 = ptx::byte_perm_unmasked(ptx::byte_perm_unmasked(T0, T1, index1), ptx::byte_perm_unmasked(T2, T3, index1),
                                    half1);
}

// Words j and 4 + j of a 32-block (elements 4j..4j+3 and 16+4j..19+4j) in the paired order:
// pair0 holds elements 4j, 16+4j, 4j+1, 17+4j and pair1 4j+2, 18+4j, 4j+3, 19+4j.
__device__ __forceinline__ void to_paired_order(uint32_t low, uint32_t high, uint32_t& pair0, uint32_t& pair1) {
    pair0 = ptx::byte_perm_unmasked(low, high, 0x5140u);
    pair1 = ptx::byte_perm_unmasked(low, high, 0x7362u);
}

// Rearranges the quants of `nrecords` records of NCols columns into the paired order, one
// record column per lane, then orders the writes before any later copy into the same memory.
template <int NCols>
__device__ __forceinline__ void pair_record_quants(uint8_t* first, int nrecords, int lane) {
    for (int idx = lane; idx < nrecords * NCols; idx += 32) {
        uint4* q = reinterpret_cast<uint4*>(first + (idx / NCols) * records<NCols>::bytes + 32 * (idx % NCols));
        const uint4 lo = q[0], hi = q[1];  // words 0..3 and 4..7: elements 0..15 and 16..31
        uint4 paired_lo, paired_hi;
        to_paired_order(lo.x, hi.x, paired_lo.x, paired_lo.y);
        to_paired_order(lo.y, hi.y, paired_lo.z, paired_lo.w);
        to_paired_order(lo.z, hi.z, paired_hi.x, paired_hi.y);
        to_paired_order(lo.w, hi.w, paired_hi.z, paired_hi.w);
        q[0] = paired_lo;
        q[1] = paired_hi;
    }
    ptx::fence_shared_for_async_copies();
}

// The 4 bytes at p as a word, byte by byte (any alignment, never reads past p + 3).
__device__ __forceinline__ uint32_t bytes_to_u32(const uint8_t* p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

// The 8 quant words and the scale of a ggml q8_1 block, for the public block dots.
struct q8_1_words {
    int q[8];
    float d;
    int sum_lo, sum_hi;
};
__device__ __forceinline__ q8_1_words load_q8_1(const q8_1& x) {
    q8_1_words r;
    int lo = 0, hi = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        r.q[j] = int(bytes_to_u32(reinterpret_cast<const uint8_t*>(x.qs) + 4 * j));
        if (j < 4) lo = __dp4a(r.q[j], 0x01010101, lo);
        else hi = __dp4a(r.q[j], 0x01010101, hi);
    }
    r.d = __half2float(__ushort_as_half(x.d));
    r.sum_lo = lo;
    r.sum_hi = hi;
    return r;
}

// Σ v·x over the 8 value words v of a 32-block and the quants of column c of its activation
// record: v as signed bytes, or as unsigned ones where Unsigned.
template <int NCols, bool Unsigned>
__device__ __forceinline__ int record_dot(const uint32_t (&v)[8], const uint8_t* record, int c) {
    int x[8];
    records<NCols>::quants(record, c, x);
    int sum = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) sum = Unsigned ? ptx::dp4a_u8s8(v[k], x[k], sum) : __dp4a(int(v[k]), x[k], sum);
    return sum;
}

// The dots of 8 words of unsigned quants v with 8 words of activations x, over a 32-block's
// 16-element sub-blocks a (words 0..3) and b (words 4..7).
__device__ __forceinline__ void sub16_dots(const uint32_t (&v)[8], const int (&x)[8], int& sa, int& sb) {
    sa = sb = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        sa = ptx::dp4a_u8s8(v[k], x[k], sa);
        sb = ptx::dp4a_u8s8(v[4 + k], x[4 + k], sb);
    }
}

// Column c of a 32-block's activation record against the 8 words of unsigned quants v: the dots
// over sub-blocks a and b (sub16_dots), and the record's side data for that column.
template <int NCols>
__device__ __forceinline__ q8_1_aux column_sub16_dots(const uint32_t (&v)[8], const uint8_t* record, int c, int& sa,
                                                      int& sb) {
    int x[8];
    records<NCols>::quants(record, c, x);
    sub16_dots(v, x, sa, sb);
    return records<NCols>::aux(record, c);
}

// The types with 16-element sub-blocks and integer scales (Q3_K, Q6_K) take each quant as
// u − offset with u >= 0 held times 2^shift: per column and 32-block, with sa, sb the dots of the
// u over sub-blocks a (elements 0..15) and b (16..31),
//   I = sc_a·(sa/2^shift − offset·Σ_a qx) + sc_b·(sb/2^shift − offset·Σ_b qx),  sd = fma(dx, I, sd).
// v: the 8 words of u (4 per sub-block), record: the 32-block's activation record.
template <int NCols>
__device__ __forceinline__ void accumulate_sub16(const uint32_t (&v)[8], int sc_a, int sc_b, int shift, int offset,
                                                 const uint8_t* record, float (&sd)[NCols]) {
#pragma unroll
    for (int c = 0; c < NCols; ++c) {
        int sa, sb;
        const q8_1_aux xa = column_sub16_dots<NCols>(v, record, c, sa, sb);
        const int I = sc_a * ((sa >> shift) - offset * xa.sum_lo) + sc_b * ((sb >> shift) - offset * xa.sum_hi);
        sd[c] = fma_rn(xa.d, to_float(I), sd[c]);
    }
}

// The same for the tensor-core form: ca, cb the k16 mma results of sub-blocks a and b (rows lo/hi
// × the lane's column pair), u not scaled.
__device__ __forceinline__ void accumulate_sub16_mma(const int (&ca)[4], const int (&cb)[4], const int (&sc_a)[2],
                                                     const int (&sc_b)[2], int offset, const q8_1_aux (&x)[2],
                                                     float (&sd)[2][2]) {
#pragma unroll
    for (int ri = 0; ri < 2; ++ri)
#pragma unroll
        for (int ci = 0; ci < 2; ++ci) {
            const int I = sc_a[ri] * (ca[2 * ri + ci] - offset * x[ci].sum_lo) +
                          sc_b[ri] * (cb[2 * ri + ci] - offset * x[ci].sum_hi);
            sd[ri][ci] = fma_rn(x[ci].d, to_float(I), sd[ri][ci]);
        }
}

}  // namespace detail

// Σ w·x over one weight block and the block_size/32 Q8_1 blocks x[0..] that hold its activations
// (the activations as the Q8_1 blocks give them: d·qs).
template <class B>
__device__ __forceinline__ float dot_q8_1(const B& w, const q8_1* x) {
    return device_codec<B>::dot_q8_1(w, x);
}

}  // namespace llmrt::cuda
