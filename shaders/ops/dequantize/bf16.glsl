// bf16 "blocks": the high half of an f32 (llmrt::bf16_to_fp32: bits << 16).
#ifndef LLMRT_DEQUANTIZE_BF16_GLSL
#define LLMRT_DEQUANTIZE_BF16_GLSL
#include "ops_common.glsl"

const uint DQ_BLOCK_VALUES = 1u;
const uint DQ_BLOCK_BYTES = 2u;

float llmrt_dequantize(uint64_t block, uint i) { return uintBitsToFloat(uint(llmrt_op_u16(block).v[0]) << 16u); }

#endif
