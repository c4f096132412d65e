// The quantizers on inputs that ggml's formulas leave undefined: NaN and ±Inf values, blocks so
// small that 1/d overflows, and the largest finite values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <llmrt/llmrt.hpp>
#include <llmrt/testing.hpp>

using namespace llmrt;

namespace {

// Every type whose quantizer rounds to integers (f32, f16 and bf16 store NaN and Inf as they are).
template <class F>
void for_each_integer_quantizer(F&& f) {
    all_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        if constexpr (B::block_size > 1) {
            SUBCASE(B::name) { f(tag); }
        }
    });
}

template <class B>
std::vector<float> two_blocks() {
    return testing::gaussian(2 * B::block_size, 7);
}

}  // namespace

TEST_CASE("quantizing a NaN or an infinity is an invalid_argument error naming the element, its block and the value") {
    for_each_integer_quantizer([](auto tag) {
        using B = typename decltype(tag)::type;
        const int64_t at = B::block_size + 5;  // element 5 of block 1
        for (const auto& [bad, shown] : {std::pair{std::numeric_limits<float>::quiet_NaN(), "nan"},
                                          std::pair{std::numeric_limits<float>::infinity(), "+inf"},
                                          std::pair{-std::numeric_limits<float>::infinity(), "-inf"}}) {
            auto x = two_blocks<B>();
            x[std::size_t(at)] = bad;
            std::vector<B> q(2);
            try {
                quantize(B::id, x.data(), q.data(), int64_t(x.size()));
                FAIL(B::name, " accepted ", shown);
            } catch (const error& e) {
                const std::string what = e.what();
                INFO(what);
                CHECK(e.code() == errc::invalid_argument);
                CHECK(what.find(B::name) != std::string::npos);
                CHECK(what.find("element " + std::to_string(at) + " (block 1, index 5") != std::string::npos);
                CHECK(what.find(std::string(" is ") + shown) != std::string::npos);
            }
        }
    });
}

TEST_CASE("a q8_0 or q8_1 block whose 1/d overflows quantizes to zero quants and a zero scale") {
    // amax / 127 below 1/FLT_MAX: subnormal values, and tiny normal ones with zeros among them.
    std::vector<float> x(64, 0.0f);
    for (int i = 0; i < 32; ++i) x[std::size_t(i)] = (i % 2 ? -1.0f : 1.0f) * 1e-40f * float(i + 1);
    for (int i = 32; i < 64; i += 3) x[std::size_t(i)] = -3.0e-37f;

    q8_0 a[2];
    q8_1 b[2];
    quantize(qtype::q8_0, x.data(), a, 64);
    quantize(qtype::q8_1, x.data(), b, 64);
    for (int ib = 0; ib < 2; ++ib) {
        CHECK(a[ib].d == 0);
        CHECK(b[ib].d == 0);
        CHECK(b[ib].s == 0);
        for (int i = 0; i < 32; ++i) {
            CHECK(a[ib].qs[i] == 0);
            CHECK(b[ib].qs[i] == 0);
        }
    }
}

TEST_CASE("a q8_0 block just above the overflow keeps ggml's formula q = roundf(x * (1/d))") {
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[std::size_t(i)] = 4.0e-37f * float(i - 15) / 16.0f;
    const float d = 4.0e-37f / 127.0f;
    const float id = 1.0f / d;
    REQUIRE(std::isfinite(id));
    q8_0 q;
    quantize(qtype::q8_0, x.data(), &q, 32);
    for (int i = 0; i < 32; ++i) CHECK(q.qs[i] == int8_t(std::roundf(x[std::size_t(i)] * id)));
    CHECK(q.qs[31] == 127);
}

