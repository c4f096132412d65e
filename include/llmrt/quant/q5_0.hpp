// Q5_0: 32 weights, 5-bit levels around 16, one fp16 scale (5.5 bits per weight).
//
// | offset | field     | meaning                                                        |
// |--------|-----------|----------------------------------------------------------------|
// | 0      | d  (fp16) | scale; its sign is opposite to the block's largest-|x| value   |
// | 2      | qh[4]     | bit 4 of element e's level at bit e % 8 of qh[e / 8] (a little-endian u32) |
// | 6      | qs[16]    | bits 0–3 of the level of element e < 16 in the low nibble of qs[e], of e + 16 in the high one |
//
// x[e] = d * (q[e] - 16), q in 0..31.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/q4_0.hpp"
#include "llmrt/quant/q8_0.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];

    static constexpr qtype id = qtype::q5_0;
    static constexpr int64_t block_size = 32;
    static constexpr const char* name = "q5_0";
    static constexpr double round_trip_rmse = 0.0427;  // see llmrt/quant/traits.hpp
    using vec_dot_type = q8_0;
    static constexpr block_family family = block_family::nibble32;
};
static_assert(sizeof(q5_0) == 22, "q5_0 must be 22 bytes, as ggml's block_q5_0");

// GPU codecs: the nibble32 family (llmrt/quant/layout.hpp).
template <>
struct block_layout<q5_0> {
    static constexpr nibble32_layout value = {
        .bytes = int(sizeof(q5_0)),
        .d = int(offsetof(q5_0, d)),
        .qs = int(offsetof(q5_0, qs)),
        .qh = int(offsetof(q5_0, qh)),
        .code_offset = 16,
    };
};

// The 5-bit level of element e (0..31) of a Q5_0 or Q5_1 block: low nibble from qs, bit 4 from qh.
LLMRT_HOST_DEVICE int q5_level(const uint8_t* qs, const uint8_t* qh, int e) {
    const int low = e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
    return low | (((qh[e / 8] >> (e % 8)) & 1) << 4);
}

LLMRT_HOST_DEVICE void dequantize_block(const q5_0& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int e = 0; e < 32; ++e) y[e] = float(q5_level(b.qs, b.qh, e) - 16) * d;
}

namespace detail {
// Packs 32 five-bit levels as Q5_0 and Q5_1 store them.
inline void pack_q5_levels(const uint8_t* L, uint8_t* qs, uint8_t* qh) {
    pack_nibble32_levels(L, qs);
    for (int byte = 0; byte < 4; ++byte) {
        uint8_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = uint8_t(bits | (((L[8 * byte + k] >> 4) & 1) << k));
        qh[byte] = bits;
    }
}
}  // namespace detail

// ggml's quantize_row_q5_0_ref: Q4_0's rounding with 32 levels, d = max / −16 (see
// detail::quantize_offset_block in q4_0.hpp, also for the inputs llmrt defines itself).
inline void quantize_row(const float* x, q5_0* y, int64_t n) {
    check_whole_blocks(n, q5_0::block_size, q5_0::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
        uint8_t L[32];
        y[ib].d = fp32_to_fp16(detail::quantize_offset_block<16>(x, L, ib, q5_0::name));
        detail::pack_q5_levels(L, y[ib].qs, y[ib].qh);
    }
}

// ggml's q5_0 x q8_0 CPU dot (ggml_vec_dot_q5_0_q8_0_generic): per block the integer sum
// Σ (q − 16)·qy, then sum += (dx · dy) · Σ.
inline float vec_dot(const q5_0* x, const q8_0* y, int64_t n) {
    check_whole_blocks(n, q5_0::block_size, q5_0::name, "vec_dot");
    float sum = 0.0f;
    for (int64_t ib = 0; ib < n / 32; ++ib) {
        int sumi = 0;
        for (int e = 0; e < 32; ++e) sumi += (q5_level(x[ib].qs, x[ib].qh, e) - 16) * int(y[ib].qs[e]);
        sum += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * float(sumi);
    }
    return sum;
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
