// Q3_K: 256 weights in 16 sub-blocks of 16, symmetric, x = d·(sc−32)·q (3.4375 bits per weight).
//
// | offset | field       | meaning                                                          |
// |--------|-------------|------------------------------------------------------------------|
// | 0      | hmask[32]   | bit e/32 of hmask[e%32] set: q = low2, clear: q = low2 − 4         |
// | 32     | qs[64]      | low 2 bits, packed as in Q2_K                                      |
// | 96     | scales[12]  | 16 six-bit scales: low nibbles in bytes 0–7, high 2 bits in 8–11   |
// | 108    | d (fp16)    | super-block scale                                                  |
#pragma once

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/traits.hpp"

namespace llmrt {

struct q3_K {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12];
    uint16_t d;

    static constexpr qtype id = qtype::q3_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q3_K";
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q3_K) == 110, "q3_K must be 110 bytes, as ggml's block_q3_K");

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

// PLACEHOLDER: reference quantizer and ggml-paired CPU dot, being written.
inline void quantize_row(const float*, q3_K*, int64_t) { throw error(errc::unsupported_type, "q3_K quantize_row not written yet"); }
inline float vec_dot(const q3_K*, const q8_K*, int64_t) { throw error(errc::unsupported_type, "q3_K vec_dot not written yet"); }

}  // namespace llmrt
