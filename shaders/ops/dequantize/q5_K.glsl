// Q5_K value e of a super-block (llmrt::dequantize_block): Q4_K's level plus a fifth bit, bit j
// of qh[e%32] (j = e/32); x = (d·sc)·q − dmin·m, the product rounded first (`precise`).
#ifndef LLMRT_DEQUANTIZE_Q5_K_GLSL
#define LLMRT_DEQUANTIZE_Q5_K_GLSL
#include "ops_common.glsl"
#include "llmrt/blocks/q5_K.glsl"
#include "dequantize/k4_scale_min.glsl"

const uint DQ_BLOCK_VALUES = BLOCK_VALUES;
const uint DQ_BLOCK_BYTES = BLOCK_BYTES;

float llmrt_dequantize(uint64_t block, uint e) {
    block_q5_K b = block_q5_K(block);
    const float d = unpackHalf2x16(uint(b.d)).x, dmin = unpackHalf2x16(uint(b.dmin)).x;
    const uint j = e / 32u, l = e % 32u;
    const uvec2 sm = llmrt_k4_scale_min(block + Q5_K_OFFSET_SCALES, j);
    const uint q = ((uint(b.qs[32u * (j / 2u) + l]) >> (4u * (j % 2u))) & 15u) | (((uint(b.qh[l]) >> j) & 1u) << 4u);
    const float dl = d * float(sm.x), ml = dmin * float(sm.y);
    precise float x = dl * float(q) - ml;
    return x;
}

#endif
