// Rounding primitives whose exact behaviour decides byte equality with ggml.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>

#include "llmrt/core/config.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

// Round to nearest, ties to even, by adding 1.5 * 2^23 and reading the mantissa back
// (ggml's nearest_int; valid for |x| <= 4194303). All k-quant quantizers use it.
LLMRT_HOST_DEVICE int nearest_int(float x) {
    const float shifted = x + 12582912.0f;
    const int bits = bit_cast<int>(shifted);
    return (bits & 0x007fffff) - 0x00400000;
}

// The largest |x| of n values, ggml's MAX(amax, fabsf(x)) scan.
inline float max_abs(const float* x, int n) {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

// The signed value with the largest magnitude; the first one wins a tie (strict >).
inline float signed_max_abs(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        if (a > amax) {
            amax = a;
            max = x[i];
        }
    }
    return max;
}

}  // namespace llmrt

namespace llmrt {

// a*b - c with the product rounded before the subtraction, as ggml's dequantizers compute
// it; a fused multiply-add would change the last bit. (Host builds use -ffp-contract=off,
// which the llmrt::llmrt target adds; device code needs the explicit intrinsics.)
LLMRT_HOST_DEVICE float mul_sub(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(__fmul_rn(a, b), c);
#else
    return a * b - c;
#endif
}

// a*b + c, the product rounded before the addition (Q4_1 and Q5_1 dequantize x = q·d + m so).
LLMRT_HOST_DEVICE float mul_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(__fmul_rn(a, b), c);
#else
    return a * b + c;
#endif
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
