// IQ4_XS: 256 weights in 8 sub-blocks of 32, IQ4_NL's table codes with a 6-bit scale per
// sub-block under one fp16 scale (4.25 bits per weight).
//
// | offset | field          | meaning                                                       |
// |--------|----------------|---------------------------------------------------------------|
// | 0      | d (fp16)       | super-block scale                                             |
// | 2      | scales_h (u16) | bits 4–5 of sub-block s's scale code at bits 2s, 2s + 1       |
// | 4      | scales_l[4]    | bits 0–3 of sub-block s's scale code in the low (s even) or high (s odd) nibble of scales_l[s/2] |
// | 8      | qs[128]        | code of element 32s + e at qs[16s + e] low nibble (e < 16), qs[16s + e − 16] high nibble (e ≥ 16) |
//
// x[32s + e] = d * (ls[s] − 32) * iq4nl_value(code), ls in 0..63.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cmath>
#include <cstring>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/iq4_nl.hpp"
#include "llmrt/quant/kquant_search.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct iq4_xs {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[4];
    uint8_t qs[128];

    static constexpr qtype id = qtype::iq4_xs;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "iq4_xs";
    static constexpr double round_trip_rmse = 0.0766;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_K;
    static constexpr block_family family = block_family::nibble32;
};
static_assert(sizeof(iq4_xs) == 136, "iq4_xs must be 136 bytes, as ggml's block_iq4_xs");

// GPU codecs: the nibble32 family (llmrt/quant/layout.hpp).
template <>
struct block_layout<iq4_xs> {
    static constexpr nibble32_layout value = {
        .bytes = int(sizeof(iq4_xs)),
        .slices_per_block = 8,
        .d = int(offsetof(iq4_xs, d)),
        .qs = int(offsetof(iq4_xs, qs)),
        .scales_h = int(offsetof(iq4_xs, scales_h)),
        .scales_l = int(offsetof(iq4_xs, scales_l)),
        .iq4nl_table = true,
    };
};

// The 6-bit scale code (0..63) of sub-block s (0..7); the sub-block's scale is d·(code − 32).
LLMRT_HOST_DEVICE int iq4_xs_scale_code(const iq4_xs& b, int s) {
    return ((b.scales_l[s / 2] >> (4 * (s % 2))) & 15) | (((b.scales_h >> (2 * s)) & 3) << 4);
}

LLMRT_HOST_DEVICE void dequantize_block(const iq4_xs& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int s = 0; s < 8; ++s) {
        const float dl = d * float(iq4_xs_scale_code(b, s) - 32);
        const uint8_t* qs = b.qs + 16 * s;
        for (int j = 0; j < 16; ++j) {
            y[32 * s + j] = dl * float(iq4nl_value(qs[j] & 15));
            y[32 * s + j + 16] = dl * float(iq4nl_value(qs[j] >> 4));
        }
    }
}

// ggml's quantize_iq4_xs with no importance matrix (the path of ggml_quantize_chunk, and what
// quantize_row_iq4_xs_ref calls):
//  1. each sub-block's scale from detail::iq4_fit_block (0 for a sub-block whose largest |x| is
//     below 1e-15);
//  2. the scale of largest magnitude (the first on a tie) sets d = −scale/32, stored as fp16;
//  3. each sub-block's code l = clamp(nearest_int(scale_s·(1/d)), −32, 31), stored as l + 32, and
//     its values recoded against the unrounded dl = d·l: code = nearest(x·(1/dl)), or the code of
//     0 when dl is 0.
// No step converts a float to an integer in a way that can be undefined (nearest_int reads bits),
// so every finite row gets ggml's bytes; values above about 1.8e19 do so through ggml's Inf and
// NaN arithmetic (see detail::iq4_fit_block). A NaN or ±Inf value is an invalid_argument error
// naming it (llmrt/quant/finite.hpp).
inline void quantize_row(const float* x, iq4_xs* y, int64_t n) {
    check_superblock_row(n, iq4_xs::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 256; ++ib, x += 256) {
        check_finite_block(x, 256, ib, iq4_xs::name);
        iq4_xs& b = y[ib];
        uint8_t codes[256];
        float scales[8];
        float max_scale = 0.0f, amax_scale = 0.0f;
        for (int s = 0; s < 8; ++s) {
            scales[s] = detail::iq4_fit_block(x + 32 * s, codes + 32 * s);
            if (std::fabs(scales[s]) > amax_scale) {
                amax_scale = std::fabs(scales[s]);
                max_scale = scales[s];
            }
        }
        const float d = -max_scale / 32.0f;
        b.d = fp32_to_fp16(d);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b.scales_h = 0;
        std::memset(b.scales_l, 0, sizeof b.scales_l);
        for (int s = 0; s < 8; ++s) {
            int l = nearest_int(id * scales[s]);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            const float dl = d * float(l);
            const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
            for (int j = 0; j < 32; ++j) codes[32 * s + j] = uint8_t(detail::iq4nl_nearest_code(idl * x[32 * s + j]));
            const int code = l + 32;
            b.scales_l[s / 2] = uint8_t(b.scales_l[s / 2] | ((code & 15) << (4 * (s % 2))));
            b.scales_h = uint16_t(b.scales_h | ((code >> 4) << (2 * s)));
        }
        for (int s = 0; s < 8; ++s) detail::pack_nibble32_levels(codes + 32 * s, b.qs + 16 * s);
    }
}

// ggml's iq4_xs x q8_K CPU dot (ggml_vec_dot_iq4_xs_q8_K_generic): per sub-block
// sum += (dx·d8·(ls − 32))·Σ value·q8, sub-blocks in order.
inline float vec_dot(const iq4_xs* x, const q8_K* y, int64_t n) {
    check_superblock_row(n, iq4_xs::name, "vec_dot");
    float sum = 0.0f;
    for (int64_t ib = 0; ib < n / 256; ++ib) {
        const float d = fp16_to_fp32(x[ib].d) * y[ib].d;
        for (int s = 0; s < 8; ++s) {
            const float dl = d * float(iq4_xs_scale_code(x[ib], s) - 32);
            const uint8_t* qs = x[ib].qs + 16 * s;
            const int8_t* q8 = y[ib].qs + 32 * s;
            int sumi = 0;
            for (int j = 0; j < 16; ++j) {
                sumi += int(q8[j]) * iq4nl_value(qs[j] & 15);
                sumi += int(q8[j + 16]) * iq4nl_value(qs[j] >> 4);
            }
            sum += dl * float(sumi);
        }
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
