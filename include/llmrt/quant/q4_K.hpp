// Q4_K: 256 weights in 8 sub-blocks of 32, x = d·sc·q − dmin·m (4.5 bits per weight).
//
// | offset | field        | meaning                                                       |
// |--------|--------------|---------------------------------------------------------------|
// | 0      | d (fp16)     | super-block scale                                             |
// | 2      | dmin (fp16)  | super-block min scale                                         |
// | 4      | scales[12]   | 8 six-bit scales and 8 six-bit mins (k4_scale_min)            |
// | 16     | qs[128]      | 4-bit q of element e at qs[32(e/64) + e%32], high nibble if (e/32) odd |
#pragma once

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/q8_K.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/traits.hpp"

namespace llmrt {

struct q4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[128];

    static constexpr qtype id = qtype::q4_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q4_K";
    using vec_dot_type = q8_K;
};
static_assert(sizeof(q4_K) == 144, "q4_K must be 144 bytes, as ggml's block_q4_K");

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

// PLACEHOLDER: reference quantizer and ggml-paired CPU dot, being written.
inline void quantize_row(const float*, q4_K*, int64_t) { throw error(errc::unsupported_type, "q4_K quantize_row not written yet"); }
inline float vec_dot(const q4_K*, const q8_K*, int64_t) { throw error(errc::unsupported_type, "q4_K vec_dot not written yet"); }

}  // namespace llmrt
