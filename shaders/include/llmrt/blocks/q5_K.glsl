// Q5_K: 256 weights in 8 sub-blocks of 32, x = d·sc_j·q − dmin·m_j with 5-bit q (5.5 bits per
// weight), as llmrt::q5_K.
//
// | offset | field       | meaning                                             |
// |--------|-------------|-----------------------------------------------------|
// | 0      | d (fp16)    | super-block scale                                   |
// | 2      | dmin (fp16) | super-block min scale                               |
// | 4      | scales[12]  | as Q4_K (k4_scales.glsl)                            |
// | 16     | qh[32]      | fifth bit of element e: bit e/32 of qh[e % 32]      |
// | 48     | qs[128]     | low 4 bits, packed as Q4_K                          |
//
// Slices as Q4_K (s = 2c + h), each also reading qh bytes 16h .. +15 for bits 2c and 2c + 1.
#ifndef LLMRT_BLOCK_Q5_K_GLSL
#define LLMRT_BLOCK_Q5_K_GLSL

#include "llmrt/blocks/k4_scales.glsl"

#include "llmrt/blocks/layout/q5_K.glsl"  // Q5_K_OFFSET_<field>, Q5_K_BYTES: generated from the C++ struct

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer block_q5_K {
    layout(offset = Q5_K_OFFSET_D) uint16_t d;
    layout(offset = Q5_K_OFFSET_DMIN) uint16_t dmin;
    layout(offset = Q5_K_OFFSET_SCALES) uint8_t scales[12];
    layout(offset = Q5_K_OFFSET_QH) uint8_t qh[32];
    layout(offset = Q5_K_OFFSET_QS) uint8_t qs[128];
};
#define LLMRT_BLOCK block_q5_K

const uint BLOCK_BYTES = Q5_K_BYTES;

weight_slice load_weight_slice(uint at, uint slice) {
    const uint c = slice >> 1u, h = slice & 1u;
    weight_slice w;
    k4_slice_scales(w, at, c);  // first, as the block's first words: the loads issue in address order
    const uvec4 qs = llmrt_w128(at + Q5_K_OFFSET_QS + 32u * c + 16u * h);
    const uvec4 qh = llmrt_w128(at + Q5_K_OFFSET_QH + 16u * h) >> (2u * c);
    w.q[0] = (qs & 0x0f0f0f0fu) | ((qh << 4u) & 0x10101010u);
    w.q[1] = ((qs >> 4u) & 0x0f0f0f0fu) | ((qh << 3u) & 0x10101010u);
    return w;
}

#endif
