// The element type of a get_rows variant whose block include carries its own scalar dequantizer
// (llmrt_dequantize, under LLMRT_BLOCK_DEQUANTIZE: the families of llmrt/quant/layout.hpp). The
// generated shim includes ops_common.glsl and the block include first.
#ifndef LLMRT_DEQUANTIZE_FROM_BLOCK_GLSL
#define LLMRT_DEQUANTIZE_FROM_BLOCK_GLSL

const uint DQ_BLOCK_VALUES = BLOCK_VALUES;
const uint DQ_BLOCK_BYTES = BLOCK_BYTES;

#endif
