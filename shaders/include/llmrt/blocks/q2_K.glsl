// Q2_K: 256 weights in 16 sub-blocks of 16, x = d·sc_j·q − dmin·m_j (2.625 bits per weight), as llmrt::q2_K.
//
// | offset | field       | meaning                                                         |
// |--------|-------------|-----------------------------------------------------------------|
// | 0      | scales[16]  | sub-block j: sc_j low nibble, m_j high nibble                    |
// | 16     | qs[64]      | byte 32n + l holds elements 128n + 32i + l at bits 2i (i = 0..3) |
// | 80     | d (fp16)    | super-block scale                                               |
// | 82     | dmin (fp16) | super-block min scale                                           |
//
// Slice s = 2n + h (4 per block) is qs bytes 32n + 16h .. +15: for i = 0..3 the 16 values
// 128n + 32i + 16h + (0..15) of sub-block 8n + 2i + h, whose scale bytes sit two apart.
#ifndef LLMRT_BLOCK_Q2_K_GLSL
#define LLMRT_BLOCK_Q2_K_GLSL

#include "llmrt/activation_slices.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/weights.glsl"

#include "llmrt/blocks/layout/q2_K.glsl"  // Q2_K_OFFSET_<field>, Q2_K_BYTES: generated from the C++ struct

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer block_q2_K {
    layout(offset = Q2_K_OFFSET_SCALES) uint8_t scales[16];
    layout(offset = Q2_K_OFFSET_QS) uint8_t qs[64];
    layout(offset = Q2_K_OFFSET_D) uint16_t d;
    layout(offset = Q2_K_OFFSET_DMIN) uint16_t dmin;
};
#define LLMRT_BLOCK block_q2_K

const uint BLOCK_BYTES = Q2_K_BYTES;
const uint BLOCK_VALUES = 256u;
const uint SLICE_VALUES = 64u;

struct weight_slice {
    uvec4 q0, q1, q2, q3;  // 2-bit values of group i, one per byte
    ivec4 scale;
    ivec4 min;
    vec2 dm;               // d, dmin
};
#define activation_slice llmrt_act_4x16

weight_slice load_weight_slice(uint at, uint slice) {
    const uint n = slice >> 1u, h = slice & 1u;
    const uvec4 qs = llmrt_w128(at + Q2_K_OFFSET_QS + 32u * n + 16u * h);
    // Scale bytes 8n + h + 2i (i = 0..3), gathered as [i0, i2, i1, i3].
    const uint sc = llmrt_gather_alternate_bytes(llmrt_w32(at + Q2_K_OFFSET_SCALES + 8u * n),
                                                 llmrt_w32(at + Q2_K_OFFSET_SCALES + 8u * n + 4u), h);
    weight_slice w;
    w.q0 = qs & 0x03030303u;
    w.q1 = (qs >> 2u) & 0x03030303u;
    w.q2 = (qs >> 4u) & 0x03030303u;
    w.q3 = (qs >> 6u) & 0x03030303u;
    const uvec4 bytes = uvec4(sc & 0xffu, (sc >> 16u) & 0xffu, (sc >> 8u) & 0xffu, sc >> 24u);  // i = 0..3
    w.scale = ivec4(bytes & 15u);
    w.min = ivec4(bytes >> 4u);
    w.dm = unpackHalf2x16(llmrt_w32(at + Q2_K_OFFSET_D));
    return w;
}

activation_slice load_activation_slice(llmrt_q8_1_column col, uint block_pos, uint slice) {
    return llmrt_load_act_4x16(col, block_pos + 128u * (slice >> 1u) + 16u * (slice & 1u));
}

float slice_dot(weight_slice w, activation_slice a) {
    const ivec4 dots = ivec4(llmrt_dot16(w.q0, a.q0), llmrt_dot16(w.q1, a.q1), llmrt_dot16(w.q2, a.q2),
                             llmrt_dot16(w.q3, a.q3));
    const vec4 scaled = a.d * vec4(w.scale * dots), mins = a.d * vec4(w.min * a.sum);
    return w.dm.x * ((scaled.x + scaled.y) + (scaled.z + scaled.w)) - w.dm.y * ((mins.x + mins.y) + (mins.z + mins.w));
}

#endif
