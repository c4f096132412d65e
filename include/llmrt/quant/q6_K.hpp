// Q6_K: 256 weights in 16 sub-blocks of 16, symmetric, x = d·sc·q (6.5625 bits per weight).
//
// | offset | field        | meaning                                                           |
// |--------|--------------|-------------------------------------------------------------------|
// | 0      | ql[128]      | low 4 bits: e = 128c + 32t + l at ql[64c + l + 32(t&1)], high nibble if t >= 2 |
// | 128    | qh[64]       | high 2 bits at (qh[32c + l] >> 2t) & 3                              |
// | 192    | scales[16]   | signed 8-bit sub-block scales                                      |
// | 208    | d (fp16)     | super-block scale; q = (low | high << 4) − 32 in [−32, 31]          |
#pragma once

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/traits.hpp"

namespace llmrt {

struct q6_K {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;

    static constexpr qtype id = qtype::q6_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q6_K";
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q6_K) == 210, "q6_K must be 210 bytes, as ggml's block_q6_K");

LLMRT_HOST_DEVICE void dequantize_block(const q6_K& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int e = 0; e < 256; ++e) {
        const int c = e / 128, t = (e % 128) / 32, l = e % 32;
        const int low = (b.ql[64 * c + l + 32 * (t & 1)] >> (4 * (t / 2))) & 15;
        const int high = (b.qh[32 * c + l] >> (2 * t)) & 3;
        y[e] = (d * float(b.scales[e / 16])) * float((low | (high << 4)) - 32);
    }
}

// PLACEHOLDER: reference quantizer and ggml-paired CPU dot, being written.
inline void quantize_row(const float*, q6_K*, int64_t) { throw error(errc::unsupported_type, "q6_K quantize_row not written yet"); }
inline float vec_dot(const q6_K*, const q8_K*, int64_t) { throw error(errc::unsupported_type, "q6_K vec_dot not written yet"); }

}  // namespace llmrt
