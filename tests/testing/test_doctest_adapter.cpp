// The doctest adapter: the check functions' verdicts and messages, and the macros' reports.
#include "llmrt/testing/doctest.hpp"

#include <string>
#include <vector>

#include "llmrt/testing/generate.hpp"
#include "llmrt/testing/poison.hpp"

using namespace llmrt::testing;

TEST_CASE("check_nmse passes within the bound and fails above it, naming the worst element") {
    const std::vector<float> ref = gaussian(512, 51);
    std::vector<float> out = ref;
    out[300] += 0.01f;
    const double e = nmse(out.data(), ref.data(), 512);
    CHECK(check_nmse(out.data(), ref.data(), 512, 2 * e).passed);
    CHECK(check_nmse(out.data(), ref.data(), 512, 2 * e).message.empty());
    const check_result failed = check_nmse(out.data(), ref.data(), 512, e / 2);
    CHECK_FALSE(failed.passed);
    CHECK(failed.message.find("is above the bound") != std::string::npos);
    CHECK(failed.message.find("[300] got") != std::string::npos);
}

TEST_CASE("check_nmse fails on a NaN however loose the bound") {
    const std::vector<float> ref = gaussian(64, 52);
    std::vector<float> out = ref;
    poison(out.data() + 17, 1);
    const check_result r = check_nmse(out.data(), ref.data(), 64, 1e30);
    CHECK_FALSE(r.passed);
    CHECK(r.message.find("1 NaN") != std::string::npos);
    CHECK(r.message.find("[17] got unwritten (poison)") != std::string::npos);
}

TEST_CASE("check_max_abs compares the largest absolute error with its bound") {
    const float ref[] = {1.0f, 2.0f, 3.0f};
    const float out[] = {1.0f, 2.25f, 3.0f};
    CHECK(check_max_abs(out, ref, 3, 0.25).passed);
    const check_result r = check_max_abs(out, ref, 3, 0.125);
    CHECK_FALSE(r.passed);
    CHECK(r.message.find("[1] got 2.25 expected 2") != std::string::npos);
}

TEST_CASE("check_all_written lists the unwritten indices") {
    std::vector<float> y(50, 0.0f);
    CHECK(check_all_written(y.data(), 50).passed);
    poison(y.data() + 3, 2);
    poison(y.data() + 49, 1);
    const check_result r = check_all_written(y.data(), 50);
    CHECK_FALSE(r.passed);
    CHECK(r.message.find("[3, 4, 49] (3 unwritten)") != std::string::npos);
}

TEST_CASE("a bound that is negative or not a number is an error, not a silent failure") {
    const float a[] = {1.0f};
    CHECK_THROWS_AS(check_nmse(a, a, 1, -1.0), llmrt::error);
    CHECK_THROWS_AS(check_max_abs(a, a, 1, std::nan("")), llmrt::error);
}

// The next two cases must fail in exactly the listed number of checks: doctest reports them as
// passing when they do, and as failing when a macro stays silent or fails when it should not.
// Their ERROR lines in the output are the expected ones.
TEST_CASE("the CHECK macros report each failing check through doctest (3 expected failures)" *
          doctest::expected_failures(3)) {
    const std::vector<float> ref = gaussian(64, 53);
    std::vector<float> out = ref;
    LLMRT_CHECK_NMSE(out.data(), ref.data(), 64, 0.0);  // passes: adds no failure
    LLMRT_CHECK_MAX_ABS(out.data(), ref.data(), 64, 0.0);
    LLMRT_CHECK_ALL_WRITTEN(out.data(), 64);
    out[9] += 1.0f;
    poison(out.data() + 10, 1);
    LLMRT_CHECK_NMSE(out.data(), ref.data(), 64, 1e-6);     // fails
    LLMRT_CHECK_MAX_ABS(out.data(), ref.data(), 64, 1e-6);  // fails
    LLMRT_CHECK_ALL_WRITTEN(out.data(), 64);                // fails
}

TEST_CASE("the REQUIRE macros end the test case on failure (1 expected failure)" * doctest::expected_failures(1)) {
    std::vector<float> y(8, 1.0f);
    poison(y.data() + 2, 1);
    LLMRT_REQUIRE_ALL_WRITTEN(y.data(), 8);
    FAIL_CHECK("not reached: LLMRT_REQUIRE_ALL_WRITTEN went on after a failure");
}

TEST_CASE("LLMRT_REQUIRE_NMSE ends the test case on failure (1 expected failure)" * doctest::expected_failures(1)) {
    const float ref[] = {1.0f, 2.0f};
    const float out[] = {1.0f, 3.0f};
    LLMRT_REQUIRE_NMSE(out, ref, 2, 1e-3);
    FAIL_CHECK("not reached: LLMRT_REQUIRE_NMSE went on after a failure");
}
