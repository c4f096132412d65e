// Q4_0: 32 weights, 4-bit levels around 8, one fp16 scale (4.5 bits per weight).
//
// | offset | field     | meaning                                                        |
// |--------|-----------|----------------------------------------------------------------|
// | 0      | d  (fp16) | scale; its sign is opposite to the block's largest-|x| value   |
// | 2      | qs[16]    | level of element e < 16 in the low nibble of qs[e], of e + 16 in the high one |
//
// x[e] = d * (q[e] - 8), q in 0..15.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cfloat>
#include <cmath>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/q8_0.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q4_0 {
    uint16_t d;
    uint8_t qs[16];

    static constexpr qtype id = qtype::q4_0;
    static constexpr int64_t block_size = 32;
    static constexpr const char* name = "q4_0";
    static constexpr double round_trip_rmse = 0.0858;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_0;
    static constexpr block_family family = block_family::nibble32;
};
static_assert(sizeof(q4_0) == 18, "q4_0 must be 18 bytes, as ggml's block_q4_0");

// GPU codecs: the nibble32 family (llmrt/quant/layout.hpp).
template <>
struct block_layout<q4_0> {
    static constexpr nibble32_layout value = {
        .bytes = int(sizeof(q4_0)),
        .d = int(offsetof(q4_0, d)),
        .qs = int(offsetof(q4_0, qs)),
        .code_offset = 8,
    };
};

LLMRT_HOST_DEVICE void dequantize_block(const q4_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
        y[j] = float((b.qs[j] & 15) - 8) * d;
        y[j + 16] = float((b.qs[j] >> 4) - 8) * d;
    }
}

namespace detail {
// The levels (0..2·Offset−1) of one Q4_0 (Offset 8) or Q5_0 (Offset 16) block as ggml's
// quantize_row_q4_0_ref and _q5_0_ref pick them. The signed value of largest magnitude (the first
// one on a tie) sets d = max / −Offset, so that it lands on level 0; every value then gets
// q = min(2·Offset − 1, trunc(x·(1/d) + Offset + 0.5)): x·(1/d) + Offset lies in [0, 2·Offset] up
// to rounding, so this is round-half-up, and the opposite extreme, which would need level
// 2·Offset, is clamped. Returns d, before its rounding to fp16.
//
// Inputs that leave ggml's formula undefined, and how llmrt defines them:
//  - a NaN or ±Inf value: an invalid_argument error naming it (llmrt/quant/finite.hpp);
//  - a block whose 1/d overflows (largest |x| below Offset·2^-128, about 2.3e-38 for Q4_0):
//    x·Inf and 0·Inf would be converted to an integer. The block gets all levels 0. Its d
//    rounds to an fp16 zero, so it dequantizes to zeros whatever its levels; level 0 is also what
//    ggml's scalar code stores when built for x86, whose cvttss2si turns an out-of-range float
//    into 0x80000000, of which the integer conversion keeps the low byte, 0.
// Every other finite block gets ggml's levels.
template <int Offset>
inline float quantize_offset_block(const float* x, uint8_t* levels, int64_t block_index, const char* type_name) {
    check_finite_block(x, 32, block_index, type_name);
    const float max = signed_max_abs(x, 32);
    const float d = max / float(-Offset);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (std::fabs(id) > FLT_MAX) [[unlikely]] {
        for (int i = 0; i < 32; ++i) levels[i] = 0;
        return d;
    }
    constexpr float bias = float(Offset) + 0.5f;
    for (int i = 0; i < 32; ++i) {
        const int q = int(x[i] * id + bias);
        levels[i] = uint8_t(q < 2 * Offset - 1 ? q : 2 * Offset - 1);
    }
    return d;
}
}  // namespace detail

// ggml's quantize_row_q4_0_ref (see detail::quantize_offset_block for the levels and for the
// inputs llmrt defines itself).
inline void quantize_row(const float* x, q4_0* y, int64_t n) {
    check_whole_blocks(n, q4_0::block_size, q4_0::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
        uint8_t L[32];
        y[ib].d = fp32_to_fp16(detail::quantize_offset_block<8>(x, L, ib, q4_0::name));
        detail::pack_nibble32_levels(L, y[ib].qs);
    }
}

// ggml's q4_0 x q8_0 CPU dot (ggml_vec_dot_q4_0_q8_0_generic): per block the integer sum
// Σ (q − 8)·qy, then sum += (Σ · dx) · dy, in that order.
inline float vec_dot(const q4_0* x, const q8_0* y, int64_t n) {
    check_whole_blocks(n, q4_0::block_size, q4_0::name, "vec_dot");
    float sum = 0.0f;
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        int sum_lo = 0, sum_hi = 0;
        for (int j = 0; j < 16; ++j) {
            sum_lo += ((x[ib].qs[j] & 15) - 8) * int(y[ib].qs[j]);
            sum_hi += ((x[ib].qs[j] >> 4) - 8) * int(y[ib].qs[j + 16]);
        }
        sum += float(sum_lo + sum_hi) * fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d);
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
