// Seeded input generators.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "llmrt/testing/generate.hpp"

using namespace llmrt::testing;

namespace {
uint32_t bits_of(float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct moments {
    double mean = 0.0, stddev = 0.0;
};
moments moments_of(const std::vector<float>& v) {
    double sum = 0.0, sum2 = 0.0;
    for (float x : v) {
        sum += x;
        sum2 += double(x) * double(x);
    }
    const double n = double(v.size()), mean = sum / n;
    return {mean, std::sqrt(sum2 / n - mean * mean)};
}

// Block b of v (length `block`, shorter at the end) holds one repeated value.
bool block_is_constant(const std::vector<float>& v, std::size_t b, std::size_t block) {
    const std::size_t begin = b * block, end = std::min(v.size(), begin + block);
    for (std::size_t i = begin; i < end; ++i)
        if (v[i] != v[begin]) return false;
    return true;
}
}  // namespace

TEST_CASE("the random bits are splitmix64's output for the counter") {
    // splitmix64 seeded with 0 starts 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4 (its published sequence).
    CHECK(mix64(0x9e3779b97f4a7c15ull) == 0xe220a8397b1dcdafull);
    CHECK(mix64(2 * 0x9e3779b97f4a7c15ull) == 0x6e789e6aa1b965f4ull);
}

TEST_CASE("every generator is reproducible from its seed") {
    for (distribution d : all_distributions) {
        CAPTURE(to_string(d));
        CHECK(bit_identical(generate(d, 1000, 123), generate(d, 1000, 123)));
    }
    CHECK(bit_identical(uniform(500, 9, -3.0f, 5.0f), uniform(500, 9, -3.0f, 5.0f)));
    CHECK(bit_identical(gaussian(500, 9, 0.25f), gaussian(500, 9, 0.25f)));
}

TEST_CASE("a prefix of a longer draw equals the shorter draw with the same seed") {
    for (distribution d : {distribution::uniform, distribution::gaussian, distribution::heavy_tailed}) {
        CAPTURE(to_string(d));
        std::vector<float> longer = generate(d, 1024, 77);
        longer.resize(100);
        CHECK(bit_identical(longer, generate(d, 100, 77)));
    }
}

TEST_CASE("different seeds give different values") {
    for (distribution d : all_distributions) {
        CAPTURE(to_string(d));
        const std::vector<float> a = generate(d, 1000, 1), b = generate(d, 1000, 2);
        int64_t equal = 0;
        for (std::size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i];
        // Only the zero blocks may coincide; most elements must differ.
        CHECK(equal < 600);
    }
}

TEST_CASE("the generated values are pinned, so a platform or library change cannot alter them unseen") {
    // Produced by this generator when it was written, identical under g++ and clang++ at -O0 and
    // at -O3 -march=native -ffp-contract=fast; every platform must agree bit for bit.
    const std::vector<float> u = uniform(3, 42), g = gaussian(3, 42);
    const uint32_t u_bits[] = {0xbf52bbe6u, 0xbf18aae0u, 0x3f3e60f4u};
    const uint32_t g_bits[] = {0xbe8a52feu, 0x3feff9fbu, 0x3dd811a5u};
    for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        CHECK(bits_of(u[i]) == u_bits[i]);
        CHECK(bits_of(g[i]) == g_bits[i]);
    }
    // A digest over every distribution and the scaled uniform and gaussian forms.
    uint64_t digest = 0;
    auto absorb = [&](const std::vector<float>& v) {
        for (float f : v) digest = mix64(digest ^ bits_of(f));
    };
    for (distribution d : all_distributions) absorb(generate(d, 100000, 7, 32));
    absorb(uniform(100000, 3, -1e-3f, 7.5f));
    absorb(gaussian(100000, 3, 0.37f));
    CHECK(digest == 0x53a15a68586c675dull);
}

TEST_CASE("uniform values lie in [lo, hi] and spread over the whole range") {
    const std::vector<float> v = uniform(1 << 15, 5, -2.0f, 6.0f);
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    CHECK(*lo >= -2.0f);
    CHECK(*hi <= 6.0f);
    CHECK(*lo < -1.99f);
    CHECK(*hi > 5.99f);
    const moments m = moments_of(v);
    CHECK(m.mean == doctest::Approx(2.0).epsilon(0.02));
    CHECK(m.stddev == doctest::Approx(8.0 / std::sqrt(12.0)).epsilon(0.02));
}

