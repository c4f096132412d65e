// Columns for testing top_k against cpu::top_k, shared by the CUDA and the Vulkan tests of the
// wide top_k (cuda/ops/top_k_wide.cuh, shaders/ops/top_k_wide.comp): fresh random values with
// many ties and signed zeros, -inf every 11th value, and per column one of the kinds below, where
// cpu::top_k's scans have their quirks; and a comparison that names the first slot that differs.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <llmrt/testing/generate.hpp>

namespace llmrt::test::top_k_columns {

using testing::gaussian;

const float nan_value = std::numeric_limits<float>::quiet_NaN();
const float inf = std::numeric_limits<float>::infinity();

// The kinds of column the tests mix, column c of a run taking kind c % kinds.
enum class kind {
    plain,             // two +inf (a tie) among the numbers
    nan_first,         // x[0] NaN: the picks 0, then 1, then below x[1]
    nan_spread,        // NaN every 7th value and last
    few_numbers,       // x[0] and k / 2 numbers, the rest NaN: picks past the numbers land on j
    tied,              // three values, mostly one of them
    nan_first_few,     // x[0] NaN and k / 2 numbers
    nan_first_low,     // x[0] NaN, x[1] = -1000: the picks after it lie below the k best
    nan_first_bottom,  // x[0] NaN, x[1] with three numbers below it, then x[5] = -0 ranked midway
    all_nan,
};
constexpr int kinds = 9;

// count gaussians rounded to quarters (many ties; ±0 both), with signed zeros planted.
std::vector<float> tied(int64_t count, uint64_t seed) {
    std::vector<float> x = gaussian(std::size_t(count), seed, 2.0f);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = std::round(x[i] * 4.0f) / 4.0f;
        if (i % 13 == 5) x[i] = -0.0f;
        if (i % 13 == 6) x[i] = 0.0f;
    }
    return x;
}

// cols columns of n values (n > 30): tied() with -inf every 11th value, then what the column's
// kind adds.
std::vector<float> columns(int64_t n, int64_t k, int64_t cols, uint64_t seed) {
    std::vector<float> x = tied(n * cols, seed);
    for (int64_t c = 0; c < cols; ++c) {
        float* col = x.data() + c * n;
        for (int64_t i = 3; i < n; i += 11) col[i] = -inf;
        auto keep_few = [&](bool first) {
            std::vector<float> kept(col, col + n);
            for (int64_t i = 0; i < n; ++i) col[i] = nan_value;
            for (int64_t t = 0; t < k / 2; ++t) {
                const int64_t i = (t * 7 + 1) % n;
                col[i] = kept[std::size_t(i)];
            }
            if (first) col[0] = kept[0];
        };
        switch (kind(c % kinds)) {
            case kind::plain:
                col[7] = inf;
                col[n - 2] = inf;
                break;
            case kind::nan_first: col[0] = nan_value; break;
            case kind::nan_spread:
                for (int64_t i = 2; i < n; i += 7) col[i] = nan_value;
                col[n - 1] = nan_value;
                break;
            case kind::few_numbers: keep_few(true); break;
            case kind::tied:
                for (int64_t i = 0; i < n; ++i) col[i] = i % 1000 == 999 ? 0.75f : i % 3 == 0 ? 0.5f : -0.0f;
                break;
            case kind::nan_first_few:
                keep_few(false);
                col[0] = nan_value;
                break;
            case kind::nan_first_low:
                col[0] = nan_value;
                col[1] = -1000.0f;
                break;
            case kind::nan_first_bottom:
                for (int64_t i = 3; i < n; i += 11) col[i] = 0.25f;  // no -inf: nothing below x[1] but three
                col[0] = nan_value;
                col[1] = -50.0f;
                col[10] = -60.0f;
                col[20] = -70.0f;
                col[30] = -80.0f;
                col[5] = -0.0f;
                break;
            case kind::all_nan:
                for (int64_t i = 0; i < n; ++i) col[i] = nan_value;
                break;
        }
    }
    return x;
}

// Column by column: the first slot where got and want part.
void check_picks(const std::vector<int32_t>& got, const std::vector<int32_t>& want, int64_t k, int64_t cols) {
    REQUIRE(got.size() == want.size());
    for (int64_t c = 0; c < cols; ++c) {
        int64_t first = -1;
        for (int64_t j = 0; j < k && first < 0; ++j)
            if (got[std::size_t(c * k + j)] != want[std::size_t(c * k + j)]) first = j;
        INFO("column ", c, " (kind ", c % kinds, "): slot ", first, " picks ",
             first < 0 ? 0 : got[std::size_t(c * k + first)], ", the CPU ", first < 0 ? 0 : want[std::size_t(c * k + first)]);
        CHECK(first < 0);
    }
}

}  // namespace llmrt::test::top_k_columns
