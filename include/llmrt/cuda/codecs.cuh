// Every device codec: one include per family of llmrt/quant/layout.hpp (every type of the family
// gets its codec from its layout), and one per type whose codec is its own (block_family::own).
// A type of llmrt::weight_types (llmrt/quant/types.hpp) without a codec fails to compile at
// device_codec<B>.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/cuda/codec.cuh"
#include "llmrt/cuda/codec/mxfp4.cuh"
#include "llmrt/cuda/codec/nibble32.cuh"
#include "llmrt/cuda/codec/q2_K.cuh"
#include "llmrt/cuda/codec/q3_K.cuh"
#include "llmrt/cuda/codec/q4_K.cuh"
#include "llmrt/cuda/codec/q5_K.cuh"
#include "llmrt/cuda/codec/q6_K.cuh"
#include "llmrt/cuda/codec/q8_0.cuh"
#include "llmrt/quant/types.hpp"
