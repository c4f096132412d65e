// MXFP4 value i of a block (llmrt::dequantize_block): code = nibble i/16 of qs[i%16], its E2M1
// value doubled from the table, times half the E8M0 scale (2^(e−128), subnormal for e < 2).
#ifndef LLMRT_DEQUANTIZE_MXFP4_GLSL
#define LLMRT_DEQUANTIZE_MXFP4_GLSL
#include "ops_common.glsl"
#include "llmrt/blocks/mxfp4.glsl"

const uint DQ_BLOCK_VALUES = BLOCK_VALUES;
const uint DQ_BLOCK_BYTES = BLOCK_BYTES;

const int llmrt_mxfp4_doubled[16] = int[16](0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);

float llmrt_dequantize(uint64_t block, uint i) {
    block_mxfp4 b = block_mxfp4(block);
    const uint e = uint(b.e);
    const float d = uintBitsToFloat(e < 2u ? (0x00200000u << e) : (e - 1u) << 23u);
    const uint code = (uint(b.qs[i % 16u]) >> (4u * (i / 16u))) & 15u;
    return float(llmrt_mxfp4_doubled[code]) * d;
}

#endif
