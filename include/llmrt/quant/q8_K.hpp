// Q8_K: the CPU activation format paired with the k-quants (9.125 bits per value).
//
// | offset | field          | meaning                              |
// |--------|----------------|--------------------------------------|
// | 0      | d (fp32)       | scale, may be negative               |
// | 4      | qs[256] i8     | x[e] = d * qs[e]                     |
// | 260    | bsums[16] i16  | Σ qs over each group of 16           |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>
#include <cstring>

#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q8_K {
    float d;
    int8_t qs[256];
    int16_t bsums[16];

    static constexpr qtype id = qtype::q8_K;
    static constexpr int64_t block_size = 256;
    static constexpr const char* name = "q8_K";
    static constexpr double round_trip_rmse = 6.93e-3;  // see llmrt/quant/traits.hpp
};
static_assert(sizeof(q8_K) == 292, "q8_K must be 292 bytes, as ggml's block_q8_K");

LLMRT_HOST_DEVICE void dequantize_block(const q8_K& b, float* y) {
    for (int i = 0; i < 256; ++i) y[i] = b.d * float(b.qs[i]);
}

// ggml's quantize_row_q8_K_ref: the signed extreme maps to -127, q = min(127, nearest_int(x·iscale)).
// An all-zero block gets d = 0 and zero quants; ggml leaves its bsums unwritten, llmrt zeroes
// them so that the bytes are deterministic.
inline void quantize_row(const float* x, q8_K* y, int64_t n) {
    check_whole_blocks(n, q8_K::block_size, q8_K::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 256; ++ib, x += 256) {
        // NaN and ±Inf would go through nearest_int as garbage codes: refused, see finite.hpp.
        check_finite_block(x, 256, ib, q8_K::name);
        const float max = signed_max_abs(x, 256);
        if (max == 0.0f) {
            std::memset(&y[ib], 0, sizeof(q8_K));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int i = 0; i < 256; ++i) {
            const int v = nearest_int(iscale * x[i]);
            y[ib].qs[i] = int8_t(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += y[ib].qs[16 * g + i];
            y[ib].bsums[g] = int16_t(sum);
        }
        y[ib].d = 1.0f / iscale;
    }
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
