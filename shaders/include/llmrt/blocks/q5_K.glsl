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

#include "llmrt/activation_slices.glsl"
#include "llmrt/blocks/k4_scales.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/weights.glsl"

#define Q5_K_OFFSET_D 0
#define Q5_K_OFFSET_DMIN 2
#define Q5_K_OFFSET_SCALES 4
#define Q5_K_OFFSET_QH 16
#define Q5_K_OFFSET_QS 48
#define Q5_K_BYTES 176

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer block_q5_K {
    layout(offset = Q5_K_OFFSET_D) uint16_t d;
    layout(offset = Q5_K_OFFSET_DMIN) uint16_t dmin;
    layout(offset = Q5_K_OFFSET_SCALES) uint8_t scales[12];
    layout(offset = Q5_K_OFFSET_QH) uint8_t qh[32];
    layout(offset = Q5_K_OFFSET_QS) uint8_t qs[128];
};
#define LLMRT_BLOCK block_q5_K

const uint BLOCK_BYTES = Q5_K_BYTES;
const uint BLOCK_VALUES = 256u;
const uint SLICE_VALUES = 32u;

struct weight_slice {
    uvec4 q[2];  // values of sub-block 2c (q[0]) and 2c + 1 (q[1]), one per byte
    vec2 scale;  // d·sc of the two sub-blocks
    vec2 min;    // dmin·m of the two sub-blocks
};
#define activation_slice llmrt_act_2x16

weight_slice load_weight_slice(uint at, uint slice) {
    const uint c = slice >> 1u, h = slice & 1u;
    const vec2 dm = unpackHalf2x16(llmrt_w32(at + Q5_K_OFFSET_D));
    const uvec3 s = uvec3(llmrt_w32(at + Q5_K_OFFSET_SCALES), llmrt_w32(at + Q5_K_OFFSET_SCALES + 4u),
                          llmrt_w32(at + Q5_K_OFFSET_SCALES + 8u));
    const uvec2 sm = k4_scale_min_pair(s, c);
    const uvec4 qs = llmrt_w128(at + Q5_K_OFFSET_QS + 32u * c + 16u * h);
    const uvec4 qh = llmrt_w128(at + Q5_K_OFFSET_QH + 16u * h) >> (2u * c);
    weight_slice w;
    w.q[0] = (qs & 0x0f0f0f0fu) | ((qh << 4u) & 0x10101010u);
    w.q[1] = ((qs >> 4u) & 0x0f0f0f0fu) | ((qh << 3u) & 0x10101010u);
    w.scale = dm.x * vec2(float(sm.x & 0xffu), float(sm.x >> 8u));
    w.min = dm.y * vec2(float(sm.y & 0xffu), float(sm.y >> 8u));
    return w;
}

activation_slice load_activation_slice(llmrt_q8_1_column col, uint block_pos, uint slice) {
    return llmrt_load_act_2x16(col, block_pos + 64u * (slice >> 1u) + 16u * (slice & 1u));
}

float slice_dot(weight_slice w, activation_slice a) {
    const vec2 dots = vec2(float(llmrt_dot16(w.q[0], a.q0)), float(llmrt_dot16(w.q[1], a.q1)));
    const vec2 parts = a.d * (w.scale * dots - w.min * vec2(a.sum));
    return parts.x + parts.y;
}

#endif
