// The nibble32 family (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS): 32-value slices of 4-bit codes,
// read from the type's layout, which the build generates from the C++ block description
// (llmrt/quant/layout.hpp, tools/glsl_layouts) as the NIBBLE32_* numbers below, then includes this.
//
// Slice s of a block: 16 code bytes at NIBBLE32_QS + 16·s, value e < 16 in the low nibble of byte e,
// 16 + e in the high one; a fifth code bit per value in the u32 at NIBBLE32_QH where that is >= 0.
//   linear types:  x = scale·(code − NIBBLE32_CODE_OFFSET) (+ m, the fp16 at NIBBLE32_M where >= 0)
//   table types:   x = scale·iq4nl(code)
//   scale:         the fp16 d, or d·(ls − 32) with IQ4_XS's 6-bit slice scale ls
// A slice dots as Σ u·a over its 32 values (u the code, or the table value), then
//   (Σ u·a − offset·Σa)·d·d_a  (+ m·d_a·Σa).
#ifndef LLMRT_BLOCK_NIBBLE32_GLSL
#define LLMRT_BLOCK_NIBBLE32_GLSL

#include "llmrt/activation_slices.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/weights.glsl"

#if !defined(NIBBLE32_BYTES) || !defined(NIBBLE32_SLICES) || !defined(NIBBLE32_D) || !defined(NIBBLE32_QS)
#error "nibble32.glsl: include the type's generated layout (llmrt/blocks/<type>.glsl), not this file"
#endif

const uint BLOCK_BYTES = NIBBLE32_BYTES;
const uint BLOCK_VALUES = 32u * NIBBLE32_SLICES;
const uint SLICE_VALUES = 32u;

const bool NIBBLE32_LINEAR = NIBBLE32_TABLE == 0;

// ggml's IQ4_NL table, four values to a word (byte i of word j: entry 4j + i), from the C++ table.
const uint nibble32_table_words[4] = uint[4](NIBBLE32_TABLE_WORDS);

struct weight_slice {
    uvec4 lo, hi;  // values 0..15 and 16..31 of the slice, one byte each (u, or int8 table values)
    float d, m;
};

struct activation_slice {
    uvec4 q0, q1;
    float d;
    int sum;  // Σ of the slice's 32 activation quants
};

// Four fifth bits (bits 0..3 of b) as bit 4 of four bytes.
uint nibble32_spread(uint b) { return ((b * 0x00204081u) & 0x01010101u) << 4u; }

// The table values of the four codes in the low (high = false) or high nibbles of word w.
uint nibble32_table_bytes(uint w, bool high) {
    uint r = 0u;
    for (uint i = 0u; i < 4u; ++i) {
        const uint code = (w >> (8u * i + (high ? 4u : 0u))) & 15u;
        r |= llmrt_byte(nibble32_table_words[code >> 2u], code & 3u) << (8u * i);
    }
    return r;
}

// Reads at a field's offset go through the aligned word that holds it: where the weights are read
// in place (blocks of a multiple of 4 bytes), llmrt_w32 takes 4-byte aligned offsets only.
uint nibble32_bits_at(uint at, uint offset) { return llmrt_w32(at + (offset & ~3u)) >> (8u * (offset & 3u)); }
float nibble32_half_at(uint at, uint offset) { return unpackHalf2x16(nibble32_bits_at(at, offset)).x; }

float nibble32_scale(uint at, uint slice) {
    const float d = nibble32_half_at(at, NIBBLE32_D);
#if NIBBLE32_SCALES_L >= 0
    const uint low = (nibble32_bits_at(at, NIBBLE32_SCALES_L + slice / 2u) >> (4u * (slice % 2u))) & 15u;
    const uint high = (nibble32_bits_at(at, NIBBLE32_SCALES_H) >> (2u * slice)) & 3u;
    return d * float(int(low | (high << 4u)) - 32);
#else
    return d;
#endif
}

