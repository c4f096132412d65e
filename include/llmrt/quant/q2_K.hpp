// Q2_K: 256 weights in 16 sub-blocks of 16, x = d·sc·q − dmin·m (2.625 bits per weight).
//
// | offset | field        | meaning                                                        |
// |--------|--------------|----------------------------------------------------------------|
// | 0      | scales[16]   | sub-block j: low nibble 4-bit scale sc, high nibble 4-bit min m |
// | 16     | qs[64]       | 2-bit q of element e at qs[32(e/128) + e%32] >> 2((e%128)/32)   |
// | 80     | d (fp16)     | super-block scale                                              |
// | 82     | dmin (fp16)  | super-block min scale                                          |
#pragma once

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/traits.hpp"

namespace llmrt {

struct q2_K {
    uint8_t scales[16];
    uint8_t qs[64];
    uint16_t d;
    uint16_t dmin;

    static constexpr qtype id = qtype::q2_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q2_K";
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q2_K) == 84, "q2_K must be 84 bytes, as ggml's block_q2_K");

LLMRT_HOST_DEVICE void dequantize_block(const q2_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int e = 0; e < 256; ++e) {
        const int sc = b.scales[e / 16];
        const int q = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        y[e] = mul_sub(d * float(sc & 15), float(q), dmin * float(sc >> 4));
    }
}

// PLACEHOLDER: reference quantizer and ggml-paired CPU dot, being written.
inline void quantize_row(const float*, q2_K*, int64_t) { throw error(errc::unsupported_type, "q2_K quantize_row not written yet"); }
inline float vec_dot(const q2_K*, const q8_K*, int64_t) { throw error(errc::unsupported_type, "q2_K vec_dot not written yet"); }

}  // namespace llmrt
