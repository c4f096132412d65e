// The ggml-paired CPU dot products of Q2_K, Q4_K and Q5_K with Q8_K activations.
//
// vec_dot computes in float what the two dequantized rows give exactly: Σ dq(x)·dq(a), summed
// in double here. Its rounding error is bounded relative to Σ|dq(x)·dq(a)| (the sum's condition
// number times the float epsilon), so that is the scale the tolerance is relative to.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <llmrt/llmrt.hpp>
#include <llmrt/testing/generate.hpp>

using namespace llmrt;

namespace {

using dot_types = type_list<q2_K, q4_K, q5_K>;

// Row lengths: one super-block, two, an odd count, and a model-sized row.
constexpr int64_t lengths[] = {256, 512, 11 * 256, 4096};

// |vec_dot − exact| / Σ|x·a| measured at most 1.22e-7 (about two float epsilons) over 10000
// seeds of each length and type; 5e-7 leaves a 4× margin, while changing a single weight's level
// moves the dot by about 1e-4 of Σ|x·a| at these lengths, far above it.
constexpr double tolerance = 5e-7;

uint64_t fresh_seed() {
    std::random_device device;
    return (uint64_t(device()) << 32) | device();
}

// The integer level (0..nmax) of element e of a block, and a way to change it.
int level(const q2_K& b, int e) { return (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }
void set_level(q2_K& b, int e, int v) {
    uint8_t& byte = b.qs[32 * (e / 128) + e % 32];
    const int shift = 2 * ((e % 128) / 32);
    byte = uint8_t((byte & ~(3 << shift)) | (v << shift));
}
int level(const q4_K& b, int e) { return (b.qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 15; }
void set_level(q4_K& b, int e, int v) {
    uint8_t& byte = b.qs[32 * (e / 64) + e % 32];
    const int shift = 4 * ((e / 32) % 2);
    byte = uint8_t((byte & ~(15 << shift)) | (v << shift));
}
int level(const q5_K& b, int e) {
    return ((b.qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 15) | (((b.qh[e % 32] >> (e / 32)) & 1) << 4);
}
void set_level(q5_K& b, int e, int v) {
    uint8_t& byte = b.qs[32 * (e / 64) + e % 32];
    const int shift = 4 * ((e / 32) % 2);
    byte = uint8_t((byte & ~(15 << shift)) | ((v & 15) << shift));
    b.qh[e % 32] = uint8_t((b.qh[e % 32] & ~(1 << (e / 32))) | ((v >> 4) << (e / 32)));
}
template <class B>
constexpr int max_level = std::is_same_v<B, q2_K> ? 3 : std::is_same_v<B, q4_K> ? 15 : 31;

// Sub-block scale code of element e (the factor d multiplies).
int scale_code(const q2_K& b, int e) { return b.scales[e / 16] & 15; }
template <class B>
int scale_code(const B& b, int e) { return unpack_k4_scale_min(b.scales, e / 32).scale; }

// A row of B weights and its Q8_K activations, with the exact dot of their dequantizations.
template <class B>
struct dot_case {
    std::vector<B> w;
    std::vector<q8_K> a;
    int64_t n;

    dot_case(int64_t n_, uint64_t seed) : w(std::size_t(n_ / 256)), a(std::size_t(n_ / 256)), n(n_) {
        const std::vector<float> wf = testing::gaussian(n, seed);
        const std::vector<float> af = testing::gaussian(n, seed ^ 0x5bd1e995u);
        quantize_row(wf.data(), w.data(), n);
        quantize_row(af.data(), a.data(), n);
    }

    struct exact_dot {
        double value;      // Σ dq(w)·dq(a)
        double magnitude;  // Σ |dq(w)·dq(a)|
    };
    exact_dot exact() const {
        std::vector<float> wd(std::size_t(n), 0.0f), ad(std::size_t(n), 0.0f);
        dequantize_row(w.data(), wd.data(), n);
        dequantize_row(a.data(), ad.data(), n);
        exact_dot r{0.0, 0.0};
        for (int64_t i = 0; i < n; ++i) {
            const double p = double(wd[std::size_t(i)]) * double(ad[std::size_t(i)]);
            r.value += p;
            r.magnitude += std::fabs(p);
        }
        return r;
    }
};

template <class F>
void for_each_dot_type(F&& f) {
    dot_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        SUBCASE(B::name) { f(tag); }
    });
}

}  // namespace

TEST_CASE("vec_dot equals the exact dot of the dequantized weights and activations") {
    for_each_dot_type([](auto tag) {
        using B = typename decltype(tag)::type;
        for (int64_t n : lengths) {
            const uint64_t seed = fresh_seed();
            const dot_case<B> c(n, seed);
            const auto exact = c.exact();
            const float got = vec_dot(c.w.data(), c.a.data(), n);
            INFO(B::name << ", n = " << n << ", seed = " << seed << ": vec_dot " << got << ", exact " << exact.value
                         << ", Σ|w·a| " << exact.magnitude);
            CHECK(exact.magnitude > 0.0);
            CHECK(std::fabs(double(got) - exact.value) <= tolerance * exact.magnitude);
        }
    });
}

TEST_CASE("changing one weight's level changes vec_dot by d·sc·Δq·d8·q8") {
    for_each_dot_type([](auto tag) {
        using B = typename decltype(tag)::type;
        for (int64_t n : lengths) {
            const uint64_t seed = fresh_seed();
            dot_case<B> c(n, seed);
            const float before = vec_dot(c.w.data(), c.a.data(), n);
            const double magnitude = c.exact().magnitude;
            // Elements spread over the row: every level position class and several blocks.
            std::mt19937_64 pick(seed);
            for (int trial = 0; trial < 8; ++trial) {
                int64_t i = int64_t(pick() % uint64_t(n));
                B& block = c.w[std::size_t(i / 256)];
                const q8_K& act = c.a[std::size_t(i / 256)];
                int e = int(i % 256);
                // An element whose change must show: nonzero activation and sub-block scale.
                for (int tries = 0; tries < 256 && (act.qs[e] == 0 || scale_code(block, e) == 0); ++tries) e = (e + 17) % 256;
                REQUIRE(act.qs[e] != 0);
                REQUIRE(scale_code(block, e) != 0);
                const int old_level = level(block, e);
                const int new_level = old_level < max_level<B> ? old_level + 1 : old_level - 1;
                set_level(block, e, new_level);
                REQUIRE(level(block, e) == new_level);

                const float after = vec_dot(c.w.data(), c.a.data(), n);
                const double expected = double(fp16_to_fp32(block.d)) * scale_code(block, e) *
                                        double(new_level - old_level) * double(act.d) * act.qs[e];
                INFO(B::name << ", n = " << n << ", seed = " << seed << ", element " << i / 256 * 256 + e
                             << ": level " << old_level << " -> " << new_level << ", vec_dot " << before << " -> "
                             << after << ", expected change " << expected);
                CHECK(after != before);
                CHECK(std::fabs((double(after) - double(before)) - expected) <= 2 * tolerance * magnitude);
                set_level(block, e, old_level);
                REQUIRE(vec_dot(c.w.data(), c.a.data(), n) == before);
            }
        }
    });
}

TEST_CASE("changing one sub-block's min code changes vec_dot by −dmin·Δm·d8·Σq8 over that sub-block") {
    // Q2_K: the high nibble of scales[j] (16 elements); Q4_K/Q5_K: the six-bit min of sub-block
    // j < 4, bits 0–5 of scales[j + 4] (32 elements).
    for_each_dot_type([](auto tag) {
        using B = typename decltype(tag)::type;
        constexpr bool is_q2 = std::is_same_v<B, q2_K>;
        constexpr int group = is_q2 ? 16 : 32;
        const uint64_t seed = fresh_seed();
        dot_case<B> c(1024, seed);
        const double magnitude = c.exact().magnitude;
        for (int j = 0; j < 4; ++j) {
            B& block = c.w[std::size_t(j)];
            const q8_K& act = c.a[std::size_t(j)];
            int sum_q8 = 0;
            for (int l = 0; l < group; ++l) sum_q8 += act.qs[group * j + l];
            if (sum_q8 == 0) continue;
            const float before = vec_dot(c.w.data(), c.a.data(), 1024);
            int old_code = 0, new_code = 0;
            if constexpr (is_q2) {
                old_code = block.scales[j] >> 4;
                new_code = old_code < 15 ? old_code + 1 : old_code - 1;
                block.scales[j] = uint8_t((block.scales[j] & 15) | (new_code << 4));
            } else {
                old_code = block.scales[j + 4] & 63;
                new_code = old_code < 63 ? old_code + 1 : old_code - 1;
                block.scales[j + 4] = uint8_t((block.scales[j + 4] & 0xc0) | new_code);
                REQUIRE(unpack_k4_scale_min(block.scales, j).min == new_code);
            }
            const float after = vec_dot(c.w.data(), c.a.data(), 1024);
            const double expected = -double(fp16_to_fp32(block.dmin)) * double(new_code - old_code) * double(act.d) * sum_q8;
            INFO(B::name << ", seed = " << seed << ", block " << j << ": min code " << old_code << " -> " << new_code
                         << ", vec_dot " << before << " -> " << after << ", expected change " << expected);
            if (fp16_to_fp32(block.dmin) != 0.0f) CHECK(after != before);
            CHECK(std::fabs((double(after) - double(before)) - expected) <= 2 * tolerance * magnitude);
        }
    });
}

TEST_CASE("an all-zero row quantizes to zero bytes and dots to zero") {
    for_each_dot_type([](auto tag) {
        using B = typename decltype(tag)::type;
        const std::vector<float> zeros(512, 0.0f);
        std::vector<B> w(2);
        std::vector<q8_K> a(2);
        std::vector<uint8_t> bytes(sizeof(B) * 2, 0xa5);
        std::memcpy(w.data(), bytes.data(), bytes.size());
        quantize_row(zeros.data(), w.data(), 512);
        std::memcpy(bytes.data(), w.data(), bytes.size());
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            INFO(B::name << ": byte " << i << " is " << int(bytes[i]));
            REQUIRE(bytes[i] == 0);
        }
        const std::vector<float> act = testing::gaussian(512, fresh_seed());
        quantize_row(act.data(), a.data(), 512);
        CHECK(vec_dot(w.data(), a.data(), 512) == 0.0f);
    });
}

TEST_CASE("row lengths that are not whole super-blocks are rejected with llmrt::error") {
    for_each_dot_type([](auto tag) {
        using B = typename decltype(tag)::type;
        std::vector<float> x(512, 1.0f);
        std::vector<B> w(2);
        std::vector<q8_K> a(2);
        for (int64_t n : {int64_t(100), int64_t(257), int64_t(-256)}) {
            INFO(B::name << ", n = " << n);
            CHECK_THROWS_AS(quantize_row(x.data(), w.data(), n), error);
            CHECK_THROWS_AS(vec_dot(w.data(), a.data(), n), error);
            try {
                quantize_row(x.data(), w.data(), n);
            } catch (const error& err) {
                CHECK(err.code() == errc::invalid_argument);
                CHECK(std::string(err.what()).find(std::to_string(n)) != std::string::npos);
            }
        }
    });
}
