// Runtime element types; the values are GGUF/ggml type ids.
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
    iq4_nl = 20,
    iq4_xs = 23,
    bf16 = 30,
    mxfp4 = 39,
};

}  // namespace llmrt
