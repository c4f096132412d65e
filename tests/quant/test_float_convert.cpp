// fp16, bf16 and E8M0 conversions round as ggml does.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <llmrt/core/float_convert.hpp>

using namespace llmrt;

namespace {
uint32_t bits_of(float f) { return llmrt::bit_cast<uint32_t>(f); }
float float_of(uint32_t u) { return llmrt::bit_cast<float>(u); }
uint16_t oracle_fp16(float f) {
#if defined(__FLT16_MAX__)
    // The compiler's _Float16 conversion is IEEE round-to-nearest-even, an independent oracle.
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
#else
    // Without _Float16 (clang 14 on x86): the same rounding spelled in double, nearbyint's
    // ties-to-even on the value scaled to units of the fp16 result's last place. Finite input.
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double a = std::fabs(double(f));
    if (a >= 65520.0) return uint16_t(sign | 0x7c00);  // half-way to 2^16 and beyond: infinity
    if (a < 0x1p-14) return uint16_t(sign | uint16_t(std::nearbyint(a * 0x1p24)));  // subnormal (or the least normal)
    int e = 0;
    std::frexp(a, &e);                                      // a = m·2^e, m in [0.5, 1)
    double q = std::nearbyint(std::ldexp(a, 11 - e));       // 11 significant bits: 1024 .. 2048
    int exponent = e - 1;
    if (q == 2048.0) q = 1024.0, ++exponent;
    if (exponent > 15) return uint16_t(sign | 0x7c00);
    return uint16_t(sign | ((exponent + 15) << 10) | (int(q) - 1024));
#endif
}
}  // namespace

TEST_CASE("every fp16 value converts to fp32 and back unchanged") {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = fp16_to_fp32(uint16_t(h));
        if (std::isnan(f)) continue;
        REQUIRE(fp32_to_fp16(f) == h);
        REQUIRE(oracle_fp16(f) == h);
    }
}

TEST_CASE("fp32 to fp16 rounds to nearest even like IEEE hardware, subnormals and overflow included") {
    std::mt19937 rng(1234);
    for (int i = 0; i < 2000000; ++i) {
        // Draw bit patterns across the whole fp16 range and around its edges.
        const uint32_t exp = 96 + rng() % 48;  // 2^-31 .. 2^16
        const float f = float_of(((rng() & 1u) << 31) | (exp << 23) | (rng() & 0x7fffffu));
        REQUIRE_MESSAGE(fp32_to_fp16(f) == oracle_fp16(f), "input bits " << bits_of(f));
    }
    // Exact ties: half-way between neighbours rounds to the even one.
    CHECK(fp32_to_fp16(float_of(0x3f801000u)) == 0x3c00);  // 1 + 2^-11: tie, down to 1.0
    CHECK(fp32_to_fp16(float_of(0x3f803000u)) == 0x3c02);  // 1 + 3·2^-11: tie, up to even
    CHECK(fp32_to_fp16(65519.0f) == 0x7bff);
    CHECK(fp32_to_fp16(65520.0f) == 0x7c00);
    CHECK(fp32_to_fp16(-1e9f) == 0xfc00);
    CHECK(fp32_to_fp16(float_of(0x33000000u)) == 0x0000);  // 2^-25: tie, down to 0
    CHECK(fp32_to_fp16(float_of(0x33000001u)) == 0x0001);
}

TEST_CASE("fp32 to fp16 turns NaN into a quiet NaN with its sign") {
    CHECK(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()) == 0x7e00);
    CHECK(fp32_to_fp16(float_of(0xff800001u)) == 0xfe00);
    CHECK(fp32_to_fp16(std::numeric_limits<float>::infinity()) == 0x7c00);
}

TEST_CASE("bf16 keeps the upper half of fp32, rounding to nearest even and quieting NaN") {
    CHECK(fp32_to_bf16(1.0f) == 0x3f80);
    CHECK(fp32_to_bf16(float_of(0x3f808000u)) == 0x3f80);  // tie, down to even
    CHECK(fp32_to_bf16(float_of(0x3f818000u)) == 0x3f82);  // tie, up to even
    CHECK(fp32_to_bf16(float_of(0x3f808001u)) == 0x3f81);
    CHECK(fp32_to_bf16(float_of(0x7f800001u)) == 0x7fc0);  // signalling NaN becomes quiet
    CHECK(fp32_to_bf16(float_of(0x7f7fffffu)) == 0x7f80);  // FLT_MAX rounds to inf
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = bf16_to_fp32(uint16_t(h));
        if (!std::isnan(f)) REQUIRE(fp32_to_bf16(f) == h);
    }
}

TEST_CASE("E8M0 decodes to 2^(e-127) and its half to 2^(e-128)") {
    CHECK(e8m0_to_fp32(127) == 1.0f);
    CHECK(e8m0_to_fp32(130) == 8.0f);
    CHECK(bits_of(e8m0_to_fp32(0)) == 0x00400000u);
    CHECK(e8m0_to_fp32(254) == std::ldexp(1.0f, 127));
    CHECK(e8m0_to_fp32_half(128) == 1.0f);
    CHECK(bits_of(e8m0_to_fp32_half(0)) == 0x00200000u);
    CHECK(bits_of(e8m0_to_fp32_half(1)) == 0x00400000u);
    for (int e = 2; e < 255; ++e) CHECK(e8m0_to_fp32_half(uint8_t(e)) * 2.0f == e8m0_to_fp32(uint8_t(e)));
}
