// Q8_1: the activation format of the GPU mat-vec kernels (9 bits per value).
//
// | offset | field     | meaning                                    |
// |--------|-----------|--------------------------------------------|
// | 0      | d  (fp16) | scale, x[e] = d * qs[e]                    |
// | 2      | s  (fp16) | d * Σ qs (lets kernels fold in the minimum) |
// | 4      | qs[32] i8 | quants                                     |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/q8_0.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/traits.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct q8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[32];

    static constexpr qtype id = qtype::q8_1;
    static constexpr int64_t block_size = 32;
    static constexpr const char* name = "q8_1";
    static constexpr double round_trip_rmse = 5.35e-3;  // see llmrt/quant/traits.hpp
};
static_assert(sizeof(q8_1) == 36, "q8_1 must be 36 bytes, as ggml's block_q8_1");

LLMRT_HOST_DEVICE void dequantize_block(const q8_1& b, float* y) {
    const float d = fp16_to_fp32(b.d);
    for (int i = 0; i < 32; ++i) y[i] = d * float(b.qs[i]);
}

// ggml's quantize_row_q8_1_ref: as q8_0, plus s = fp16(Σq · d) with the unrounded d.
// llmrt's CUDA and Vulkan activation quantizers produce these same bytes. A NaN or ±Inf value is
// an invalid_argument error, and a block whose 1/d overflows gets zero quants (see
// detail::quantize_q8_block).
inline void quantize_row(const float* x, q8_1* y, int64_t n) {
    check_whole_blocks(n, q8_1::block_size, q8_1::name, "quantize_row");
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
        const float d = detail::quantize_q8_block(x, y[ib].qs, ib, q8_1::name);
        int sum = 0;
        for (int i = 0; i < 32; ++i) sum += y[ib].qs[i];
        y[ib].d = fp32_to_fp16(d);
        y[ib].s = fp32_to_fp16(float(sum) * d);
    }
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
