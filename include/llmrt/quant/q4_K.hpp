// Q4_K: 256 weights in 8 sub-blocks of 32, x = d·sc·q − dmin·m (4.5 bits per weight).
//
// | offset | field        | meaning                                                       |
// |--------|--------------|---------------------------------------------------------------|
// | 0      | d (fp16)     | super-block scale                                             |
// | 2      | dmin (fp16)  | super-block min scale                                         |
// | 4      | scales[12]   | 8 six-bit scales and 8 six-bit mins (k4_scale_min)            |
// | 16     | qs[128]      | 4-bit q of element e at qs[32(e/64) + e%32], high nibble if (e/32) odd |
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

struct q4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[128];

    static constexpr qtype id = qtype::q4_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q4_K";
    static constexpr double round_trip_rmse = 0.0711;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q4_K) == 144, "q4_K must be 144 bytes, as ggml's block_q4_K");

// The fields, for the GLSL offsets generated from them (llmrt/quant/layout.hpp).
template <>
struct block_fields<q4_K> {
    static constexpr block_field value[] = {LLMRT_BLOCK_FIELD(q4_K, d), LLMRT_BLOCK_FIELD(q4_K, dmin), LLMRT_BLOCK_FIELD(q4_K, scales), LLMRT_BLOCK_FIELD(q4_K, qs)};
};

// Six-bit scale and min of sub-block j (0..7) from the 12 packed bytes shared by Q4_K and Q5_K:
// bytes 0–3 hold sc0..3 (bits 0–5) and the high bits of sc4..7 (bits 6–7), bytes 4–7 the same
// for the mins, bytes 8–11 the low nibbles of sc4..7 (low) and m4..7 (high).
struct k4_scale_min {
    int scale;
    int min;
};
LLMRT_HOST_DEVICE k4_scale_min unpack_k4_scale_min(const uint8_t* scales, int j) {
    if (j < 4) return {scales[j] & 63, scales[j + 4] & 63};
    return {(scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4), (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4)};
}

LLMRT_HOST_DEVICE void dequantize_block(const q4_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int j = 0; j < 8; ++j) {
        const k4_scale_min sm = unpack_k4_scale_min(b.scales, j);
        const float dl = d * float(sm.scale), ml = dmin * float(sm.min);
        const uint8_t* q = b.qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < 32; ++l) y[32 * j + l] = mul_sub(dl, float((q[l] >> shift) & 15), ml);
    }
}

// The levels of one Q4_K/Q5_K super-block (ggml's quantize_row_q4_K_ref / q5_K_ref up to the
// packing of the levels): per sub-block of 32 a (scale, min) search with weights
// sqrt(mean x²) + |x|; scales and mins coded in 6 bits against their maxima (d = max_scale/63,
// dmin = max_min/63, stored fp16) and packed as unpack_k4_scale_min reads them; then the levels
// recomputed against the stored values, L = clamp(nearest_int((x + dmin·m)/(d·sc)), 0, nmax),
// except in sub-blocks whose d·sc is 0, which keep the search's levels.
inline void quantize_k4_superblock(const float* x, const qkx2_search& search, uint16_t& d_out, uint16_t& dmin_out,
                                   uint8_t* packed_scales, uint8_t* L) {
    float weights[32], scales[8], mins[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
        const qkx2_fit fit = make_qkx2_quants<32>(xs, weights, L + 32 * j, search);
        scales[j] = fit.scale;
        mins[j] = fit.min;
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; ++j) {
        // The code passes through uint8_t before the clamp to 63, as in ggml.
        uint8_t ls = uint8_t(nearest_int(inv_scale * scales[j]));
        uint8_t lm = uint8_t(nearest_int(inv_min * mins[j]));
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        if (j < 4) {
            packed_scales[j] = ls;
            packed_scales[j + 4] = lm;
        } else {
            packed_scales[j + 4] = uint8_t((ls & 15) | ((lm & 15) << 4));
            packed_scales[j - 4] |= uint8_t((ls >> 4) << 6);
            packed_scales[j] |= uint8_t((lm >> 4) << 6);
        }
    }
    d_out = fp32_to_fp16(max_scale / 63.0f);
    dmin_out = fp32_to_fp16(max_min / 63.0f);
    const float d = fp16_to_fp32(d_out), dmin = fp16_to_fp32(dmin_out);
    for (int j = 0; j < 8; ++j) {
        const k4_scale_min sm = unpack_k4_scale_min(packed_scales, j);
        const float dd = d * float(sm.scale);
        if (dd == 0) continue;
        const float dm = dmin * float(sm.min);
        for (int l = 0; l < 32; ++l)
            L[32 * j + l] = uint8_t(detail::clamp_level(nearest_int((x[32 * j + l] + dm) / dd), search.nmax));
    }
}

