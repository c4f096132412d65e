// Error measures: nmse, compare/error_report, ulp_distance.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "llmrt/testing/generate.hpp"
#include "llmrt/testing/measures.hpp"

using namespace llmrt::testing;

namespace {
constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("identical inputs give zero error in every measure") {
    const std::vector<float> ref = gaussian(1000, 7);
    const std::vector<float> out = ref;
    const error_report r = compare(out.data(), ref.data(), 1000);
    CHECK(r.n == 1000);
    CHECK(r.nmse == 0.0);
    CHECK(r.max_abs_error == 0.0);
    CHECK(r.max_rel_error == 0.0);
    CHECK(r.worst_index == -1);
    CHECK(r.nan_count == 0);
    CHECK(r.inf_mismatch_count == 0);
    CHECK(nmse(out.data(), ref.data(), 1000) == 0.0);
    CHECK(r.describe(out.data(), ref.data()).find("all elements equal") != std::string::npos);
}

TEST_CASE("nmse is the squared error over the squared reference, summed") {
    const float ref[] = {1.0f, 2.0f, 2.0f, 0.0f};
    const float out[] = {1.0f, 2.0f, 3.0f, 0.5f};
    // (0 + 0 + 1 + 0.25) / (1 + 4 + 4 + 0)
    CHECK(nmse(out, ref, 4) == doctest::Approx(1.25 / 9.0).epsilon(1e-15));
    CHECK(compare(out, ref, 4).nmse == doctest::Approx(1.25 / 9.0).epsilon(1e-15));
}

TEST_CASE("nmse is zero when both buffers are all zero and infinite when only the reference is") {
    const float zeros[] = {0.0f, -0.0f, 0.0f};
    const float some[] = {0.0f, 1e-30f, 0.0f};
    CHECK(nmse(zeros, zeros, 3) == 0.0);
    CHECK(std::isinf(nmse(some, zeros, 3)));
    CHECK(nmse(zeros, zeros, 0) == 0.0);
}

TEST_CASE("a one-ulp change is seen") {
    std::vector<float> ref = gaussian(4096, 11);
    std::vector<float> out = ref;
    out[1234] = std::nextafter(ref[1234], inf);
    CHECK(ulp_distance(out[1234], ref[1234]) == 1);
    const error_report r = compare(out.data(), ref.data(), 4096);
    CHECK(r.nmse > 0.0);
    CHECK(nmse(out.data(), ref.data(), 4096) > 0.0);
    CHECK(r.worst_index == 1234);
    CHECK(r.max_abs_error == double(out[1234]) - double(ref[1234]));
    CHECK(r.max_rel_error > 0.0);
}

TEST_CASE("ulp_distance counts the representable floats between two values") {
    CHECK(ulp_distance(1.0f, 1.0f) == 0);
    CHECK(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
    CHECK(ulp_distance(std::nextafter(1.0f, 2.0f), 1.0f) == 1);
    CHECK(ulp_distance(1.0f, 2.0f) == (1u << 23));
    CHECK(ulp_distance(0.0f, -0.0f) == 0);
    const float tiny = std::numeric_limits<float>::denorm_min();
    CHECK(ulp_distance(tiny, -tiny) == 2);
    CHECK(ulp_distance(std::numeric_limits<float>::max(), inf) == 1);
    CHECK(ulp_distance(-inf, inf) == 2u * 0x7f800000u);
    CHECK(ulp_distance(qnan, 1.0f) == std::numeric_limits<uint32_t>::max());
    CHECK(ulp_distance(qnan, qnan) == std::numeric_limits<uint32_t>::max());
}

TEST_CASE("max absolute and relative errors are the largest over the elements") {
    const float ref[] = {10.0f, -4.0f, 0.0f, 1.0f};
    const float out[] = {10.5f, -4.0f, 0.25f, 1.125f};
    const error_report r = compare(out, ref, 4);
    CHECK(r.max_abs_error == 0.5);
    CHECK(r.worst_index == 0);
    // The zero reference element has no relative error; 0.125 / 1 beats 0.5 / 10.
    CHECK(r.max_rel_error == 0.125);
}

TEST_CASE("a NaN in the output is counted and named as the worst element") {
    std::vector<float> ref = {1.0f, 2.0f, 3.0f, 4.0f};
    std::vector<float> out = {1.0f, 2.5f, qnan, 4.0f};
    const error_report r = compare(out.data(), ref.data(), 4);
    CHECK(r.nan_count == 1);
    CHECK(r.worst_index == 2);
    CHECK_FALSE(r.all_finite_match());
    // The finite measures stay finite and cover the other elements.
    CHECK(r.max_abs_error == 0.5);
    CHECK(std::isfinite(r.nmse));
    CHECK(std::isnan(nmse(out.data(), ref.data(), 4)));
    const std::string text = r.describe(out.data(), ref.data());
    CHECK(text.find("[2] got nan expected 3") != std::string::npos);
}

TEST_CASE("a NaN in only the reference counts as a NaN mismatch and a NaN in both matches") {
    const float ref[] = {qnan, qnan};
    const float out[] = {1.0f, qnan};
    const error_report r = compare(out, ref, 2);
    CHECK(r.nan_count == 1);
    CHECK(r.worst_index == 0);
    CHECK(compare(out + 1, ref + 1, 1).nan_count == 0);
}

TEST_CASE("infinities must match in sign") {
    const float ref[] = {inf, -inf, inf, 5.0f, 1.0f};
    const float out[] = {inf, -inf, -inf, inf, 1.0f};
    const error_report r = compare(out, ref, 5);
    CHECK(r.inf_mismatch_count == 2);
    CHECK(r.nan_count == 0);
    CHECK(r.worst_index == 2);
    CHECK(r.nmse == 0.0);  // the finite pair (1, 1) is exact
    CHECK(compare(out, ref, 2).inf_mismatch_count == 0);
    CHECK(compare(out, ref, 2).all_finite_match());
}

TEST_CASE("describe names the worst elements largest first with index, got and expected") {
    std::vector<float> ref(100, 1.0f);
    std::vector<float> out = ref;
    out[7] = 1.5f;
    out[42] = 3.0f;
    out[99] = 1.25f;
    const error_report r = compare(out.data(), ref.data(), 100);
    const std::string two = r.describe(out.data(), ref.data(), 2);
    const auto first = two.find("[42] got 3 expected 1");
    const auto second = two.find("[7] got 1.5 expected 1");
    REQUIRE(first != std::string::npos);
    REQUIRE(second != std::string::npos);
    CHECK(first < second);
    CHECK(two.find("[99]") == std::string::npos);
    CHECK(two.find("3 element(s) differ") != std::string::npos);
    CHECK(r.describe(out.data(), ref.data()).find("[99] got 1.25 expected 1") != std::string::npos);
}

TEST_CASE("the measures reject negative counts and null buffers with llmrt::error") {
    const float a[] = {1.0f};
    CHECK_THROWS_AS(nmse(a, a, -1), llmrt::error);
    CHECK_THROWS_AS(compare(nullptr, a, 1), llmrt::error);
    CHECK_THROWS_AS(compare(a, nullptr, 1), llmrt::error);
    CHECK(compare(nullptr, nullptr, 0).n == 0);
}
