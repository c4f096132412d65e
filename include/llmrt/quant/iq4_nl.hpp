// IQ4_NL: 32 weights, 4-bit codes into a fixed non-linear table, one fp16 scale (4.5 bits per
// weight).
//
// | offset | field     | meaning                                                        |
// |--------|-----------|----------------------------------------------------------------|
// | 0      | d  (fp16) | scale                                                          |
// | 2      | qs[16]    | code of element e < 16 in the low nibble of qs[e], of e + 16 in the high one |
//
// x[e] = d * iq4nl_value(code[e]); the table's 16 values run from −127 to 113, denser near 0.
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

struct iq4_nl {
    uint16_t d;
    uint8_t qs[16];

    static constexpr qtype id = qtype::iq4_nl;
    static constexpr int64_t block_size = 32;
    static constexpr const char* name = "iq4_nl";
    static constexpr double round_trip_rmse = 0.0761;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_0;
    static constexpr block_family family = block_family::nibble32;
};
static_assert(sizeof(iq4_nl) == 18, "iq4_nl must be 18 bytes, as ggml's block_iq4_nl");

// GPU codecs: the nibble32 family (llmrt/quant/layout.hpp).
template <>
struct block_layout<iq4_nl> {
    static constexpr nibble32_layout value = {
        .bytes = int(sizeof(iq4_nl)),
        .d = int(offsetof(iq4_nl, d)),
        .qs = int(offsetof(iq4_nl, qs)),
        .iq4nl_table = true,
    };
};

// The value of a 4-bit IQ4_NL/IQ4_XS code (ggml's kvalues_iq4nl), ascending with the code.
LLMRT_HOST_DEVICE constexpr int8_t iq4nl_value(int code) {
    constexpr int8_t table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    return table[code & 15];
}

// Entries 4i .. 4i+3 of that table as one word of int8, entry 4i in the low byte: how the GPU
// codecs hold the table (byte permutes in CUDA, the generated NIBBLE32_TABLE_WORDS in GLSL).
LLMRT_HOST_DEVICE constexpr uint32_t iq4nl_table_word(int i) {
    uint32_t w = 0;
    for (int j = 0; j < 4; ++j) w |= uint32_t(uint8_t(iq4nl_value(4 * i + j))) << (8 * j);
    return w;
}

LLMRT_HOST_DEVICE void dequantize_block(const iq4_nl& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * float(iq4nl_value(b.qs[j] & 15));
        y[j + 16] = d * float(iq4nl_value(b.qs[j] >> 4));
    }
}

namespace detail {

// The code whose table value is nearest v, as ggml picks it (best_index_int8): values at or
// beyond the ends take the end codes; otherwise a bisection finds lo with value(lo) <= v <
// value(lo + 1), and the upper code wins unless v - value(lo) is strictly the smaller distance,
// so an exact tie goes up. A NaN v (possible only from ggml's arithmetic on values whose square
// overflows) fails every comparison and ends on code 15, as in ggml.
inline int iq4nl_nearest_code(float v) {
    if (v <= float(iq4nl_value(0))) return 0;
    if (v >= float(iq4nl_value(15))) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < float(iq4nl_value(mid)))
            hi = mid;
        else
            lo = mid;
    }
    return v - float(iq4nl_value(lo)) < float(iq4nl_value(hi)) - v ? lo : hi;
}

// A block of 32 values whose largest |x| is below this gets scale 0 (ggml's GROUP_MAX_EPS).
inline constexpr float iq4_group_max_eps = 1e-15f;

