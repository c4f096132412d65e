// Q8_0: 32 weights, symmetric 8-bit, one fp16 scale (8.5 bits per weight).
//
// | offset | field     | meaning                 |
// |--------|-----------|-------------------------|
// | 0      | d  (fp16) | scale                   |
// | 2      | qs[32] i8 | x[e] = d * qs[e]        |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include <cfloat>
#include <cmath>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q8_0 {
    uint16_t d;
    int8_t qs[32];

    static constexpr qtype id = qtype::q8_0;
    static constexpr int64_t block_size = 32;
    static constexpr const char* name = "q8_0";
    static constexpr double round_trip_rmse = 5.35e-3;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_0;
};
static_assert(sizeof(q8_0) == 34, "q8_0 must be 34 bytes, as ggml's block_q8_0");

// The fields, for the GLSL offsets generated from them (llmrt/quant/layout.hpp).
template <>
struct block_fields<q8_0> {
    static constexpr block_field value[] = {LLMRT_BLOCK_FIELD(q8_0, d), LLMRT_BLOCK_FIELD(q8_0, qs)};
};

LLMRT_HOST_DEVICE void dequantize_block(const q8_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int i = 0; i < 32; ++i) y[i] = d * float(b.qs[i]);
}

namespace detail {
// ggml's symmetric 8-bit rounding of one block of 32 (quantize_row_q8_0_ref and _q8_1_ref):
// d = amax/127, q = roundf(x / d) computed as x * (1/d), ties away from zero. Returns d.
//
// Two inputs leave ggml's formula undefined, and llmrt defines them:
//  - a NaN or ±Inf value: an invalid_argument error naming it (llmrt/quant/finite.hpp);
//  - amax below 127/FLT_MAX (about 3.7e-37, all values tiny or subnormal): 1/d overflows to Inf
//    and x·Inf (or 0·Inf = NaN) would be converted to int8. Such a block gets q = 0. Its d
//    rounds to fp16 zero anyway, so the block dequantizes to zeros as ggml's would. The zero
//    quants are also what ggml's scalar reference typically stores when built for x86: its
//    cvttss2si turns an out-of-range float into 0x80000000, whose low byte is 0.
// Every other finite block gets ggml's bytes.
inline float quantize_q8_block(const float* x, int8_t* qs, int64_t block_index, const char* type_name) {
    check_finite_block(x, 32, block_index, type_name);
    const float d = max_abs(x, 32) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (id > FLT_MAX) [[unlikely]] {
        for (int i = 0; i < 32; ++i) qs[i] = 0;
        return d;
    }
    for (int i = 0; i < 32; ++i) qs[i] = int8_t(std::roundf(x[i] * id));
    return d;
}
}  // namespace detail

inline void quantize_row(const float* x, q8_0* y, int64_t n) {
    check_whole_blocks(n, q8_0::block_size, q8_0::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32)
        y[ib].d = fp32_to_fp16(detail::quantize_q8_block(x, y[ib].qs, ib, q8_0::name));
}

// Σ_blocks Σ qx·qy · (dx·dy), ggml's q8_0 x q8_0 CPU dot.
inline float vec_dot(const q8_0* x, const q8_0* y, int64_t n) {
    check_whole_blocks(n, q8_0::block_size, q8_0::name, "vec_dot");
    float sum = 0.0f;
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        int sumi = 0;
        for (int i = 0; i < 32; ++i) sumi += int(x[ib].qs[i]) * int(y[ib].qs[i]);
        sum += float(sumi) * (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d));
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
