// Unquantized element types, as blocks of one element so that one dispatch covers them.
//
// | type | bytes | element                       |
// |------|-------|-------------------------------|
// | f32  | 4     | IEEE binary32                 |
// | f16  | 2     | IEEE binary16                 |
// | bf16 | 2     | bfloat16 (upper half of f32)  |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/traits.hpp"

namespace llmrt {

struct f32 {
    float value;
    static constexpr qtype id = qtype::f32;
    static constexpr int64_t block_size = 1;
    static constexpr const char* name = "f32";
    static constexpr double round_trip_rmse = 0.0;  // see llmrt/quant/traits.hpp
};
struct f16 {
    uint16_t bits;
    static constexpr qtype id = qtype::f16;
    static constexpr int64_t block_size = 1;
    static constexpr const char* name = "f16";
    static constexpr double round_trip_rmse = 2.08e-4;  // see llmrt/quant/traits.hpp
};
struct bf16 {
    uint16_t bits;
    static constexpr qtype id = qtype::bf16;
    static constexpr int64_t block_size = 1;
    static constexpr const char* name = "bf16";
    static constexpr double round_trip_rmse = 1.66e-3;  // see llmrt/quant/traits.hpp
};
static_assert(sizeof(f32) == 4 && sizeof(f16) == 2 && sizeof(bf16) == 2, "plain element sizes");

LLMRT_HOST_DEVICE void dequantize_block(const f32& b, float* y) { *y = b.value; }
LLMRT_HOST_DEVICE void dequantize_block(const f16& b, float* y) { *y = fp16_to_fp32(b.bits); }
LLMRT_HOST_DEVICE void dequantize_block(const bf16& b, float* y) { *y = bf16_to_fp32(b.bits); }

inline void quantize_row(const float* x, f32* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i].value = x[i];
}
inline void quantize_row(const float* x, f16* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i].bits = fp32_to_fp16(x[i]);
}
inline void quantize_row(const float* x, bf16* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i].bits = fp32_to_bf16(x[i]);
}

}  // namespace llmrt
