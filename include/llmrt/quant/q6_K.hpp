// Q6_K: 256 weights in 16 sub-blocks of 16, symmetric, x = d·sc·q (6.5625 bits per weight).
//
// | offset | field        | meaning                                                           |
// |--------|--------------|-------------------------------------------------------------------|
// | 0      | ql[128]      | low 4 bits: e = 128c + 32t + l at ql[64c + l + 32(t&1)], high nibble if t >= 2 |
// | 128    | qh[64]       | high 2 bits at (qh[32c + l] >> 2t) & 3                              |
// | 192    | scales[16]   | signed 8-bit sub-block scales                                      |
// | 208    | d (fp16)     | super-block scale; q = (low | high << 4) − 32 in [−32, 31]          |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q6_K {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;

    static constexpr qtype id = qtype::q6_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q6_K";
    static constexpr double round_trip_rmse = 0.0177;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q6_K) == 210, "q6_K must be 210 bytes, as ggml's block_q6_K");

// The fields, for the GLSL offsets generated from them (llmrt/quant/layout.hpp).
template <>
struct block_fields<q6_K> {
    static constexpr block_field value[] = {LLMRT_BLOCK_FIELD(q6_K, ql), LLMRT_BLOCK_FIELD(q6_K, qh), LLMRT_BLOCK_FIELD(q6_K, scales), LLMRT_BLOCK_FIELD(q6_K, d)};
};

LLMRT_HOST_DEVICE void dequantize_block(const q6_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int e = 0; e < 256; ++e) {
        const int c = e / 128, t = (e % 128) / 32, l = e % 32;
        const int low = (b.ql[64 * c + l + 32 * (t & 1)] >> (4 * (t / 2))) & 15;
        const int high = (b.qh[32 * c + l] >> (2 * t)) & 3;
        y[e] = (d * float(b.scales[e / 16])) * float((low | (high << 4)) - 32);
    }
}

namespace detail {

// ggml's make_qx_quants with rmse_type 1 and no importance weights: fit x ≈ a·l with
// l in [-nmax, nmax-1] under weights w = x². Try the inverse scales -(nmax + 0.1·is)/max
// for is = 0, ±1..±9 (is = 0 first, then -9..9 upward), keep the one whose projection
// (Σwxl)²/Σwl² is strictly largest, and return its least-squares scale a = Σwxl/Σwl².
// Writes L = l + nmax (0..2·nmax-1). Products are evaluated left to right as in ggml.
inline float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
    const float max = signed_max_abs(x, n);
    if (std::fabs(max) < 1e-15f) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    const auto clamped = [nmax](int l) { return l < -nmax ? -nmax : (l > nmax - 1 ? nmax - 1 : l); };
    float iscale = float(-nmax) / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = clamped(nearest_int(iscale * x[i]));
        L[i] = int8_t(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(is)) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = clamped(nearest_int(iscale * x[i]));
            const float w = x[i] * x[i];
            sumlx += w * x[i] * float(l);
            suml2 += w * float(l) * float(l);
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = int8_t(clamped(nearest_int(iscale * x[i])) + nmax);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

}  // namespace detail

// ggml's quantize_row_q6_K_ref: per sub-block of 16 a make_qx_quants scale; the signed
// largest maps to -128 (iscale = -128/max_scale, d = 1/iscale), each sub-scale to
// min(127, nearest_int(iscale·scale)); then every weight is requantized against the stored
// fp16 d times its int8 sub-scale (a sub-block whose product is 0 keeps its first codes).
// A block whose sub-scales are all below 1e-15 in magnitude is all zero bytes.
inline void quantize_row(const float* x, q6_K* y, int64_t n) {
    check_whole_blocks(n, q6_K::block_size, q6_K::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 256; ++ib, x += 256) {
        // NaN and ±Inf would go through nearest_int as garbage codes: refused, see finite.hpp.
        check_finite_block(x, 256, ib, q6_K::name);
        q6_K& b = y[ib];
        int8_t L[256];
        float scales[16];
        for (int j = 0; j < 16; ++j) scales[j] = detail::make_qx_quants(16, 32, x + 16 * j, L + 16 * j);
        const float max_scale = signed_max_abs(scales, 16);
        if (std::fabs(max_scale) < 1e-15f) {
            std::memset(&b, 0, sizeof(b));
            continue;
        }

        const float iscale = -128.0f / max_scale;
        b.d = fp32_to_fp16(1.0f / iscale);
        for (int j = 0; j < 16; ++j) {
            const int l = nearest_int(iscale * scales[j]);
            b.scales[j] = int8_t(l < 127 ? l : 127);
        }

        const float d = fp16_to_fp32(b.d);
        for (int j = 0; j < 16; ++j) {
            const float dd = d * float(b.scales[j]);
            if (dd == 0.0f) continue;
            for (int i = 0; i < 16; ++i) {
                const int l = nearest_int(x[16 * j + i] / dd);
                L[16 * j + i] = int8_t((l < -32 ? -32 : (l > 31 ? 31 : l)) + 32);
            }
        }

        // Per 128-chunk c: element 128c + 32t + l has its low nibble in ql[64c + l + 32(t&1)]
        // (high half when t >= 2) and its top two bits at bits 2t of qh[32c + l].
        for (int c = 0; c < 2; ++c)
            for (int l = 0; l < 32; ++l) {
                const int8_t* q = L + 128 * c + l;
                b.ql[64 * c + l] = uint8_t((q[0] & 15) | ((q[64] & 15) << 4));
                b.ql[64 * c + l + 32] = uint8_t((q[32] & 15) | ((q[96] & 15) << 4));
                b.qh[32 * c + l] = uint8_t((q[0] >> 4) | ((q[32] >> 4) << 2) | ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6));
            }
    }
}

// ggml's q6_K x q8_K CPU dot (the generic one): per block, integer sums of sc·q·q8 in 8 lanes
// by element index mod 8, each lane then added to its own float accumulator as
// (fp32(d)·d8)·lane; the 8 float lanes are summed in order at the end, as ggml does, which
// makes the float result bit-identical to ggml's.
inline float vec_dot(const q6_K* x, const q8_K* y, int64_t n) {
    check_whole_blocks(n, q6_K::block_size, q6_K::name, "vec_dot");
    float sums[8] = {};
    for (int64_t ib = 0; ib < n / 256; ++ib) {
        const q6_K& b = x[ib];
        int32_t lanes[8] = {};
        for (int e = 0; e < 256; ++e) {
            const int c = e / 128, t = (e % 128) / 32, l = e % 32;
            const int low = (b.ql[64 * c + l + 32 * (t & 1)] >> (4 * (t / 2))) & 15;
            const int high = (b.qh[32 * c + l] >> (2 * t)) & 3;
            lanes[e % 8] += int(b.scales[e / 16]) * (((low | (high << 4)) - 32) * int(y[ib].qs[e]));
        }
        const float d = fp16_to_fp32(b.d) * y[ib].d;
        for (int l = 0; l < 8; ++l) sums[l] += d * float(lanes[l]);
    }
    float sum = 0.0f;
    for (float s : sums) sum += s;
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
