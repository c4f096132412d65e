// Q3_K: 256 weights in 16 sub-blocks of 16, symmetric, x = d·(sc−32)·q (3.4375 bits per weight).
//
// | offset | field       | meaning                                                          |
// |--------|-------------|------------------------------------------------------------------|
// | 0      | hmask[32]   | bit e/32 of hmask[e%32] set: q = low2, clear: q = low2 − 4         |
// | 32     | qs[64]      | low 2 bits, packed as in Q2_K                                      |
// | 96     | scales[12]  | 16 six-bit scales: low nibbles in bytes 0–7, high 2 bits in 8–11   |
// | 108    | d (fp16)    | super-block scale                                                  |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include <cmath>
#include <cstdint>

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

struct q3_K {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12];
    uint16_t d;

    static constexpr qtype id = qtype::q3_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q3_K";
    static constexpr double round_trip_rmse = 0.150;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q3_K) == 110, "q3_K must be 110 bytes, as ggml's block_q3_K");

// The fields, for the GLSL offsets generated from them (llmrt/quant/layout.hpp).
template <>
struct block_fields<q3_K> {
    static constexpr block_field value[] = {LLMRT_BLOCK_FIELD(q3_K, hmask), LLMRT_BLOCK_FIELD(q3_K, qs), LLMRT_BLOCK_FIELD(q3_K, scales), LLMRT_BLOCK_FIELD(q3_K, d)};
};

// Six-bit scale of sub-block j with its offset of 32 removed, in [-32, 31].
LLMRT_HOST_DEVICE int q3_K_scale(const uint8_t* scales, int j) {
    const int low = j < 8 ? (scales[j] & 15) : (scales[j - 8] >> 4);
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
}

LLMRT_HOST_DEVICE void dequantize_block(const q3_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int e = 0; e < 256; ++e) {
        const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        const int q = low - (((b.hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4);
        y[e] = (d * float(q3_K_scale(b.scales, e / 16))) * float(q);
    }
}

namespace detail {

// ggml's make_q3_quants with do_rmse: fit one scale a to n values so that x ≈ a·l with
// l in [-nmax, nmax-1], minimising Σ x²·(x − a·l)². Start from the signed extreme mapped to
// -nmax, then coordinate descent: move one l to nearest_int(x·Σwl²/Σwxl) (its own term
// removed from the sums), keep the move if the projection (Σwxl)²/Σwl² grows; at most 5
// passes. Writes L = l + nmax (0..2·nmax-1) and returns a = Σwxl/Σwl². Every product is
// evaluated left to right as ggml writes it ((w·x)·l, (w·l)·l), which byte equality needs.
inline float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
    const float max = signed_max_abs(x, n);
    if (std::fabs(max) < 1e-15f) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    const float iscale = float(-nmax) / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = l < -nmax ? -nmax : (l > nmax - 1 ? nmax - 1 : l);
        L[i] = int8_t(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * float(L[i]);
            if (!(slx > 0.0f)) continue;
            float sl2 = suml2 - w * float(L[i]) * float(L[i]);
            int new_l = nearest_int(x[i] * sl2 / slx);
            new_l = new_l < -nmax ? -nmax : (new_l > nmax - 1 ? nmax - 1 : new_l);
            if (new_l == L[i]) continue;
            // The test compares the sums WITH the new value against the current ones.
            slx += w * x[i] * float(new_l);
            sl2 += w * float(new_l) * float(new_l);
            if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = int8_t(new_l);
                sumlx = slx;
                suml2 = sl2;
                ++changed;
            }
        }
        if (changed == 0) break;
    }
    for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace detail

// ggml's quantize_row_q3_K_ref: per sub-block of 16 a make_q3_quants scale; the signed
// largest scale maps to -32 (iscale = -32/max_scale, d = 1/iscale), the others to 6-bit codes
// sc+32; then every weight is requantized against the stored fp16 d times its decoded
// sub-scale (a sub-block whose product is 0 keeps its make_q3_quants codes).
inline void quantize_row(const float* x, q3_K* y, int64_t n) {
    check_whole_blocks(n, q3_K::block_size, q3_K::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 256; ++ib, x += 256) {
        // NaN and ±Inf would go through nearest_int as garbage codes: refused, see finite.hpp.
        check_finite_block(x, 256, ib, q3_K::name);
        q3_K& b = y[ib];
        int8_t L[256];
        float scales[16];
        for (int j = 0; j < 16; ++j) scales[j] = detail::make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
        const float max_scale = signed_max_abs(scales, 16);

        for (uint8_t& s : b.scales) s = 0;
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            for (int j = 0; j < 16; ++j) {
                // ggml narrows through int8_t before clamping.
                int l = int8_t(nearest_int(iscale * scales[j]));
                l = (l < -32 ? -32 : (l > 31 ? 31 : l)) + 32;
                if (j < 8)
                    b.scales[j] = uint8_t(l & 15);
                else
                    b.scales[j - 8] = uint8_t(b.scales[j - 8] | ((l & 15) << 4));
                b.scales[8 + j % 4] = uint8_t(b.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
            }
            b.d = fp32_to_fp16(1.0f / iscale);
        } else {
            b.d = fp32_to_fp16(0.0f);
        }

        const float d = fp16_to_fp32(b.d);
        for (int j = 0; j < 16; ++j) {
            const float dd = d * float(q3_K_scale(b.scales, j));
            if (dd == 0.0f) continue;
            for (int i = 0; i < 16; ++i) {
                const int l = nearest_int(x[16 * j + i] / dd);
                L[16 * j + i] = int8_t((l < -4 ? -4 : (l > 3 ? 3 : l)) + 4);
            }
        }

        // Code 4..7 sets the element's hmask bit and keeps the low two bits.
        for (uint8_t& h : b.hmask) h = 0;
        for (int e = 0; e < 256; ++e) {
            if (L[e] > 3) {
                b.hmask[e % 32] = uint8_t(b.hmask[e % 32] | (1 << (e / 32)));
                L[e] = int8_t(L[e] - 4);
            }
        }
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < 32; ++l) {
                const int8_t* c = L + 128 * h + l;
                b.qs[32 * h + l] = uint8_t(c[0] | (c[32] << 2) | (c[64] << 4) | (c[96] << 6));
            }
    }
}

// ggml's q3_K x q8_K CPU dot (the generic one): per block, integer sums of
// (sc−32)·q·q8 in 8 lanes by element index mod 8, each lane then added to its own float
// accumulator as (fp32(d)·d8)·lane; the 8 float lanes are summed in order at the end.
// Keeping ggml's lane structure makes the float result bit-identical to ggml's.
inline float vec_dot(const q3_K* x, const q8_K* y, int64_t n) {
    check_whole_blocks(n, q3_K::block_size, q3_K::name, "vec_dot");
    float sums[8] = {};
    for (int64_t ib = 0; ib < n / 256; ++ib) {
        const q3_K& b = x[ib];
        int32_t lanes[8] = {};
        for (int e = 0; e < 256; ++e) {
            const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            const int q = low - (((b.hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4);
            lanes[e % 8] += q3_K_scale(b.scales, e / 16) * (q * int(y[ib].qs[e]));
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
