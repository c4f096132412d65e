// Q3_K value e of a super-block (llmrt::dequantize_block): the 2-bit low part as in Q2_K, minus 4
// where hmask[e%32] lacks bit e/32; the 6-bit scale j = e/16 has its low nibble in scales[j] (j < 8)
// or scales[j−8] >> 4, its high two bits in scales[8 + j%4] at bit 2·(j/4), offset by 32;
// x = (d·sc)·q.
#ifndef LLMRT_DEQUANTIZE_Q3_K_GLSL
#define LLMRT_DEQUANTIZE_Q3_K_GLSL
#include "ops_common.glsl"
#include "llmrt/blocks/q3_K.glsl"

const uint DQ_BLOCK_VALUES = BLOCK_VALUES;
const uint DQ_BLOCK_BYTES = BLOCK_BYTES;

float llmrt_dequantize(uint64_t block, uint e) {
    block_q3_K b = block_q3_K(block);
    const float d = unpackHalf2x16(uint(b.d)).x;
    const uint low = (uint(b.qs[32u * (e / 128u) + e % 32u]) >> (2u * ((e % 128u) / 32u))) & 3u;
    const int q = int(low) - (((uint(b.hmask[e % 32u]) >> (e / 32u)) & 1u) != 0u ? 0 : 4);
    const uint j = e / 16u;
    const uint scale_low = j < 8u ? uint(b.scales[j]) & 15u : uint(b.scales[j - 8u]) >> 4u;
    const uint scale_high = (uint(b.scales[8u + j % 4u]) >> (2u * (j / 4u))) & 3u;
    const int sc = int(scale_low | (scale_high << 4u)) - 32;
    precise float x = (d * float(sc)) * float(q);
    return x;
}

#endif
