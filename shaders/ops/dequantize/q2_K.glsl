// Q2_K value e of a super-block (llmrt::dequantize_block): sub-block j = e/16 has the 4-bit scale
// and min of scales[j]; the 2-bit level sits in qs[32·(e/128) + e%32] at bit 2·((e%128)/32);
// x = (d·sc)·q − dmin·m, the product rounded before the subtraction (`precise`).
#ifndef LLMRT_DEQUANTIZE_Q2_K_GLSL
#define LLMRT_DEQUANTIZE_Q2_K_GLSL
#include "ops_common.glsl"
#include "llmrt/blocks/q2_K.glsl"

const uint DQ_BLOCK_VALUES = BLOCK_VALUES;
const uint DQ_BLOCK_BYTES = BLOCK_BYTES;

float llmrt_dequantize(uint64_t block, uint e) {
    block_q2_K b = block_q2_K(block);
    const float d = unpackHalf2x16(uint(b.d)).x, dmin = unpackHalf2x16(uint(b.dmin)).x;
    const uint sc = uint(b.scales[e / 16u]);
    const uint q = (uint(b.qs[32u * (e / 128u) + e % 32u]) >> (2u * ((e % 128u) / 32u))) & 3u;
    precise float x = (d * float(sc & 15u)) * float(q) - dmin * float(sc >> 4u);
    return x;
}

#endif
