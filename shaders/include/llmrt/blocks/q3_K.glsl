// Q3_K: 256 weights in 16 sub-blocks of 16, x = d·(sc_j − 32)·q (3.4375 bits per weight), as llmrt::q3_K.
//
// | offset | field       | meaning                                                          |
// |--------|-------------|------------------------------------------------------------------|
// | 0      | hmask[32]   | bit e/32 of hmask[e % 32] set: q = low2, clear: q = low2 − 4      |
// | 32     | qs[64]      | low 2 bits, packed as Q2_K                                        |
// | 96     | scales[12]  | 6-bit sc_j: low nibble of byte j (j < 8) or high nibble of j − 8; |
// |        |             | high 2 bits at bits 2(j/4) of byte 8 + j % 4                      |
// | 108    | d (fp16)    | super-block scale                                                 |
//
// Slices as Q2_K (s = 2n + h). With v = low2 + 4·hbit = q + 4 in 0..7, Σ q·a = Σ v·a − 4·Σ a.
#ifndef LLMRT_BLOCK_Q3_K_GLSL
#define LLMRT_BLOCK_Q3_K_GLSL

#include "llmrt/activation_slices.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/weights.glsl"

#define Q3_K_OFFSET_HMASK 0
#define Q3_K_OFFSET_QS 32
#define Q3_K_OFFSET_SCALES 96
#define Q3_K_OFFSET_D 108
#define Q3_K_BYTES 110

layout(buffer_reference, std430, buffer_reference_align = 2) readonly buffer block_q3_K {
    layout(offset = Q3_K_OFFSET_HMASK) uint8_t hmask[32];
    layout(offset = Q3_K_OFFSET_QS) uint8_t qs[64];
    layout(offset = Q3_K_OFFSET_SCALES) uint8_t scales[12];
    layout(offset = Q3_K_OFFSET_D) uint16_t d;
};
#define LLMRT_BLOCK block_q3_K

const uint BLOCK_BYTES = Q3_K_BYTES;
const uint BLOCK_VALUES = 256u;
const uint SLICE_VALUES = 64u;

struct weight_slice {
    uvec4 v0, v1, v2, v3;  // q + 4 of group i, one per byte
    ivec4 scale;           // sc − 32
    float d;
};
#define activation_slice llmrt_act_4x16

weight_slice load_weight_slice(uint at, uint slice) {
    const uint n = slice >> 1u, h = slice & 1u;
    const uvec4 qs = llmrt_w128(at + Q3_K_OFFSET_QS + 32u * n + 16u * h);
    const uvec4 hm = llmrt_w128(at + Q3_K_OFFSET_HMASK + 16u * h) >> (4u * n);
    // Sub-block 8n + 2i + h: low nibble from byte 2i + h (n = 0: low half, n = 1: high half),
    // high bits from byte 8 + 2(i % 2) + h at bit 4n + 2(i / 2); gathered as [i0, i2, i1, i3].
    const uint low = (llmrt_gather_alternate_bytes(llmrt_w32(at + Q3_K_OFFSET_SCALES),
                                                   llmrt_w32(at + Q3_K_OFFSET_SCALES + 4u), h) >> (4u * n)) & 0x0f0f0f0fu;
    const uint x = llmrt_w32(at + Q3_K_OFFSET_SCALES + 8u) >> (8u * h + 4u * n);
    const uint high = (x & 0x00030003u) | (((x >> 2u) & 0x00030003u) << 8u);
    const uint sc = low | (high << 4u);
    weight_slice w;
    w.v0 = (qs & 0x03030303u) | ((hm << 2u) & 0x04040404u);
    w.v1 = ((qs >> 2u) & 0x03030303u) | ((hm << 1u) & 0x04040404u);
    w.v2 = ((qs >> 4u) & 0x03030303u) | (hm & 0x04040404u);
    w.v3 = ((qs >> 6u) & 0x03030303u) | ((hm >> 1u) & 0x04040404u);
    w.scale = ivec4(sc & 0xffu, (sc >> 16u) & 0xffu, (sc >> 8u) & 0xffu, sc >> 24u) - 32;  // i = 0..3
    w.d = unpackHalf2x16(llmrt_w32(at + Q3_K_OFFSET_D)).x;
    return w;
}

activation_slice load_activation_slice(llmrt_q8_1_column col, uint block_pos, uint slice) {
    return llmrt_load_act_4x16(col, block_pos + 128u * (slice >> 1u) + 16u * (slice & 1u));
}

float slice_dot(weight_slice w, activation_slice a) {
    const ivec4 dots = ivec4(llmrt_dot16(w.v0, a.q0), llmrt_dot16(w.v1, a.q1), llmrt_dot16(w.v2, a.q2),
                             llmrt_dot16(w.v3, a.q3));
    const vec4 parts = a.d * vec4(w.scale * (dots - 4 * a.sum));
    return w.d * ((parts.x + parts.y) + (parts.z + parts.w));
}

#endif
