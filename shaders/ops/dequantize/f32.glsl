// f32 "blocks": one value of 4 bytes.
#ifndef LLMRT_DEQUANTIZE_F32_GLSL
#define LLMRT_DEQUANTIZE_F32_GLSL
#include "ops_common.glsl"

const uint DQ_BLOCK_VALUES = 1u;
const uint DQ_BLOCK_BYTES = 4u;

float llmrt_dequantize(uint64_t block, uint i) { return llmrt_op_f32(block).v[0]; }

#endif
