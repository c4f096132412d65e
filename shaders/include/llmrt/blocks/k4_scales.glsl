// What Q4_K and Q5_K share: d, dmin at 0 and 2, the 12 scale bytes at 4 (eight 6-bit scales sc_j
// and mins m_j), slices of 32 values (two 16-value halves of sub-blocks 2c and 2c + 1), and the
// slice dot. Each type's file reads its quants into weight_slice.q.
// The scale bytes
// (llmrt::unpack_k4_scale_min): j < 4: sc = b[j] & 63, m = b[j+4] & 63; j >= 4:
// sc = (b[j+4] & 15) | (b[j−4] >> 6) << 4, m = (b[j+4] >> 4) | (b[j] >> 6) << 4.
#ifndef LLMRT_BLOCKS_K4_SCALES_GLSL
#define LLMRT_BLOCKS_K4_SCALES_GLSL

#include "llmrt/activation_slices.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/weights.glsl"

// Scales and mins of the sub-block pair (2c, 2c+1), c = 0..3, from the scale words s (bytes 0..11):
// .x = sc_2c | sc_2c+1 << 8, .y = m_2c | m_2c+1 << 8. Two bytes at a time, as 16-bit lanes.
uvec2 k4_scale_min_pair(uvec3 s, uint c) {
    const uint shift = 16u * (c & 1u);
    if (c < 2u) return uvec2((s.x >> shift) & 0x3f3fu, (s.y >> shift) & 0x3f3fu);
    const uint low = s.z >> shift;
    return uvec2((low & 0x0f0fu) | (((s.x >> shift) >> 2u) & 0x3030u),
                 ((low >> 4u) & 0x0f0fu) | (((s.y >> shift) >> 2u) & 0x3030u));
}

const uint BLOCK_VALUES = 256u;
const uint SLICE_VALUES = 32u;

struct weight_slice {
    uvec4 q[2];  // values of sub-block 2c (q[0]) and 2c + 1 (q[1]), one per byte
    vec2 scale;  // d·sc of the two sub-blocks
    vec2 min;    // dmin·m of the two sub-blocks
};
#define activation_slice llmrt_act_2x16

// The scales and mins of slice s = 2c + h of the block at `at` (d, dmin at 0, scales at 4).
void k4_slice_scales(inout weight_slice w, uint at, uint c) {
    const vec2 dm = unpackHalf2x16(llmrt_w32(at));
    const uvec3 s = uvec3(llmrt_w32(at + 4u), llmrt_w32(at + 8u), llmrt_w32(at + 12u));
    const uvec2 sm = k4_scale_min_pair(s, c);
    w.scale = dm.x * vec2(float(sm.x & 0xffu), float(sm.x >> 8u));
    w.min = dm.y * vec2(float(sm.y & 0xffu), float(sm.y >> 8u));
}

activation_slice load_activation_slice(llmrt_q8_1_column col, uint block_pos, uint slice) {
    return llmrt_load_act_2x16(col, block_pos + 64u * (slice >> 1u) + 16u * (slice & 1u));
}

// Per half: Σ x·a = d_a·(d·sc·Σ q·a_q − dmin·m·Σ a_q), with Σ a_q the exact activation sum.
float slice_dot(weight_slice w, activation_slice a) {
    const vec2 dots = vec2(float(llmrt_dot16(w.q[0], a.q0)), float(llmrt_dot16(w.q[1], a.q1)));
    const vec2 parts = a.d * (w.scale * dots - w.min * vec2(a.sum));
    return parts.x + parts.y;
}

#endif
