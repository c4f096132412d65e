// Q5_K: 256 weights in 8 sub-blocks of 32, x = d·sc·q − dmin·m with 5-bit q (5.5 bits per weight).
//
// | offset | field        | meaning                                               |
// |--------|--------------|-------------------------------------------------------|
// | 0      | d (fp16)     | super-block scale                                     |
// | 2      | dmin (fp16)  | super-block min scale                                 |
// | 4      | scales[12]   | scales and mins packed as in Q4_K                     |
// | 16     | qh[32]       | fifth bit of element e: bit e/32 of qh[e%32]          |
// | 48     | qs[128]      | low 4 bits, packed as in Q4_K                         |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/kquant_search.hpp"
#include "llmrt/quant/q4_K.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];

    static constexpr qtype id = qtype::q5_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q5_K";
    static constexpr double round_trip_rmse = 0.0359;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q5_K) == 176, "q5_K must be 176 bytes, as ggml's block_q5_K");

// The fields, for the GLSL offsets generated from them (llmrt/quant/layout.hpp).
template <>
struct block_fields<q5_K> {
    static constexpr block_field value[] = {LLMRT_BLOCK_FIELD(q5_K, d), LLMRT_BLOCK_FIELD(q5_K, dmin), LLMRT_BLOCK_FIELD(q5_K, scales), LLMRT_BLOCK_FIELD(q5_K, qh), LLMRT_BLOCK_FIELD(q5_K, qs)};
};

LLMRT_HOST_DEVICE void dequantize_block(const q5_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int j = 0; j < 8; ++j) {
        const k4_scale_min sm = unpack_k4_scale_min(b.scales, j);
        const float dl = d * float(sm.scale), ml = dmin * float(sm.min);
        const uint8_t* q = b.qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        for (int l = 0; l < 32; ++l) {
            const int v = ((q[l] >> shift) & 15) | (((b.qh[l] >> j) & 1) << 4);
            y[32 * j + l] = mul_sub(dl, float(v), ml);
        }
    }
}

// ggml's quantize_row_q5_K_ref: levels 0..31 searched on the grid (31 − 0.5 + 0.1·is),
// is = 0..15, then split into 4 low bits (qs, as Q4_K) and the fifth bit (qh).
inline void quantize_row(const float* x, q5_K* y, int64_t n) {
    check_superblock_row(n, q5_K::name, "quantize_row");
    constexpr qkx2_search search{31, -0.5f, 0.1f, 15, false};
    for (int64_t ib = 0; ib < n / 256; ++ib, x += 256) {
        // NaN and ±Inf would go through nearest_int as garbage codes: refused, see finite.hpp.
        check_finite_block(x, 256, ib, q5_K::name);
        q5_K& b = y[ib];
        uint8_t L[256];
        quantize_k4_superblock(x, search, b.d, b.dmin, b.scales, L);
        for (int l = 0; l < 32; ++l) b.qh[l] = 0;
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                int lo = L[64 * c + l], hi = L[64 * c + l + 32];
                if (lo > 15) {
                    lo -= 16;
                    b.qh[l] |= uint8_t(1u << (2 * c));
                }
                if (hi > 15) {
                    hi -= 16;
                    b.qh[l] |= uint8_t(2u << (2 * c));
                }
                b.qs[32 * c + l] = uint8_t(lo | (hi << 4));
            }
    }
}

// ggml's ggml_vec_dot_q5_K_q8_K_generic: as Q4_K with q = low4 + 16·bit.
inline float vec_dot(const q5_K* x, const q8_K* y, int64_t n) {
    check_superblock_row(n, q5_K::name, "vec_dot");
    k4_dot_accumulator acc;
    int8_t levels[256];
    for (int64_t ib = 0; ib < n / 256; ++ib) {
        const q5_K& b = x[ib];
        for (int e = 0; e < 256; ++e) {
            const int low = (b.qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 15;
            levels[e] = int8_t(low | (((b.qh[e % 32] >> (e / 32)) & 1) << 4));
        }
        acc.add_block(b.scales, b.d, b.dmin, levels, y[ib]);
    }
    return acc.result();
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
