// Q8_0: 32 weights, x = d·q (8.5 bits per weight), as llmrt::q8_0 (include/llmrt/quant/q8_0.hpp).
//
// | offset | field     | meaning          |
// |--------|-----------|------------------|
// | 0      | d (fp16)  | scale            |
// | 2      | qs[32] i8 | x[e] = d·qs[e]   |
//
// A slice is the whole block: Σ_e qs[e]·a[e] in four-byte dots, times d_w·d_a.
#ifndef LLMRT_BLOCK_Q8_0_GLSL
#define LLMRT_BLOCK_Q8_0_GLSL

#include "llmrt/activation_slices.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/weights.glsl"

#include "llmrt/blocks/layout/q8_0.glsl"  // Q8_0_OFFSET_<field>, Q8_0_BYTES: generated from the C++ struct

// The block field for field (tests/vulkan holds it against the C++ struct).
layout(buffer_reference, std430, buffer_reference_align = 2) readonly buffer block_q8_0 {
    layout(offset = Q8_0_OFFSET_D) uint16_t d;
    layout(offset = Q8_0_OFFSET_QS) int8_t qs[32];
};
#define LLMRT_BLOCK block_q8_0

const uint BLOCK_BYTES = Q8_0_BYTES;
const uint BLOCK_VALUES = 32u;
const uint SLICE_VALUES = 32u;

struct weight_slice {
    uvec4 q0, q1;
    float d;
};
#define activation_slice llmrt_act_32

weight_slice load_weight_slice(uint at, uint slice) {
    weight_slice w;
    w.d = unpackHalf2x16(llmrt_w32(at + Q8_0_OFFSET_D)).x;
    w.q0 = llmrt_w128(at + Q8_0_OFFSET_QS);
    w.q1 = llmrt_w128(at + Q8_0_OFFSET_QS + 16u);
    return w;
}

activation_slice load_activation_slice(llmrt_q8_1_column col, uint block_pos, uint slice) {
    return llmrt_load_act_32(col, block_pos);
}

float slice_dot(weight_slice w, activation_slice a) {
    return float(llmrt_dot16(w.q0, a.q0) + llmrt_dot16(w.q1, a.q1)) * (w.d * a.d);
}

#endif
