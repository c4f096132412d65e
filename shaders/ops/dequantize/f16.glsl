// f16 "blocks": one IEEE half of 2 bytes, widened exactly (llmrt::fp16_to_fp32).
#ifndef LLMRT_DEQUANTIZE_F16_GLSL
#define LLMRT_DEQUANTIZE_F16_GLSL
#include "ops_common.glsl"

const uint DQ_BLOCK_VALUES = 1u;
const uint DQ_BLOCK_BYTES = 2u;

float llmrt_dequantize(uint64_t block, uint i) { return unpackHalf2x16(uint(llmrt_op_u16(block).v[0])).x; }

#endif
