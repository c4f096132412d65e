// Seeded input generators that mirror what kernels meet in real models.
//
// Every value is a pure function of (seed, index), computed with integer arithmetic and single
// correctly rounded float operations, so the same seed gives bit-identical inputs on every
// platform, compiler and standard library (std::normal_distribution gives no such promise).
//
//   random bits:  splitmix64's finaliser over a counter (a counter-based generator)
//   uniform:      lo·(1−u) + hi·u, u = 24 random bits / 2^24; both products are exact in double,
//                 so fused and unfused multiply-adds agree
//   gaussian:     Irwin–Hall: Σ of 12 uniform 32-bit integers, centred; mean 0, variance 1 to within
//                 2^-32, bounded to ±6σ (a 6σ tail has probability 2e-9, rarer than any test meets)
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"

namespace llmrt::testing {

enum class distribution {
    uniform,          // uniform in [−1, 1]
    gaussian,         // standard normal (Irwin–Hall, see above)
    heavy_tailed,     // gaussian, with one element in 64 scaled by 50 (activation outliers)
    zero_blocks,      // gaussian, with about one block in four all zero (at least one block)
    constant_blocks,  // gaussian, with about one block in four holding one repeated value (at least one)
};

inline const char* to_string(distribution d) {
    switch (d) {
        case distribution::uniform: return "uniform";
        case distribution::gaussian: return "gaussian";
        case distribution::heavy_tailed: return "heavy_tailed";
        case distribution::zero_blocks: return "zero_blocks";
        case distribution::constant_blocks: return "constant_blocks";
    }
    return "unknown distribution";
}

inline constexpr distribution all_distributions[] = {distribution::uniform, distribution::gaussian,
                                                     distribution::heavy_tailed, distribution::zero_blocks,
                                                     distribution::constant_blocks};

// splitmix64's output function: a bijective mix of 64 bits.
inline constexpr uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// 64 random bits for (seed, stream, counter): independent streams per purpose, random access by counter.
inline constexpr uint64_t random_bits(uint64_t seed, uint64_t stream, uint64_t counter) {
    constexpr uint64_t golden = 0x9e3779b97f4a7c15ull;
    return mix64(mix64(seed ^ mix64(stream * golden + 1)) + counter * golden);
}

namespace detail {
enum stream_id : uint64_t { uniform_stream = 1, gaussian_stream, outlier_stream, block_stream, constant_stream };

inline void check_count(int64_t n, const char* operation) {
    check(n >= 0, errc::invalid_argument,
          [&] { return std::string(operation) + ": negative element count " + std::to_string(n); });
}

// lo·(1−u) + hi·u with u = bits/2^24; exact products keep it identical with or without FMA.
inline float uniform_value(uint64_t bits, float lo, float hi) {
    const double u = double(bits >> 40) * 0x1p-24;
    return float(double(lo) * (1.0 - u) + double(hi) * u);
}

// Irwin–Hall with twelve 32-bit uniforms: Σ has mean 6·(2^32−1) and standard deviation 2^32·(1 − 2^-64)^½.
inline double standard_normal(uint64_t seed, uint64_t stream, int64_t index) {
    int64_t sum = 0;
    for (uint64_t j = 0; j < 6; ++j) {
        const uint64_t bits = random_bits(seed, stream, uint64_t(index) * 6 + j);
        sum += int64_t(bits >> 32) + int64_t(bits & 0xffffffffu);
    }
    return double(sum - 6 * int64_t(0xffffffffu)) * 0x1p-32;
}

inline std::vector<float> gaussian_values(int64_t n, uint64_t seed, float stddev) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[std::size_t(i)] = float(standard_normal(seed, gaussian_stream, i) * double(stddev));
    return v;
}

// Whether block b of nblocks is one of the special (zero or constant) blocks: one in four by
// chance, and always the one at a seed-chosen index so that every input has at least one.
inline bool special_block(uint64_t seed, int64_t b, int64_t nblocks) {
    const int64_t forced = int64_t(random_bits(seed, block_stream, ~uint64_t(0)) % uint64_t(nblocks));
    return b == forced || (random_bits(seed, block_stream, uint64_t(b)) & 3) == 0;
}
}  // namespace detail

// n values uniform in [lo, hi] (hi itself only where the last rounding lands on it).
inline std::vector<float> uniform(int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    detail::check_count(n, "testing::uniform");
    check(lo <= hi, errc::invalid_argument, [&] {
        return "testing::uniform: lo " + std::to_string(lo) + " is above hi " + std::to_string(hi);
    });
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        v[std::size_t(i)] = detail::uniform_value(random_bits(seed, detail::uniform_stream, uint64_t(i)), lo, hi);
    return v;
}

// n values with mean 0 and standard deviation stddev (Irwin–Hall, bounded to ±6·stddev).
inline std::vector<float> gaussian(int64_t n, uint64_t seed, float stddev = 1.0f) {
    detail::check_count(n, "testing::gaussian");
    check(stddev >= 0.0f, errc::invalid_argument,
          [&] { return "testing::gaussian: negative standard deviation " + std::to_string(stddev); });
    return detail::gaussian_values(n, seed, stddev);
}

// n values of distribution d; `block` is the block length of zero_blocks and constant_blocks
// (the last block may be shorter when n is not a multiple of it).
inline std::vector<float> generate(distribution d, int64_t n, uint64_t seed, int block = 32) {
    detail::check_count(n, "testing::generate");
    check(block >= 1, errc::invalid_argument,
          [&] { return "testing::generate: block length " + std::to_string(block) + " is below 1"; });
    switch (d) {
        case distribution::uniform: return uniform(n, seed);
        case distribution::gaussian: return gaussian(n, seed);
        case distribution::heavy_tailed: {
            std::vector<float> v = detail::gaussian_values(n, seed, 1.0f);
            for (int64_t i = 0; i < n; ++i)
                if ((random_bits(seed, detail::outlier_stream, uint64_t(i)) & 63) == 0) v[std::size_t(i)] *= 50.0f;
            return v;
        }
        case distribution::zero_blocks:
        case distribution::constant_blocks: {
            std::vector<float> v = detail::gaussian_values(n, seed, 1.0f);
            const int64_t nblocks = (n + block - 1) / block;
            for (int64_t b = 0; b < nblocks; ++b) {
                if (!detail::special_block(seed, b, nblocks)) continue;
                const float value = d == distribution::zero_blocks
                                        ? 0.0f
                                        : float(detail::standard_normal(seed, detail::constant_stream, b));
                for (int64_t i = b * block; i < n && i < (b + 1) * block; ++i) v[std::size_t(i)] = value;
            }
            return v;
        }
    }
    throw error(errc::invalid_argument,
                "testing::generate: unknown distribution " + std::to_string(static_cast<int>(d)));
}

}  // namespace llmrt::testing