// ggml's quantize_row_q4_K_ref: levels 0..15 searched on the grid (15 − 1.0 + 0.1·is), is = 0..20.
inline void quantize_row(const float* x, q4_K* y, int64_t n) {
    check_superblock_row(n, q4_K::name, "quantize_row");
    constexpr qkx2_search search{15, -1.0f, 0.1f, 20, false};
    for (int64_t ib = 0; ib < n / 256; ++ib, x += 256) {
        // NaN and ±Inf would go through nearest_int as garbage codes: refused, see finite.hpp.
        check_finite_block(x, 256, ib, q4_K::name);
        q4_K& b = y[ib];
        uint8_t L[256];
        quantize_k4_superblock(x, search, b.d, b.dmin, b.scales, L);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) b.qs[32 * c + l] = uint8_t(L[64 * c + l] | (L[64 * c + l + 32] << 4));
    }
}

// The float tail shared by ggml's Q4_K and Q5_K generic dots: eight lane accumulators
// sums[l] += (d·d8)·Σ_j sc_j·Σ_{g<4} q[32j+8g+l]·q8[32j+8g+l] across blocks, the mins subtracted
// from a separate running sum, and the eight lanes added to it at the end. `levels` holds a
// block's 256 integer levels; keeping this order makes the result bit-identical to ggml's.
struct k4_dot_accumulator {
    float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float sum = 0;

    void add_block(const uint8_t* packed_scales, uint16_t d, uint16_t dmin, const int8_t* levels, const q8_K& a) {
        int lane_sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int sum_mins = 0;
        for (int j = 0; j < 16; ++j) sum_mins += a.bsums[j] * unpack_k4_scale_min(packed_scales, j / 2).min;
        for (int j = 0; j < 8; ++j) {
            const int sc = unpack_k4_scale_min(packed_scales, j).scale;
            for (int g = 0; g < 4; ++g)
                for (int l = 0; l < 8; ++l) {
                    const int e = 32 * j + 8 * g + l;
                    lane_sums[l] += sc * (a.qs[e] * levels[e]);
                }
        }
        const float dd = fp16_to_fp32(d) * a.d;
        for (int l = 0; l < 8; ++l) lanes[l] += dd * float(lane_sums[l]);
        const float dm = fp16_to_fp32(dmin) * a.d;
        sum -= dm * float(sum_mins);
    }

    float result() const {
        float total = sum;
        for (int l = 0; l < 8; ++l) total += lanes[l];
        return total;
    }
};

// ggml's ggml_vec_dot_q4_K_q8_K_generic: Σ d·d8·Σ sc·(q·q8) − dmin·d8·Σ m·bsums.
inline float vec_dot(const q4_K* x, const q8_K* y, int64_t n) {
    check_superblock_row(n, q4_K::name, "vec_dot");
    k4_dot_accumulator acc;
    int8_t levels[256];
    for (int64_t ib = 0; ib < n / 256; ++ib) {
        const q4_K& b = x[ib];
        for (int e = 0; e < 256; ++e) levels[e] = int8_t((b.qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 15);
        acc.add_block(b.scales, b.d, b.dmin, levels, y[ib]);
    }
    return acc.result();
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
