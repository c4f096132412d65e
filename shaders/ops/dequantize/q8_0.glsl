// Q8_0 value i of a block (llmrt::dequantize_block): x = d·qs[i]. The field layout is the block
// include's (llmrt/blocks/q8_0.glsl).
#ifndef LLMRT_DEQUANTIZE_Q8_0_GLSL
#define LLMRT_DEQUANTIZE_Q8_0_GLSL
#include "ops_common.glsl"
#include "llmrt/blocks/q8_0.glsl"

const uint DQ_BLOCK_VALUES = BLOCK_VALUES;
const uint DQ_BLOCK_BYTES = BLOCK_BYTES;

float llmrt_dequantize(uint64_t block, uint i) {
    block_q8_0 b = block_q8_0(block);
    return unpackHalf2x16(uint(b.d)).x * float(int(b.qs[i]));
}

#endif
