// What Q3_K and Q6_K share: 256-value blocks of 16-value sub-blocks with integer scales, read in
// slices of 64 values (four 16-value groups), each quant held as u = q + offset >= 0; the slice
// dot removes the offset with the exact activation sums (the CUDA form: accumulate_sub16).
#ifndef LLMRT_BLOCKS_SUB16_SLICES_GLSL
#define LLMRT_BLOCKS_SUB16_SLICES_GLSL

#include "llmrt/activation_slices.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/weights.glsl"

const uint BLOCK_VALUES = 256u;
const uint SLICE_VALUES = 64u;

struct weight_slice {
    uvec4 v0, v1, v2, v3;  // u = q + offset of each 16-value group, one per byte
    ivec4 scale;           // the groups' integer scales
    float d;
};
#define activation_slice llmrt_act_4x16

activation_slice load_activation_slice(llmrt_q8_1_column col, uint block_pos, uint slice) {
    return llmrt_load_act_4x16(col, block_pos + 128u * (slice >> 1u) + 16u * (slice & 1u));
}

// d·Σ_groups d_a·sc·(Σ u·a_q − offset·Σ a_q).
float sub16_slice_dot(weight_slice w, activation_slice a, int offset) {
    const ivec4 dots = ivec4(llmrt_dot16(w.v0, a.q0), llmrt_dot16(w.v1, a.q1), llmrt_dot16(w.v2, a.q2),
                             llmrt_dot16(w.v3, a.q3));
    const vec4 parts = a.d * vec4(w.scale * (dots - offset * a.sum));
    return w.d * ((parts.x + parts.y) + (parts.z + parts.w));
}

#endif
