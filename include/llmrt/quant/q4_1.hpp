// Q4_1: 32 weights, 4-bit levels above a minimum, fp16 scale and minimum (5 bits per weight).
//
// | offset | field     | meaning                                                        |
// |--------|-----------|----------------------------------------------------------------|
// | 0      | d  (fp16) | scale, (max − min) / 15                                        |
// | 2      | m  (fp16) | the block's minimum                                            |
// | 4      | qs[16]    | level of element e < 16 in the low nibble of qs[e], of e + 16 in the high one |
//
// x[e] = d * q[e] + m, q in 0..15.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cfloat>
#include <cmath>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/q8_1.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[16];

    static constexpr qtype id = qtype::q4_1;
    static constexpr int64_t block_size = 32;
    static constexpr const char* name = "q4_1";
    static constexpr double round_trip_rmse = 0.0776;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_1;
    static constexpr block_family family = block_family::nibble32;
};
static_assert(sizeof(q4_1) == 20, "q4_1 must be 20 bytes, as ggml's block_q4_1");

// GPU codecs: the nibble32 family (llmrt/quant/layout.hpp).
template <>
struct block_layout<q4_1> {
    static constexpr nibble32_layout value = {
        .bytes = int(sizeof(q4_1)),
        .d = int(offsetof(q4_1, d)),
        .m = int(offsetof(q4_1, m)),
        .qs = int(offsetof(q4_1, qs)),
    };
};

LLMRT_HOST_DEVICE void dequantize_block(const q4_1& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    for (int j = 0; j < 16; ++j) {
        y[j] = mul_add(float(b.qs[j] & 15), d, m);
        y[j + 16] = mul_add(float(b.qs[j] >> 4), d, m);
    }
}

namespace detail {
struct affine_block {
    float d;    // scale, before its rounding to fp16
    float min;  // the block's minimum
};

// The levels (0..Top) of one Q4_1 (Top 15) or Q5_1 (Top 31) block as ggml's quantize_row_q4_1_ref
// and _q5_1_ref pick them: d = (max − min) / Top and q = trunc((x − min)·(1/d) + 0.5), rounding
// half up. (x − min)·(1/d) is at most Top up to a few ulps, so q never passes Top; the clamp
// here, which ggml's Q4_1 has and its Q5_1 omits, changes nothing.
//
// Inputs that leave ggml's formula undefined, and how llmrt defines them:
//  - a NaN or ±Inf value: an invalid_argument error naming it (llmrt/quant/finite.hpp);
//  - a block whose 1/d overflows (max − min below Top·2^-128): (x − min)·Inf and 0·Inf would be
//    converted to an integer;
//  - a block whose range max − min overflows to Inf (values of both signs near FLT_MAX): then
//    d = Inf, 1/d = 0, and Inf·0 = NaN for the values whose x − min overflows too.
// Such a block gets all levels 0, which is what ggml's scalar code stores when built for x86
// (cvttss2si gives 0x80000000, whose low byte is 0; in the second case the other values give 0
// anyway). In the first case d and m round to fp16 zeros, so the block dequantizes to zeros as
// ggml's would; in the second, d is an fp16 Inf, as in ggml. Every other finite block gets ggml's
// levels.
template <int Top>
inline affine_block quantize_affine_block(const float* x, uint8_t* levels, int64_t block_index,
                                          const char* type_name) {
    check_finite_block(x, 32, block_index, type_name);
    float min = FLT_MAX, max = -FLT_MAX;
    for (int i = 0; i < 32; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
    }
    const float d = (max - min) / float(Top);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (id > FLT_MAX || d > FLT_MAX) [[unlikely]] {
        for (int i = 0; i < 32; ++i) levels[i] = 0;
        return {d, min};
    }
    for (int i = 0; i < 32; ++i) {
        const int q = int((x[i] - min) * id + 0.5f);
        levels[i] = uint8_t(q < Top ? q : Top);
    }
    return {d, min};
}

// The float tail of ggml's Q4_1/Q5_1 x Q8_1 dots: (dx·dy)·Σ q·qy + m·s, where the activation's
// s = dy·Σ qy carries the minimum's share.
inline float affine_dot_term(uint16_t d, uint16_t m, const q8_1& a, int sumi) {
    return (fp16_to_fp32(d) * fp16_to_fp32(a.d)) * float(sumi) + fp16_to_fp32(m) * fp16_to_fp32(a.s);
}
}  // namespace detail

// ggml's quantize_row_q4_1_ref (see detail::quantize_affine_block for the levels and for the
// inputs llmrt defines itself).
inline void quantize_row(const float* x, q4_1* y, int64_t n) {
    check_whole_blocks(n, q4_1::block_size, q4_1::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
        uint8_t L[32];
        const detail::affine_block fit = detail::quantize_affine_block<15>(x, L, ib, q4_1::name);
        y[ib].d = fp32_to_fp16(fit.d);
        y[ib].m = fp32_to_fp16(fit.min);
        detail::pack_nibble32_levels(L, y[ib].qs);
    }
}

// ggml's q4_1 x q8_1 CPU dot (ggml_vec_dot_q4_1_q8_1_generic).
inline float vec_dot(const q4_1* x, const q8_1* y, int64_t n) {
    check_whole_blocks(n, q4_1::block_size, q4_1::name, "vec_dot");
    float sum = 0.0f;
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        int sum_lo = 0, sum_hi = 0;
        for (int j = 0; j < 16; ++j) {
            sum_lo += (x[ib].qs[j] & 15) * int(y[ib].qs[j]);
            sum_hi += (x[ib].qs[j] >> 4) * int(y[ib].qs[j + 16]);
        }
        sum += detail::affine_dot_term(x[ib].d, x[ib].m, y[ib], sum_lo + sum_hi);
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
