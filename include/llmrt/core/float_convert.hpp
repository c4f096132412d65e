// fp16, bf16 and E8M0 conversions, bit-identical to ggml's on the host and in CUDA code.
//
// | format | bits            | to fp32                          | from fp32                      |
// |--------|-----------------|----------------------------------|--------------------------------|
// | fp16   | s1 e5 m10       | exact                            | round to nearest even, NaN -> quiet 0x7e00 with sign |
// | bf16   | s1 e8 m7        | exact (upper half of fp32)       | round to nearest even, NaN -> quiet (bit 6 set) |
// | E8M0   | e8 (2^(e-127))  | e = 0 -> 2^-127 (no subnormal 0) | not needed (quantizers pick e)  |
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/core/config.hpp"

namespace llmrt {

LLMRT_HOST_DEVICE float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {
        // Subnormal half: normalise the mantissa into an fp32 exponent.
        uint32_t e = 113;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
    }
    return bit_cast<float>(bits);
}

LLMRT_HOST_DEVICE uint16_t fp32_to_fp16(float f) {
    const uint32_t x = bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
    if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // at or past 65520: inf
    if (ax < 0x38800000u) {
        // Result is a half subnormal: round(|f| * 2^24) to nearest even; 2^-25 itself is a tie to 0.
        if (ax <= 0x33000000u) return uint16_t(sign);
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return uint16_t(sign | r);
    }
    // Normal: rebias the exponent (127 -> 15) and round off 13 mantissa bits, ties to even;
    // a carry out of the mantissa correctly bumps the exponent.
    uint32_t r = (ax - 0x38000000u) >> 13;
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return uint16_t(sign | r);
}

LLMRT_HOST_DEVICE float bf16_to_fp32(uint16_t h) { return bit_cast<float>(uint32_t(h) << 16); }

LLMRT_HOST_DEVICE uint16_t fp32_to_bf16(float f) {
    const uint32_t x = bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 64u);  // quiet the NaN
    return uint16_t((x + (0x7fffu + ((x >> 16) & 1u))) >> 16);
}

// Full E8M0 value 2^(e-127); e = 0 is 2^-127, which fp32 holds only as a subnormal.
LLMRT_HOST_DEVICE float e8m0_to_fp32(uint8_t e) {
    const uint32_t bits = e == 0 ? 0x00400000u : uint32_t(e) << 23;
    return bit_cast<float>(bits);
}

// Half of the E8M0 value, 2^(e-128): MXFP4's value table is stored doubled, so this is the
// scale that multiplies table entries.
LLMRT_HOST_DEVICE float e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : uint32_t(e - 1) << 23;
    return bit_cast<float>(bits);
}

}  // namespace llmrt