weight_slice load_weight_slice(uint at, uint slice) {
    weight_slice w;
    w.d = nibble32_scale(at, slice);
#if NIBBLE32_M >= 0
    w.m = nibble32_half_at(at, NIBBLE32_M);
#else
    w.m = 0.0;
#endif
    const uvec4 q = llmrt_w128(at + NIBBLE32_QS + 16u * slice);
    if (NIBBLE32_LINEAR) {
        w.lo = q & 0x0f0f0f0fu;
        w.hi = (q >> 4u) & 0x0f0f0f0fu;
#if NIBBLE32_QH >= 0
        const uint h = llmrt_w32(at + NIBBLE32_QH);  // Q5_1's qh is 4-byte aligned; Q5_0's blocks are staged
        w.lo |= uvec4(nibble32_spread(h & 15u), nibble32_spread((h >> 4u) & 15u), nibble32_spread((h >> 8u) & 15u),
                      nibble32_spread((h >> 12u) & 15u));
        w.hi |= uvec4(nibble32_spread((h >> 16u) & 15u), nibble32_spread((h >> 20u) & 15u),
                      nibble32_spread((h >> 24u) & 15u), nibble32_spread(h >> 28u));
#endif
    } else {
        w.lo = uvec4(nibble32_table_bytes(q.x, false), nibble32_table_bytes(q.y, false), nibble32_table_bytes(q.z, false),
                     nibble32_table_bytes(q.w, false));
        w.hi = uvec4(nibble32_table_bytes(q.x, true), nibble32_table_bytes(q.y, true), nibble32_table_bytes(q.z, true),
                     nibble32_table_bytes(q.w, true));
    }
    return w;
}

activation_slice load_activation_slice(llmrt_q8_1_column col, uint block_pos, uint slice) {
    const uint pos = block_pos + 32u * slice;
    activation_slice a;
    a.q0 = llmrt_q8_1_quants16(col, pos);
    a.q1 = llmrt_q8_1_quants16(col, pos + 16u);
    const uvec2 r = llmrt_q8_1_record(col, pos);
    a.d = llmrt_q8_1_record_d(r);
    a.sum = llmrt_q8_1_record_sum16(r, 0u) + llmrt_q8_1_record_sum16(r, 16u);
    return a;
}

float slice_dot(weight_slice w, activation_slice a) {
    if (NIBBLE32_LINEAR) {
        // u >= 0: activations signed, weights unsigned.
        const int I = llmrt_dot16_unsigned_b(a.q0, w.lo) + llmrt_dot16_unsigned_b(a.q1, w.hi) - NIBBLE32_CODE_OFFSET * a.sum;
        float r = float(I) * (w.d * a.d);
#if NIBBLE32_M >= 0
        r += w.m * (a.d * float(a.sum));
#endif
        return r;
    }
    return float(llmrt_dot16(w.lo, a.q0) + llmrt_dot16(w.hi, a.q1)) * (w.d * a.d);
}

// Value i of the block at address `block` (llmrt::dequantize_block), for the graph ops' get_rows
// (shaders/ops/dequantize/from_block.glsl defines LLMRT_BLOCK_DEQUANTIZE). Reads bytes through llmrt_nibble32_bytes.
#ifdef LLMRT_BLOCK_DEQUANTIZE
layout(buffer_reference, std430, buffer_reference_align = 1) readonly buffer llmrt_nibble32_bytes { uint8_t b[]; };

uint nibble32_u8(uint64_t block, uint at) { return uint(llmrt_nibble32_bytes(block).b[at]); }
float nibble32_fp16(uint64_t block, uint at) {
    return unpackHalf2x16(nibble32_u8(block, at) | (nibble32_u8(block, at + 1u) << 8u)).x;
}

float llmrt_dequantize(uint64_t block, uint i) {
    const uint slice = i / 32u, e = i % 32u;
    float scale = nibble32_fp16(block, NIBBLE32_D);
#if NIBBLE32_SCALES_L >= 0
    const uint low = (nibble32_u8(block, NIBBLE32_SCALES_L + slice / 2u) >> (4u * (slice % 2u))) & 15u;
    const uint high = ((nibble32_u8(block, NIBBLE32_SCALES_H) | (nibble32_u8(block, NIBBLE32_SCALES_H + 1u) << 8u)) >>
                       (2u * slice)) & 3u;
    scale = scale * float(int(low | (high << 4u)) - 32);
#endif
    uint code = (nibble32_u8(block, NIBBLE32_QS + 16u * slice + e % 16u) >> (4u * (e / 16u))) & 15u;
#if NIBBLE32_QH >= 0
    code |= ((nibble32_u8(block, NIBBLE32_QH + e / 8u) >> (e % 8u)) & 1u) << 4u;
#endif
    if (NIBBLE32_LINEAR) {
#if NIBBLE32_M >= 0
        // x = d·q + m, the product rounded before the addition (llmrt::mul_add).
        precise float x = scale * float(code) + nibble32_fp16(block, NIBBLE32_M);
        return x;
#else
        return scale * float(int(code) - NIBBLE32_CODE_OFFSET);
#endif
    }
    const int value = bitfieldExtract(int(nibble32_table_words[code >> 2u]), int(8u * (code & 3u)), 8);
    return scale * float(value);
}
#endif

#endif
