// MXFP4 (OCP Microscaling): 32 E2M1 values sharing one E8M0 exponent (4.25 bits per weight).
//
// | offset | field       | meaning                                                  |
// |--------|-------------|----------------------------------------------------------|
// | 0      | e (E8M0)    | shared exponent                                          |
// | 1      | qs[16]      | element j in the low nibble of qs[j], j+16 in the high  |
//
// x = mxfp4_values[code] * 2^(e-128): the table holds twice the E2M1 values, so the scale
// is half the E8M0 value (ggml's convention, which keeps the table integral for dp4a).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include <cmath>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/q8_0.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct mxfp4 {
    uint8_t e;
    uint8_t qs[16];

    static constexpr qtype id = qtype::mxfp4;
    static constexpr int64_t block_size = 32;
    static constexpr const char* name = "mxfp4";
    static constexpr double round_trip_rmse = 0.115;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_0;
};
static_assert(sizeof(mxfp4) == 17, "mxfp4 must be 17 bytes, as ggml's block_mxfp4");

// The fields, for the GLSL offsets generated from them (llmrt/quant/layout.hpp).
template <>
struct block_fields<mxfp4> {
    static constexpr block_field value[] = {LLMRT_BLOCK_FIELD(mxfp4, e), LLMRT_BLOCK_FIELD(mxfp4, qs)};
};

// 2 × E2M1 {0, 0.5, 1, 1.5, 2, 3, 4, 6}, sign in bit 3 (code 8 is -0, stored as 0).
LLMRT_HOST_DEVICE int8_t mxfp4_value(int code) {
    constexpr int8_t table[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    return table[code & 15];
}

LLMRT_HOST_DEVICE void dequantize_block(const mxfp4& b, float* y) {
    const float d = e8m0_to_fp32_half(b.e);
    for (int j = 0; j < 16; ++j) {
        y[j] = float(mxfp4_value(b.qs[j] & 15)) * d;
        y[j + 16] = float(mxfp4_value(b.qs[j] >> 4)) * d;
    }
}

namespace detail {
// The code whose value is nearest x; scanning upward, a tie keeps the lower code.
inline int mxfp4_best_code(float x, float d) {
    int best = 0;
    float best_err = std::fabs(float(mxfp4_value(0)) * d - x);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(float(mxfp4_value(i)) * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}
}  // namespace detail

// ggml's quantize_row_mxfp4_ref: e = floor(log2(amax)) - 2 + 127 (2 = E2M1's largest
// exponent), then each value to its nearest code. An amax below 2^-125 would give a
// negative exponent, which ggml leaves undefined; llmrt clamps it to e = 0. A ±Inf value would
// make e infinite and its conversion to uint8_t undefined, and a NaN one has no nearest code:
// both are an invalid_argument error naming the value (llmrt/quant/finite.hpp).
inline void quantize_row(const float* x, mxfp4* y, int64_t n) {
    check_whole_blocks(n, mxfp4::block_size, mxfp4::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
        check_finite_block(x, 32, ib, mxfp4::name);
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) {
            if (amax < std::fabs(x[i])) amax = std::fabs(x[i]);
        }
        float e = 0.0f;
        if (amax > 0.0f) {
            e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
            if (e < 0.0f) e = 0.0f;
        }
        y[ib].e = uint8_t(e);
        const float d = e8m0_to_fp32_half(y[ib].e);
        for (int j = 0; j < 16; ++j) {
            const int lo = detail::mxfp4_best_code(x[j], d);
            const int hi = detail::mxfp4_best_code(x[j + 16], d);
            y[ib].qs[j] = uint8_t(lo | (hi << 4));
        }
    }
}

// ggml's mxfp4 x q8_0 CPU dot: Σ_blocks (dy · 2^(e-128)) · Σ table[code] · qy.
inline float vec_dot(const mxfp4* x, const q8_0* y, int64_t n) {
    check_whole_blocks(n, mxfp4::block_size, mxfp4::name, "vec_dot");
    float sum = 0.0f;
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        const float d = fp16_to_fp32(y[ib].d) * e8m0_to_fp32_half(x[ib].e);
        int sumi_lo = 0, sumi_hi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi_lo += int(y[ib].qs[j]) * mxfp4_value(x[ib].qs[j] & 15);
            sumi_hi += int(y[ib].qs[j + 16]) * mxfp4_value(x[ib].qs[j] >> 4);
        }
        sum += d * float(sumi_lo + sumi_hi);
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
