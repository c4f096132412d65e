// Runtime element types; the values are GGUF/ggml type ids.
//
// Every type ggml defines has its enumerator here, whether llmrt decodes it or not (the ones it
// decodes are llmrt::all_types, llmrt/quant/types.hpp), so that adding a type to llmrt never
// edits this file: its header names the enumerator that is already here. The ids are ggml's
// `enum ggml_type` (the same table as llmrt/gguf/ggml_types.hpp, which also names the removed
// ids 4, 5, 31..33 and 36..38 that no file may hold).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>

namespace llmrt {

enum class qtype : uint32_t {
    f32 = 0,
    f16 = 1,
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q8_1 = 9,
    q2_K = 10,
    q3_K = 11,
    q4_K = 12,
    q5_K = 13,
    q6_K = 14,
    q8_K = 15,
    iq2_xxs = 16,
    iq2_xs = 17,
    iq3_xxs = 18,
    iq1_s = 19,
    iq4_nl = 20,
    iq3_s = 21,
    iq2_s = 22,
    iq4_xs = 23,
    i8 = 24,
    i16 = 25,
    i32 = 26,
    i64 = 27,
    f64 = 28,
    iq1_m = 29,
    bf16 = 30,
    tq1_0 = 34,
    tq2_0 = 35,
    mxfp4 = 39,
    nvfp4 = 40,
    q1_0 = 41,
    q2_0 = 42,
};

// The float types a weight matrix may have besides the block-quantized ones: the backends multiply
// them with float mat-vecs, not mmvq, and the lowering fuses them differently.
constexpr bool is_float_matrix_type(qtype t) { return t == qtype::f32 || t == qtype::f16 || t == qtype::bf16; }

}  // namespace llmrt