TEST_CASE("gaussian values have mean zero, the given deviation, and the normal's one-sigma share") {
    const std::vector<float> v = gaussian(1 << 16, 8, 3.0f);
    const moments m = moments_of(v);
    CHECK(std::fabs(m.mean) < 0.05);
    CHECK(m.stddev == doctest::Approx(3.0).epsilon(0.02));
    int64_t within = 0;
    for (float x : v) within += std::fabs(x) < 3.0f;
    CHECK(double(within) / double(v.size()) == doctest::Approx(0.6827).epsilon(0.01));
    for (float x : v) REQUIRE(std::fabs(x) <= 18.0f);  // Irwin–Hall is bounded to ±6σ
}

TEST_CASE("heavy-tailed values are gaussian with about one element in 64 scaled by 50") {
    const std::vector<float> v = generate(distribution::heavy_tailed, 1 << 16, 10);
    // Beyond 6σ only an outlier can lie; about 0.9 of the ×50 outliers land there.
    int64_t outliers = 0;
    float largest = 0.0f;
    for (float x : v) {
        outliers += std::fabs(x) > 6.0f;
        largest = std::max(largest, std::fabs(x));
    }
    const double expected = double(v.size()) / 64.0 * 0.904;
    CHECK(double(outliers) > 0.8 * expected);
    CHECK(double(outliers) < 1.2 * expected);
    CHECK(largest > 100.0f);
}

TEST_CASE("zero_blocks holds all-zero blocks, about one in four, and at least one") {
    const std::size_t block = 32, nblocks = 512;
    const std::vector<float> v = generate(distribution::zero_blocks, int64_t(block * nblocks), 12);
    std::size_t zero = 0;
    for (std::size_t b = 0; b < nblocks; ++b) zero += block_is_constant(v, b, block) && v[b * block] == 0.0f;
    CHECK(zero > nblocks / 4 - 40);
    CHECK(zero < nblocks / 4 + 40);
    for (uint64_t seed = 0; seed < 20; ++seed) {
        const std::vector<float> small = generate(distribution::zero_blocks, 64, seed);
        CAPTURE(seed);
        CHECK(((block_is_constant(small, 0, 32) && small[0] == 0.0f) || (block_is_constant(small, 1, 32) && small[32] == 0.0f)));
    }
}

TEST_CASE("constant_blocks holds blocks of one repeated value, about one in four, and at least one") {
    const std::size_t block = 16, nblocks = 512;
    const std::vector<float> v = generate(distribution::constant_blocks, int64_t(block * nblocks), 13, int(block));
    std::size_t constant = 0, nonzero_constant = 0;
    for (std::size_t b = 0; b < nblocks; ++b) {
        const bool c = block_is_constant(v, b, block);
        constant += c;
        nonzero_constant += c && v[b * block] != 0.0f;
    }
    CHECK(constant > nblocks / 4 - 40);
    CHECK(constant < nblocks / 4 + 40);
    CHECK(nonzero_constant == constant);
    const std::vector<float> one_block = generate(distribution::constant_blocks, 16, 99, 16);
    CHECK(block_is_constant(one_block, 0, 16));
}

TEST_CASE("a length that is not a multiple of the block length is filled to the end") {
    const std::vector<float> v = generate(distribution::zero_blocks, 100, 14, 32);
    CHECK(v.size() == 100);
    const std::vector<float> w = generate(distribution::constant_blocks, 5, 14, 32);
    CHECK(block_is_constant(w, 0, 32));  // the only, short, block is the forced constant one
}

TEST_CASE("the generators reject negative counts, bad blocks and bad ranges with llmrt::error") {
    CHECK_THROWS_AS(generate(distribution::gaussian, -1, 0), llmrt::error);
    CHECK_THROWS_AS(generate(distribution::zero_blocks, 64, 0, 0), llmrt::error);
    CHECK_THROWS_AS(uniform(4, 0, 1.0f, -1.0f), llmrt::error);
    CHECK_THROWS_AS(gaussian(4, 0, -1.0f), llmrt::error);
    CHECK_THROWS_AS(generate(static_cast<distribution>(99), 4, 0), llmrt::error);
    CHECK(generate(distribution::uniform, 0, 0).empty());
}
