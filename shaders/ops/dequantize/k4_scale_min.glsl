// Six-bit scale and min of sub-block j (0..7) of the 12 scale bytes Q4_K and Q5_K share
// (llmrt::unpack_k4_scale_min): j < 4: sc = b[j] & 63, m = b[j+4] & 63; j >= 4:
// sc = (b[j+4] & 15) | (b[j−4] >> 6) << 4, m = (b[j+4] >> 4) | (b[j] >> 6) << 4.
#ifndef LLMRT_DEQUANTIZE_K4_SCALE_MIN_GLSL
#define LLMRT_DEQUANTIZE_K4_SCALE_MIN_GLSL
#include "ops_common.glsl"

// (sc, m) of sub-block j, the scale bytes at address `scales`.
uvec2 llmrt_k4_scale_min(uint64_t scales, uint j) {
    llmrt_op_u8 b = llmrt_op_u8(scales);
    if (j < 4u) return uvec2(uint(b.v[j]) & 63u, uint(b.v[j + 4u]) & 63u);
    const uint packed = uint(b.v[j + 4u]);
    return uvec2((packed & 15u) | ((uint(b.v[j - 4u]) >> 6u) << 4u), (packed >> 4u) | ((uint(b.v[j]) >> 6u) << 4u));
}

#endif
