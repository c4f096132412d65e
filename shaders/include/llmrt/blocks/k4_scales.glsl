// The 12 scale bytes shared by Q4_K and Q5_K: eight 6-bit scales sc_j and mins m_j
// (llmrt::unpack_k4_scale_min): j < 4: sc = b[j] & 63, m = b[j+4] & 63; j >= 4:
// sc = (b[j+4] & 15) | (b[j−4] >> 6) << 4, m = (b[j+4] >> 4) | (b[j] >> 6) << 4.
#ifndef LLMRT_BLOCKS_K4_SCALES_GLSL
#define LLMRT_BLOCKS_K4_SCALES_GLSL

// Scales and mins of the sub-block pair (2c, 2c+1), c = 0..3, from the scale words s (bytes 0..11):
// .x = sc_2c | sc_2c+1 << 8, .y = m_2c | m_2c+1 << 8. Two bytes at a time, as 16-bit lanes.
uvec2 k4_scale_min_pair(uvec3 s, uint c) {
    const uint shift = 16u * (c & 1u);
    if (c < 2u) return uvec2((s.x >> shift) & 0x3f3fu, (s.y >> shift) & 0x3f3fu);
    const uint low = s.z >> shift;
    return uvec2((low & 0x0f0fu) | (((s.x >> shift) >> 2u) & 0x3030u),
                 ((low >> 4u) & 0x0f0fu) | (((s.y >> shift) >> 2u) & 0x3030u));
}

#endif
