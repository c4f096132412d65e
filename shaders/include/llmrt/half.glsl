// fp32 -> fp16 bits with round-to-nearest-even, overflow to ±inf and NaN to 0x7e00 (sign kept):
// the IEEE conversion llmrt::fp32_to_fp16 and ggml perform. GLSL leaves the rounding of its own
// conversions (packHalf2x16, float16_t(x)) to the implementation, so bytes that must match the
// CPU are made here.
#ifndef LLMRT_HALF_GLSL
#define LLMRT_HALF_GLSL

uint llmrt_fp16_bits(float f) {
    const uint x = floatBitsToUint(f);
    const uint sign = (x >> 16u) & 0x8000u;
    const uint magnitude = x & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) return sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and above round to inf
    if (magnitude < 0x38800000u) {
        // Below 2^-14 the half is subnormal: its integer significand is |f|·2^24 rounded to even
        // (the scaling by a power of two is exact, roundEven is exact).
        return sign | uint(roundEven(uintBitsToFloat(magnitude) * 16777216.0));
    }
    // Rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits, ties to even;
    // a carry out of the mantissa correctly bumps the exponent.
    return sign | ((magnitude - 0x38000000u + 0x0fffu + ((magnitude >> 13u) & 1u)) >> 13u);
}

#endif
