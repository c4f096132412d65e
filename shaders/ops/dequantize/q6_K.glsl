// Q6_K value e of a super-block (llmrt::dequantize_block): with c = e/128, t = (e%128)/32,
// l = e%32 the low nibble is ql[64c + l + 32·(t&1)] >> 4·(t/2), the high two bits
// qh[32c + l] >> 2t; x = (d·scales[e/16])·(q − 32) with the int8 scale.
#ifndef LLMRT_DEQUANTIZE_Q6_K_GLSL
#define LLMRT_DEQUANTIZE_Q6_K_GLSL
#include "ops_common.glsl"
#include "llmrt/blocks/q6_K.glsl"

const uint DQ_BLOCK_VALUES = BLOCK_VALUES;
const uint DQ_BLOCK_BYTES = BLOCK_BYTES;

float llmrt_dequantize(uint64_t block, uint e) {
    block_q6_K b = block_q6_K(block);
    const float d = unpackHalf2x16(uint(b.d)).x;
    const uint c = e / 128u, t = (e % 128u) / 32u, l = e % 32u;
    const uint low = (uint(b.ql[64u * c + l + 32u * (t & 1u)]) >> (4u * (t / 2u))) & 15u;
    const uint high = (uint(b.qh[32u * c + l]) >> (2u * t)) & 3u;
    precise float x = (d * float(int(b.scales[e / 16u]))) * float(int(low | (high << 4u)) - 32);
    return x;
}

#endif
