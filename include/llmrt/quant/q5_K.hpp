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

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/q4_K.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/traits.hpp"

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
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q5_K) == 176, "q5_K must be 176 bytes, as ggml's block_q5_K");

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

// PLACEHOLDER: reference quantizer and ggml-paired CPU dot, being written.
inline void quantize_row(const float*, q5_K*, int64_t) { throw error(errc::unsupported_type, "q5_K quantize_row not written yet"); }
inline float vec_dot(const q5_K*, const q8_K*, int64_t) { throw error(errc::unsupported_type, "q5_K vec_dot not written yet"); }

}  // namespace llmrt