TEST_CASE("subnormal and the largest finite inputs quantize without error in every type") {
    for_each_integer_quantizer([](auto tag) {
        using B = typename decltype(tag)::type;
        for (const float scale : {1e-45f, 1e-40f, 1e-38f, FLT_MAX}) {
            auto x = two_blocks<B>();
            for (auto& v : x) v = std::fabs(v) > 1.0f ? std::copysign(scale, v) : v * scale;
            std::vector<B> q(2);
            INFO(B::name, " at scale ", scale);
            CHECK_NOTHROW(quantize(B::id, x.data(), q.data(), int64_t(x.size())));
            if (scale < 1.0f) {
                // Values this small come back as zero or as tiny finite values, never as garbage.
                std::vector<float> back(x.size());
                dequantize(B::id, q.data(), back.data(), int64_t(back.size()));
                for (float v : back) CHECK(std::fabs(v) <= 1e-30f);
            }
        }
    });
}

namespace {
// Every level byte of a Q4_0/Q4_1/Q5_0/Q5_1 block (qs, and qh where the type has it) is zero.
template <class B>
bool all_levels_zero(const B& b) {
    for (uint8_t v : b.qs)
        if (v != 0) return false;
    if constexpr (requires { b.qh; }) {
        for (uint8_t v : b.qh)
            if (v != 0) return false;
    }
    return true;
}

template <class F>
void for_each_legacy_type(F&& f) {
    type_list<q4_0, q4_1, q5_0, q5_1>::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        SUBCASE(B::name) { f(tag); }
    });
}
}  // namespace

TEST_CASE("a q4_0, q4_1, q5_0 or q5_1 block whose 1/d overflows gets all levels 0 and dequantizes to zeros") {
    // Block 0: subnormal values; block 1: tiny normal ones (1.5e-38) among zeros. Both give a d
    // below 2^-128 in every one of the four types (the largest threshold, Q5_1's, is about 9e-38).
    std::vector<float> x(64, 0.0f);
    for (int i = 0; i < 32; ++i) x[std::size_t(i)] = (i % 2 ? -1.0f : 1.0f) * 1e-40f * float(i + 1);
    for (int i = 32; i < 64; i += 3) x[std::size_t(i)] = -1.5e-38f;
    for_each_legacy_type([&](auto tag) {
        using B = typename decltype(tag)::type;
        B q[2];
        quantize(B::id, x.data(), q, 64);
        std::vector<float> back(64, 1.0f);
        dequantize(B::id, q, back.data(), 64);
        for (int ib = 0; ib < 2; ++ib) {
            INFO(B::name, " block ", ib);
            CHECK(all_levels_zero(q[ib]));
            CHECK((q[ib].d & 0x7fff) == 0);
            if constexpr (requires { q[ib].m; }) CHECK((q[ib].m & 0x7fff) == 0);
        }
        for (float v : back) CHECK(v == 0.0f);
    });
}

TEST_CASE("a q4_0 block just above the overflow keeps ggml's formula q = min(15, trunc(x * (1/d) + 8.5))") {
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[std::size_t(i)] = 4.0e-38f * float(i - 15) / 16.0f;
    const float d = x[31] / -8.0f;
    const float id = 1.0f / d;
    REQUIRE(std::isfinite(id));
    q4_0 q;
    quantize(qtype::q4_0, x.data(), &q, 32);
    for (int i = 0; i < 32; ++i) {
        const int expected = std::min(15, int(x[std::size_t(i)] * id + 8.5f));
        const int level = i < 16 ? (q.qs[i] & 15) : (q.qs[i - 16] >> 4);
        CHECK(level == expected);
    }
    CHECK((q.qs[15] >> 4) == 0);  // the largest value lands on level 0
    CHECK((q.qs[0] & 15) == 15);  // the opposite extreme is clamped to 15
}

TEST_CASE("a q4_1 or q5_1 block whose range max - min overflows gets all levels 0 and an infinite scale") {
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[std::size_t(i)] = (i % 2 ? -3.0e38f : 3.0e38f) * (float(32 - i) / 32.0f);
    for_each_legacy_type([&](auto tag) {
        using B = typename decltype(tag)::type;
        if constexpr (requires(B b) { b.m; }) {
            B q;
            quantize(B::id, x.data(), &q, 32);
            CHECK(all_levels_zero(q));
            CHECK(q.d == 0x7c00);  // +Inf: ggml's d = (max - min) / levels, rounded to fp16
            CHECK(q.m == fp32_to_fp16(-3.0e38f * (31.0f / 32.0f)));
        }
    });
}
