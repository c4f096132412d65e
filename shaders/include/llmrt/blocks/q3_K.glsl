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

#include "llmrt/blocks/sub16_slices.glsl"

#include "llmrt/blocks/layout/q3_K.glsl"  // Q3_K_OFFSET_<field>, Q3_K_BYTES: generated from the C++ struct

layout(buffer_reference, std430, buffer_reference_align = 2) readonly buffer block_q3_K {
    layout(offset = Q3_K_OFFSET_HMASK) uint8_t hmask[32];
    layout(offset = Q3_K_OFFSET_QS) uint8_t qs[64];
    layout(offset = Q3_K_OFFSET_SCALES) uint8_t scales[12];
    layout(offset = Q3_K_OFFSET_D) uint16_t d;
};
#define LLMRT_BLOCK block_q3_K

const uint BLOCK_BYTES = Q3_K_BYTES;

weight_slice load_weight_slice(uint at, uint slice) {
    const uint n = slice >> 1u, h = slice & 1u;
    const uvec4 qs = llmrt_w128(at + Q3_K_OFFSET_QS + 32u * n + 16u * h);
    // hmask bytes 16h .. 16h + 15 from bit 4n on: bit i of each byte is group i's high bit (bits
    // 4..7 hold the next byte's bits; no mask below keeps them).
    const uvec4 hm = llmrt_w128_bits(at + Q3_K_OFFSET_HMASK + 16u * h, 4u * n);
    // scales[0..11] and d in one read (the two bytes past the block are not used; Q3_K blocks
    // are never read in place, so they are the tile's).
    const uvec4 sd = llmrt_w128(at + Q3_K_OFFSET_SCALES);
    // Sub-block 8n + 2i + h: low nibble n of scale byte 2i + h, high two bits at bits 4n + 2(i/2)
    // of byte 8 + 2(i % 2) + h. One shift by 8h + 4n brings all of them down: the low nibbles to
    // bits 0 (i even) and 16 (i odd) of lo01 (i < 2) and lo23, the high bits to bits 0, 16
    // (i < 2) and 2, 18 (i >= 2) of hi.
    const uint shift = 8u * h + 4u * n;
    const uint lo01 = sd.x >> shift, lo23 = sd.y >> shift, hi = sd.z >> shift;
    const uint sc01 = (lo01 & 0x000f000fu) | ((hi << 4u) & 0x00300030u);
    const uint sc23 = (lo23 & 0x000f000fu) | ((hi << 2u) & 0x00300030u);
    weight_slice w;
    w.v0 = (qs & 0x03030303u) | ((hm << 2u) & 0x04040404u);
    w.v1 = ((qs >> 2u) & 0x03030303u) | ((hm << 1u) & 0x04040404u);
    w.v2 = ((qs >> 4u) & 0x03030303u) | (hm & 0x04040404u);
    w.v3 = ((qs >> 6u) & 0x03030303u) | ((hm >> 1u) & 0x04040404u);
    w.scale = ivec4(sc01 & 0xffffu, sc01 >> 16u, sc23 & 0xffffu, sc23 >> 16u) - 32;  // i = 0..3
    w.d = unpackHalf2x16(sd.w).x;
    return w;
}

float slice_dot(weight_slice w, activation_slice a) { return sub16_slice_dot(w, a, 4); }

#endif
