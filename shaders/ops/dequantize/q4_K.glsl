// Q4_K value e of a super-block (llmrt::dequantize_block): sub-block j = e/32 with its 6-bit
// scale and min (k4_scale_min.glsl); the 4-bit level is nibble j%2 of qs[32·(j/2) + e%32];
// x = (d·sc)·q − dmin·m, the product rounded before the subtraction (`precise`).
#ifndef LLMRT_DEQUANTIZE_Q4_K_GLSL
#define LLMRT_DEQUANTIZE_Q4_K_GLSL
#include "ops_common.glsl"
#include "llmrt/blocks/q4_K.glsl"
#include "dequantize/k4_scale_min.glsl"

const uint DQ_BLOCK_VALUES = BLOCK_VALUES;
const uint DQ_BLOCK_BYTES = BLOCK_BYTES;

float llmrt_dequantize(uint64_t block, uint e) {
    block_q4_K b = block_q4_K(block);
    const float d = unpackHalf2x16(uint(b.d)).x, dmin = unpackHalf2x16(uint(b.dmin)).x;
    const uint j = e / 32u, l = e % 32u;
    const uvec2 sm = llmrt_k4_scale_min(block + Q4_K_OFFSET_SCALES, j);
    const uint q = (uint(b.qs[32u * (j / 2u) + l]) >> (4u * (j % 2u))) & 15u;
    const float dl = d * float(sm.x), ml = dmin * float(sm.y);
    precise float x = dl * float(q) - ml;
    return x;
}

#endif
