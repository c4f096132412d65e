// Q2_K: 256 weights in 16 sub-blocks of 16, x = d·sc·q − dmin·m (2.625 bits per weight).
//
// | offset | field        | meaning                                                        |
// |--------|--------------|----------------------------------------------------------------|
// | 0      | scales[16]   | sub-block j: low nibble 4-bit scale sc, high nibble 4-bit min m |
// | 16     | qs[64]       | 2-bit q of element e at qs[32(e/128) + e%32] >> 2((e%128)/32)   |
// | 80     | d (fp16)     | super-block scale                                              |
// | 82     | dmin (fp16)  | super-block min scale                                          |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include <cmath>

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/kquant_search.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q2_K {
    uint8_t scales[16];
    uint8_t qs[64];
    uint16_t d;
    uint16_t dmin;

    static constexpr qtype id = qtype::q2_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q2_K";
    static constexpr double round_trip_rmse = 0.294;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q2_K) == 84, "q2_K must be 84 bytes, as ggml's block_q2_K");

// The fields, for the GLSL offsets generated from them (llmrt/quant/layout.hpp).
template <>
struct block_fields<q2_K> {
    static constexpr block_field value[] = {LLMRT_BLOCK_FIELD(q2_K, scales), LLMRT_BLOCK_FIELD(q2_K, qs), LLMRT_BLOCK_FIELD(q2_K, d), LLMRT_BLOCK_FIELD(q2_K, dmin)};
};

LLMRT_HOST_DEVICE void dequantize_block(const q2_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int e = 0; e < 256; ++e) {
        const int sc = b.scales[e / 16];
        const int q = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        y[e] = mul_sub(d * float(sc & 15), float(q), dmin * float(sc >> 4));
    }
}

// ggml's quantize_row_q2_K_ref. Per sub-block of 16 a (scale, min) search with weights |x|;
// the 16 scales and 16 mins are coded in 4 bits against their maxima (d = max_scale/15,
// dmin = max_min/15, both stored fp16); then the levels are recomputed against the stored
// values, L = clamp(nearest_int((x + dmin·m)/(d·sc)), 0, 3), except in sub-blocks whose d·sc
// is 0, which keep the search's levels.
inline void quantize_row(const float* x, q2_K* y, int64_t n) {
    check_superblock_row(n, q2_K::name, "quantize_row");
    constexpr qkx2_search search{3, -0.5f, 0.1f, 15, true};
    for (int64_t ib = 0; ib < n / 256; ++ib, x += 256) {
        // NaN and ±Inf would go through nearest_int as garbage codes: refused, see finite.hpp.
        check_finite_block(x, 256, ib, q2_K::name);
        q2_K& b = y[ib];
        uint8_t L[256];
        float weights[16], scales[16], mins[16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
            const qkx2_fit fit = make_qkx2_quants<16>(x + 16 * j, weights, L + 16 * j, search);
            scales[j] = fit.scale;
            mins[j] = fit.min;
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        // Codes go through uint8_t as ggml's byte stores do (a code cannot exceed 15 in practice).
        if (max_scale > 0) {
            const float iscale = 15.0f / max_scale;
            for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(nearest_int(iscale * scales[j]));
            b.d = fp32_to_fp16(max_scale / 15.0f);
        } else {
            for (int j = 0; j < 16; ++j) b.scales[j] = 0;
            b.d = fp32_to_fp16(0.0f);
        }
        if (max_min > 0) {
            const float iscale = 15.0f / max_min;
            for (int j = 0; j < 16; ++j) b.scales[j] |= uint8_t(unsigned(nearest_int(iscale * mins[j])) << 4);
            b.dmin = fp32_to_fp16(max_min / 15.0f);
        } else {
            b.dmin = fp32_to_fp16(0.0f);
        }
        const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
        for (int j = 0; j < 16; ++j) {
            const float dd = d * float(b.scales[j] & 15);
            if (dd == 0) continue;
            const float dm = dmin * float(b.scales[j] >> 4);
            for (int l = 0; l < 16; ++l)
                L[16 * j + l] = uint8_t(detail::clamp_level(nearest_int((x[16 * j + l] + dm) / dd), 3));
        }
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < 32; ++l) {
                const uint8_t* Lh = L + 128 * h + l;
                b.qs[32 * h + l] = uint8_t(Lh[0] | (Lh[32] << 2) | (Lh[64] << 4) | (Lh[96] << 6));
            }
    }
}

// ggml's ggml_vec_dot_q2_K_q8_K_generic: per super-block
//   d8·d·Σ_j sc_j·Σ_{16} q2·q8  −  d8·dmin·Σ_j m_j·bsums_j,
// the integer sums exact, the two float products formed per block and summed in block order.
inline float vec_dot(const q2_K* x, const q8_K* y, int64_t n) {
    check_superblock_row(n, q2_K::name, "vec_dot");
    float sum = 0;
    for (int64_t ib = 0; ib < n / 256; ++ib) {
        const q2_K& b = x[ib];
        const q8_K& a = y[ib];
        int sum_mins = 0;
        for (int j = 0; j < 16; ++j) sum_mins += a.bsums[j] * (b.scales[j] >> 4);
        int sum_q = 0;
        for (int j = 0; j < 16; ++j) {
            // Sub-block j covers elements 16j..16j+15: bits 2((16j%128)/32) of qs[32(j/8) + 16j%32 + l].
            const uint8_t* q2 = b.qs + 32 * (j / 8) + 16 * (j % 2);
            const int shift = 2 * ((j % 8) / 2);
            const int8_t* q8 = a.qs + 16 * j;
            int sub = 0;
            for (int l = 0; l < 16; ++l) sub += q8[l] * ((q2[l] >> shift) & 3);
            sum_q += (b.scales[j] & 15) * sub;
        }
        const float dall = a.d * fp16_to_fp32(b.d);
        const float dmin = a.d * fp16_to_fp32(b.dmin);
        sum += dall * float(sum_q) - dmin * float(sum_mins);
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
