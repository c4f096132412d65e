// MXFP4: 32 E2M1 values sharing an E8M0 exponent (4.25 bits per weight), as llmrt::mxfp4.
//
// | offset | field     | meaning                                             |
// |--------|-----------|-----------------------------------------------------|
// | 0      | e (E8M0)  | x = value(code)·2^(e−128)                           |
// | 1      | qs[16]    | element j: low nibble of qs[j]; j+16: high nibble   |
//
// value(code) is twice E2M1, {0,1,2,3,4,6,8,12} with bit 3 the sign, so it is an integer and the
// dot runs on int8. The magnitudes come from the three low code bits m = 4h + l without a
// table: value = l for h = 0 and 2l + 4 + 2·[l = 3] for h = 1, i.e. l + h·(l + 4 + 2·[l = 3]).
// Every term stays below 16, so this runs on the eight codes of a qs word at once, one per
// nibble, before low and high nibbles are split into bytes. Negative codes are taken off twice:
// Σ v·a = Σ|v|·a − 2·Σ_{neg}|v|·a.
//
// At one or two columns (MXFP4_HIGH_UNSHIFTED) the high nibbles are not shifted down: their bytes
// (16·|v|, up to 192) are dotted unsigned and the high half's sum, a multiple of 16, shifted down
// by 4 once per column: one mask per word and half instead of a shift and a mask, one more shift
// and multiply-add per column. Same integers, so the same results (bit for bit at every column count).
#ifndef LLMRT_BLOCK_MXFP4_GLSL
#define LLMRT_BLOCK_MXFP4_GLSL

#include "llmrt/activation_slices.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/weights.glsl"

#include "llmrt/blocks/layout/mxfp4.glsl"  // MXFP4_OFFSET_<field>, MXFP4_BYTES: generated from the C++ struct

#ifndef MXFP4_UNSHIFTED_MAX_COLUMNS
#define MXFP4_UNSHIFTED_MAX_COLUMNS 2u  // the most columns that keep the high nibbles in place
#endif

layout(buffer_reference, std430, buffer_reference_align = 1) readonly buffer block_mxfp4 {
    layout(offset = MXFP4_OFFSET_E) uint8_t e;
    layout(offset = MXFP4_OFFSET_QS) uint8_t qs[16];
};
#define LLMRT_BLOCK block_mxfp4

const uint BLOCK_BYTES = MXFP4_BYTES;
const uint BLOCK_VALUES = 32u;
const uint SLICE_VALUES = 32u;

#ifdef LLMRT_MMVQ_COLUMNS
const bool MXFP4_HIGH_UNSHIFTED = LLMRT_MMVQ_COLUMNS <= MXFP4_UNSHIFTED_MAX_COLUMNS;
#else
const bool MXFP4_HIGH_UNSHIFTED = false;
#endif

struct weight_slice {
    uvec4 magnitude_low, magnitude_high;  // |value| of elements 0..15 and 16..31, one byte each
    uvec4 negative_low, negative_high;    // the same bytes where the code is negative, else 0
                                          // (the high halves as 16·|v| where MXFP4_HIGH_UNSHIFTED)
    float scale;                          // 2^(e−128)
};
#define activation_slice llmrt_act_32

// |value| of each code of the words, in place: eight codes per word, one per nibble, as one
// bitwise select: with h set the value is 2l + 4 + 2·[l = 3], else l.
uvec4 mxfp4_magnitudes(uvec4 codes) {
    const uvec4 l = codes & 0x33333333u;
    const uvec4 l2 = l * 2u, h_mask = ((codes >> 2u) & 0x11111111u) * 0xfu;
    const uvec4 with_h = l2 + 0x44444444u + (l2 & l & 0x22222222u);  // 2l + 4 + 2·[l = 3]
    return (h_mask & with_h) | (~h_mask & l);
}

// 0xf in each nibble whose code is negative.
uvec4 mxfp4_sign_masks(uvec4 codes) { return ((codes >> 3u) & 0x11111111u) * 0xfu; }

weight_slice load_weight_slice(uint at, uint slice) {
    weight_slice w;
    const uint e = llmrt_w32(at + MXFP4_OFFSET_E) & 0xffu;
    // 2^(e−128): a normal float for e >= 2, the subnormals 2^-127 and 2^-128 below.
    w.scale = uintBitsToFloat(e >= 2u ? (e - 1u) << 23u : 0x00200000u << e);
    // The codes as 128 bits 8 bits past e: the same five words as e's (one funnel shift each).
    const uvec4 qs = llmrt_w128_bits(at + MXFP4_OFFSET_E, 8u);
    const uvec4 magnitude = mxfp4_magnitudes(qs), negative = magnitude & mxfp4_sign_masks(qs);
    w.magnitude_low = magnitude & 0x0f0f0f0fu;
    w.negative_low = negative & 0x0f0f0f0fu;
    if (MXFP4_HIGH_UNSHIFTED) {
        w.magnitude_high = magnitude & 0xf0f0f0f0u;
        w.negative_high = negative & 0xf0f0f0f0u;
    } else {
        w.magnitude_high = (magnitude >> 4u) & 0x0f0f0f0fu;
        w.negative_high = (negative >> 4u) & 0x0f0f0f0fu;
    }
    return w;
}

activation_slice load_activation_slice(llmrt_q8_1_column col, uint block_pos, uint slice) {
    return llmrt_load_act_32(col, block_pos);
}

float slice_dot(weight_slice w, activation_slice a) {
    int sum;
    if (MXFP4_HIGH_UNSHIFTED) {
        const int low = llmrt_dot16(w.magnitude_low, a.q0) - 2 * llmrt_dot16(w.negative_low, a.q0);
        const int high16 = llmrt_dot16_unsigned_b(a.q1, w.magnitude_high) - 2 * llmrt_dot16_unsigned_b(a.q1, w.negative_high);
        sum = low + (high16 >> 4);
    } else {
        const int positive = llmrt_dot16(w.magnitude_low, a.q0) + llmrt_dot16(w.magnitude_high, a.q1);
        const int negative = llmrt_dot16(w.negative_low, a.q0) + llmrt_dot16(w.negative_high, a.q1);
        sum = positive - 2 * negative;
    }
    return float(sum) * (w.scale * a.d);
}

#endif
