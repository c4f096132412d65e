// Q5_1: 32 weights, 5-bit levels above a minimum, fp16 scale and minimum (6 bits per weight).
//
// | offset | field     | meaning                                                        |
// |--------|-----------|----------------------------------------------------------------|
// | 0      | d  (fp16) | scale, (max − min) / 31                                        |
// | 2      | m  (fp16) | the block's minimum                                            |
// | 4      | qh[4]     | bit 4 of element e's level at bit e % 8 of qh[e / 8] (a little-endian u32) |
// | 8      | qs[16]    | bits 0–3 of the level of element e < 16 in the low nibble of qs[e], of e + 16 in the high one |
//
// x[e] = d * q[e] + m, q in 0..31.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/q4_1.hpp"
#include "llmrt/quant/q5_0.hpp"
#include "llmrt/quant/q8_1.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[16];

    static constexpr qtype id = qtype::q5_1;
    static constexpr int64_t block_size = 32;
    static constexpr const char* name = "q5_1";
    static constexpr double round_trip_rmse = 0.0375;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_1;
    static constexpr block_family family = block_family::nibble32;
};
static_assert(sizeof(q5_1) == 24, "q5_1 must be 24 bytes, as ggml's block_q5_1");

// GPU codecs: the nibble32 family (llmrt/quant/layout.hpp).
template <>
struct block_layout<q5_1> {
    static constexpr nibble32_layout value = {
        .bytes = int(sizeof(q5_1)),
        .d = int(offsetof(q5_1, d)),
        .m = int(offsetof(q5_1, m)),
        .qs = int(offsetof(q5_1, qs)),
        .qh = int(offsetof(q5_1, qh)),
    };
};

LLMRT_HOST_DEVICE void dequantize_block(const q5_1& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    for (int e = 0; e < 32; ++e) y[e] = mul_add(float(q5_level(b.qs, b.qh, e)), d, m);
}

// ggml's quantize_row_q5_1_ref: Q4_1's rounding with 32 levels, d = (max − min) / 31 (see
// detail::quantize_affine_block in q4_1.hpp, also for the inputs llmrt defines itself).
inline void quantize_row(const float* x, q5_1* y, int64_t n) {
    check_whole_blocks(n, q5_1::block_size, q5_1::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
        uint8_t L[32];
        const detail::affine_block fit = detail::quantize_affine_block<31>(x, L, ib, q5_1::name);
        y[ib].d = fp32_to_fp16(fit.d);
        y[ib].m = fp32_to_fp16(fit.min);
        detail::pack_q5_levels(L, y[ib].qs, y[ib].qh);
    }
}

// ggml's q5_1 x q8_1 CPU dot (ggml_vec_dot_q5_1_q8_1_generic): (dx·dy)·Σ q·qy + m·s per block.
inline float vec_dot(const q5_1* x, const q8_1* y, int64_t n) {
    check_whole_blocks(n, q5_1::block_size, q5_1::name, "vec_dot");
    float sum = 0.0f;
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        int sumi = 0;
        for (int e = 0; e < 32; ++e) sumi += q5_level(x[ib].qs, x[ib].qh, e) * int(y[ib].qs[e]);
        sum += detail::affine_dot_term(x[ib].d, x[ib].m, y[ib], sumi);
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
