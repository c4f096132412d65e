// Q4_K: 256 weights in 8 sub-blocks of 32, x = d·sc_j·q − dmin·m_j (4.5 bits per weight), as llmrt::q4_K.
//
// | offset | field       | meaning                                                    |
// |--------|-------------|------------------------------------------------------------|
// | 0      | d (fp16)    | super-block scale                                          |
// | 2      | dmin (fp16) | super-block min scale                                      |
// | 4      | scales[12]  | 6-bit sc_j and m_j (k4_scales.glsl)                        |
// | 16     | qs[128]     | byte 32c + l: element 64c + l (low nibble), 64c + 32 + l (high) |
//
// Slice s = 2c + h (8 per block) is qs bytes 32c + 16h .. +15: 16 values of sub-block 2c and 16 of
// 2c + 1. Per half: Σ x·a = d_a·(d·sc·Σ q·a_q − dmin·m·Σ a_q), with Σ a_q the exact activation sum.
#ifndef LLMRT_BLOCK_Q4_K_GLSL
#define LLMRT_BLOCK_Q4_K_GLSL

#include "llmrt/blocks/k4_scales.glsl"

#include "llmrt/blocks/layout/q4_K.glsl"  // Q4_K_OFFSET_<field>, Q4_K_BYTES: generated from the C++ struct

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer block_q4_K {
    layout(offset = Q4_K_OFFSET_D) uint16_t d;
    layout(offset = Q4_K_OFFSET_DMIN) uint16_t dmin;
    layout(offset = Q4_K_OFFSET_SCALES) uint8_t scales[12];
    layout(offset = Q4_K_OFFSET_QS) uint8_t qs[128];
};
#define LLMRT_BLOCK block_q4_K

const uint BLOCK_BYTES = Q4_K_BYTES;

weight_slice load_weight_slice(uint at, uint slice) {
    const uint c = slice >> 1u, h = slice & 1u;
    weight_slice w;
    k4_slice_scales(w, at, c);  // first, as the block's first words: the loads issue in address order
    const uvec4 qs = llmrt_w128(at + Q4_K_OFFSET_QS + 32u * c + 16u * h);
    w.q[0] = qs & 0x0f0f0f0fu;
    w.q[1] = (qs >> 4u) & 0x0f0f0f0fu;
    return w;
}

#endif
