// Poisoning output buffers and finding the elements a kernel never wrote.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "llmrt/testing/generate.hpp"
#include "llmrt/testing/measures.hpp"
#include "llmrt/testing/poison.hpp"
#include "llmrt/testing/readback.hpp"

using namespace llmrt::testing;

namespace {
uint32_t bits_of(float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

// A stand-in for a kernel with a bug: it writes y = 2·x but skips the listed indices.
void kernel_that_skips(const float* x, float* y, int64_t n, const std::vector<int64_t>& skipped) {
    for (int64_t i = 0; i < n; ++i) {
        bool skip = false;
        for (int64_t s : skipped) skip = skip || s == i;
        if (!skip) y[i] = 2.0f * x[i];
    }
}
}  // namespace

TEST_CASE("poison fills every element with poison_bits, a NaN") {
    std::vector<float> y(37, 1.0f);
    poison(y.data(), 37);
    for (float v : y) {
        CHECK(bits_of(v) == poison_bits);
        CHECK(std::isnan(v));
        CHECK(is_poison(v));
    }
    CHECK(unwritten(y.data(), 37).size() == 37);
}

TEST_CASE("a poisoned element that a kernel skipped is reported with its index") {
    const int64_t n = 300;
    const std::vector<float> x = gaussian(n, 3);
    std::vector<float> ref(n);
    for (int64_t i = 0; i < n; ++i) ref[std::size_t(i)] = 2.0f * x[std::size_t(i)];

    std::vector<float> y(n);
    poison(y.data(), n);
    kernel_that_skips(x.data(), y.data(), n, {5, 255, 299});

    CHECK(unwritten(y.data(), n) == std::vector<int64_t>{5, 255, 299});
    const error_report r = compare(y.data(), ref.data(), n);
    CHECK(r.nan_count == 3);
    CHECK(r.worst_index == 5);
    const std::string text = r.describe(y.data(), ref.data());
    CHECK(text.find("[5] got unwritten (poison)") != std::string::npos);
    CHECK(text.find("[255] got unwritten (poison)") != std::string::npos);
    CHECK(text.find("[299] got unwritten (poison)") != std::string::npos);
}

TEST_CASE("a kernel that writes every element leaves nothing unwritten") {
    const std::vector<float> x = uniform(64, 4);
    std::vector<float> y(64);
    poison(y.data(), 64);
    kernel_that_skips(x.data(), y.data(), 64, {});
    CHECK(unwritten(y.data(), 64).empty());
}

TEST_CASE("NaNs made by arithmetic are not mistaken for unwritten elements") {
    volatile float zero = 0.0f, minus_one = -1.0f, infinity = std::numeric_limits<float>::infinity();
    const float written[] = {zero / zero, infinity - infinity, std::sqrt(float(minus_one)), zero * infinity,
                             std::numeric_limits<float>::quiet_NaN()};
    for (float v : written) {
        CHECK(std::isnan(v));
        CHECK_FALSE(is_poison(v));
    }
    CHECK(unwritten(written, 5).empty());
}

TEST_CASE("describe_unwritten lists the first indices and the count") {
    std::vector<int64_t> many;
    for (int64_t i = 0; i < 20; ++i) many.push_back(i * 3);
    CHECK(describe_unwritten({4, 9}) == "[4, 9] (2 unwritten)");
    CHECK(describe_unwritten(many, 3) == "[0, 3, 6, ...] (20 unwritten)");
}

TEST_CASE("compare_readback reports the measures and the unwritten indices of a read-back buffer") {
    const std::vector<float> ref = gaussian(128, 9);
    std::vector<float> out = ref;
    poison(out.data() + 64, 1);
    out[10] = ref[10] + 0.5f;
    const readback_report r = compare_readback(out, ref.data(), 128);
    CHECK(r.unwritten == std::vector<int64_t>{64});
    CHECK(r.nan_count == 1);
    CHECK_FALSE(r.complete());
    CHECK(r.max_abs_error == doctest::Approx(0.5).epsilon(1e-6));
    CHECK(r.out.size() == 128);
    const std::string text = r.describe(ref.data());
    CHECK(text.find("unwritten [64] (1 unwritten)") != std::string::npos);
    CHECK(text.find("[10] got") != std::string::npos);

    CHECK(compare_readback(ref, ref.data(), 128).complete());
    CHECK_THROWS_AS(compare_readback(ref, ref.data(), 127), llmrt::error);
}

TEST_CASE("poison and unwritten reject negative counts and null buffers with llmrt::error") {
    CHECK_THROWS_AS(poison(nullptr, 4), llmrt::error);
    CHECK_THROWS_AS(unwritten(nullptr, 4), llmrt::error);
    float one = 0.0f;
    CHECK_THROWS_AS(poison(&one, -1), llmrt::error);
    CHECK(unwritten(nullptr, 0).empty());
}
