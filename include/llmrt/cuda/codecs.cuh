// Every device codec: one include per weight type of llmrt::weight_types (llmrt/quant/types.hpp).
// A type added to the list without its codec/<type>.cuh fails to compile at device_codec<B>.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/cuda/codec.cuh"
#include "llmrt/cuda/codec/mxfp4.cuh"
#include "llmrt/cuda/codec/q2_K.cuh"
#include "llmrt/cuda/codec/q3_K.cuh"
#include "llmrt/cuda/codec/q4_K.cuh"
#include "llmrt/cuda/codec/q5_K.cuh"
#include "llmrt/cuda/codec/q6_K.cuh"
#include "llmrt/cuda/codec/q8_0.cuh"
#include "llmrt/quant/types.hpp"