// The scale search of ggml's quantize_row_iq4_nl_impl for one block of 32 values, as
// quantize_iq4_nl and quantize_iq4_xs run it without an importance matrix (weights w = x²,
// ntry = 7). Start from d = max/127, where max is the signed value of largest magnitude (the
// first one on a tie), code every value against d and take the weighted least-squares scale
// Σwqx/Σwq² of those codes; then try the codes against 1/d = (t − 127)/max for t = −7..7 and keep
// a trial's least-squares scale when it explains more (Σwqx)²/Σwq², strictly. Writes the codes
// of the first coding to `codes` and returns the scale; a block whose largest |x| is below
// iq4_group_max_eps returns 0 and leaves `codes` alone (both callers recode every block).
//
// All of it is float comparisons and arithmetic, with no conversion to an integer that could
// be undefined. Values above about 1.8e19 make w = x² infinite and the sums Inf or NaN: llmrt
// keeps ggml's arithmetic there too, so such a block gets ggml's bytes (a NaN scale for IQ4_NL,
// an fp16 0x7e00 with the sign the hardware gives the NaN).
inline float iq4_fit_block(const float* x, uint8_t* codes) {
    constexpr int ntry = 7;
    float weight[32];
    for (int j = 0; j < 32; ++j) weight[j] = x[j] * x[j];
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float a = std::fabs(x[j]);
        if (a > amax) {
            amax = a;
            max = x[j];
        }
    }
    if (amax < iq4_group_max_eps) return 0.0f;

    // Σ w·q·x and Σ w·q² for the codes of x·id, each product rounded left to right as in ggml.
    struct sums {
        float qx = 0.0f, q2 = 0.0f;
    };
    auto accumulate = [&](float id, uint8_t* store) {
        sums s;
        for (int j = 0; j < 32; ++j) {
            const int code = iq4nl_nearest_code(id * x[j]);
            if (store) store[j] = uint8_t(code);
            const float q = float(iq4nl_value(code));
            s.qx += weight[j] * q * x[j];
            s.q2 += weight[j] * q * q;
        }
        return s;
    };

    float d = -max / float(iq4nl_value(0));
    const sums first = accumulate(1.0f / d, codes);
    d = first.q2 > 0.0f ? first.qx / first.q2 : 0.0f;
    float best = d * first.qx;
    for (int t = -ntry; t <= ntry; ++t) {
        const sums s = accumulate(float(t + iq4nl_value(0)) / max, nullptr);
        if (s.q2 > 0.0f && s.qx * s.qx > best * s.q2) {
            d = s.qx / s.q2;
            best = d * s.qx;
        }
    }
    return d;
}

}  // namespace detail

// ggml's quantize_iq4_nl with no importance matrix, the path ggml_quantize_chunk (and so
// llama-quantize) takes: per block the scale search of detail::iq4_fit_block, d stored as fp16,
// and every value recoded against the unrounded scale, code = nearest(x / scale) (or the code of
// 0 when the scale is 0). ggml's quantize_row_iq4_nl_ref runs the same routine with ntry = −1,
// which skips the search and the recoding, and gives other bytes; GGUF files hold these.
// A NaN or ±Inf value is an invalid_argument error naming it (llmrt/quant/finite.hpp).
inline void quantize_row(const float* x, iq4_nl* y, int64_t n) {
    check_whole_blocks(n, iq4_nl::block_size, iq4_nl::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
        check_finite_block(x, 32, ib, iq4_nl::name);
        uint8_t codes[32];
        const float scale = detail::iq4_fit_block(x, codes);
        y[ib].d = fp32_to_fp16(scale);
        const float id = scale != 0.0f ? 1.0f / scale : 0.0f;
        for (int j = 0; j < 32; ++j) codes[j] = uint8_t(detail::iq4nl_nearest_code(id * x[j]));
        detail::pack_nibble32_levels(codes, y[ib].qs);
    }
}

// ggml's iq4_nl x q8_0 CPU dot (ggml_vec_dot_iq4_nl_q8_0_generic): sum += (dy·dx)·Σ value·qy.
inline float vec_dot(const iq4_nl* x, const q8_0* y, int64_t n) {
    check_whole_blocks(n, iq4_nl::block_size, iq4_nl::name, "vec_dot");
    float sum = 0.0f;
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        const float d = fp16_to_fp32(y[ib].d) * fp16_to_fp32(x[ib].d);
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += int(y[ib].qs[j]) * iq4nl_value(x[ib].qs[j] & 15);
            sumi += int(y[ib].qs[j + 16]) * iq4nl_value(x[ib].qs[j] >> 4);
        }
        sum += d * float(sumi);
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
