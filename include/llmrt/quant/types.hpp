// The type list: the one place that enumerates llmrt's element types. CUDA instantiations,
// SPIR-V variants, tests and benches all follow from these lists.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/core/type_list.hpp"
#include "llmrt/quant/iq4_nl.hpp"
#include "llmrt/quant/iq4_xs.hpp"
#include "llmrt/quant/mxfp4.hpp"
#include "llmrt/quant/plain.hpp"
#include "llmrt/quant/q2_K.hpp"
#include "llmrt/quant/q3_K.hpp"
#include "llmrt/quant/q4_0.hpp"
#include "llmrt/quant/q4_1.hpp"
#include "llmrt/quant/q4_K.hpp"
#include "llmrt/quant/q5_0.hpp"
#include "llmrt/quant/q5_1.hpp"
#include "llmrt/quant/q5_K.hpp"
#include "llmrt/quant/q6_K.hpp"
#include "llmrt/quant/q8_0.hpp"
#include "llmrt/quant/q8_1.hpp"
#include "llmrt/quant/q8_K.hpp"

namespace llmrt {

// Every element type the runtime API (row_size, quantize, dequantize) accepts.
using all_types = type_list<f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, q2_K, q3_K, q4_K, q5_K, q6_K, q8_K,
                            iq4_nl, iq4_xs, mxfp4>;

// Quantized weight types: each has a CPU reference mat-vec, a CUDA mmvq kernel and a Vulkan
// integer-dot shader.
using weight_types = type_list<q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, mxfp4, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs>;

}  // namespace llmrt
