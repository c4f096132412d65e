// Q6_K: 256 weights in 16 sub-blocks of 16, x = d·sc_j·q (6.5625 bits per weight), as llmrt::q6_K.
//
// | offset | field       | meaning                                                               |
// |--------|-------------|-----------------------------------------------------------------------|
// | 0      | ql[128]     | low 4 bits of e = 128c + 32t + l: ql[64c + l + 32(t & 1)], high nibble if t >= 2 |
// | 128    | qh[64]      | high 2 bits at (qh[32c + l] >> 2t) & 3                                 |
// | 192    | scales[16]  | signed 8-bit sub-block scales                                         |
// | 208    | d (fp16)    | super-block scale; q = (low | high << 4) − 32                          |
//
// Slice s = 2c + h (4 per block) takes l = 16h .. 16h + 15 for t = 0..3: 64 values of the
// sub-blocks 8c + 2t + h. With v = q + 32 in 0..63, Σ q·a = Σ v·a − 32·Σ a.
#ifndef LLMRT_BLOCK_Q6_K_GLSL
#define LLMRT_BLOCK_Q6_K_GLSL

#include "llmrt/blocks/sub16_slices.glsl"

#include "llmrt/blocks/layout/q6_K.glsl"  // Q6_K_OFFSET_<field>, Q6_K_BYTES: generated from the C++ struct

layout(buffer_reference, std430, buffer_reference_align = 2) readonly buffer block_q6_K {
    layout(offset = Q6_K_OFFSET_QL) uint8_t ql[128];
    layout(offset = Q6_K_OFFSET_QH) uint8_t qh[64];
    layout(offset = Q6_K_OFFSET_SCALES) int8_t scales[16];
    layout(offset = Q6_K_OFFSET_D) uint16_t d;
};
#define LLMRT_BLOCK block_q6_K

const uint BLOCK_BYTES = Q6_K_BYTES;

weight_slice load_weight_slice(uint at, uint slice) {
    const uint c = slice >> 1u, h = slice & 1u;
    const uvec4 ql0 = llmrt_w128(at + Q6_K_OFFSET_QL + 64u * c + 16u * h);        // t = 0 (low), 2 (high)
    const uvec4 ql1 = llmrt_w128(at + Q6_K_OFFSET_QL + 64u * c + 32u + 16u * h);  // t = 1 (low), 3 (high)
    const uvec4 qh = llmrt_w128(at + Q6_K_OFFSET_QH + 32u * c + 16u * h);
    // Scale bytes 8c + h + 2t (t = 0..3), gathered as [t0, t2, t1, t3] (one read: the upper
    // two words are not used).
    const uvec4 scale_words = llmrt_w128(at + Q6_K_OFFSET_SCALES + 8u * c);
    const uint sc = llmrt_gather_alternate_bytes(scale_words.x, scale_words.y, h);
    weight_slice w;
    w.v0 = (ql0 & 0x0f0f0f0fu) | ((qh << 4u) & 0x30303030u);
    w.v1 = (ql1 & 0x0f0f0f0fu) | ((qh << 2u) & 0x30303030u);
    w.v2 = ((ql0 >> 4u) & 0x0f0f0f0fu) | (qh & 0x30303030u);
    w.v3 = ((ql1 >> 4u) & 0x0f0f0f0fu) | ((qh >> 2u) & 0x30303030u);
    // Signed bytes, t = 0..3 at byte positions 0, 2, 1, 3: shift each to the top, then down.
    w.scale = ivec4(int(sc << 24u), int(sc << 8u), int(sc << 16u), int(sc)) >> 24;
    w.d = unpackHalf2x16(llmrt_w32(at + Q6_K_OFFSET_D)).x;
    return w;
}

float slice_dot(weight_slice w, activation_slice a) { return sub16_slice_dot(w, a, 32); }

#endif
