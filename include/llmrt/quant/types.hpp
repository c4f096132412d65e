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

// Quantized weight types: each has a CPU reference mat-vec, a CUDA mmvq kernel and a Vulkan
// integer-dot shader. Adding a type of an existing decoding family is its header (included
// above) and its entry here: every test, bench, kernel instantiation and table follows.
using weight_types = type_list<q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, mxfp4, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs>;

// Unquantized element types (tensors, KV caches, activations).
using plain_types = type_list<f32, f16, bf16>;

// The activation blocks that only activations use: Q8_1 (mmvq's records, Q4_1's and Q5_1's CPU
// dot) and Q8_K (the CPU dot of the 256-value types). (Q8_0 is a weight type too.)
using activation_types = type_list<q8_1, q8_K>;

// Every element type the runtime API (row_size, quantize, dequantize) accepts.
using all_types = list_union_t<list_union_t<plain_types, activation_types>, weight_types>;

namespace detail {
constexpr bool vec_dot_types_listed() {
    bool listed = true;
    weight_types::for_each([&](auto tag) {
        listed = listed && list_contains_v<typename decltype(tag)::type::vec_dot_type, all_types>;
    });
    return listed;
}
}  // namespace detail
static_assert(detail::vec_dot_types_listed(), "llmrt: every weight type's vec_dot_type must be one of llmrt::all_types");

}  // namespace llmrt
