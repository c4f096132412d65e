// An optional doctest adapter for the toolkit: checks that, when they fail, print the worst
// elements with their indices instead of a bare "false".
//
//   LLMRT_CHECK_NMSE(out, ref, n, bound);     nmse(out, ref) <= bound, no NaN, infinities matching
//   LLMRT_CHECK_MAX_ABS(out, ref, n, bound);  max |out − ref| <= bound, no NaN, infinities matching
//   LLMRT_CHECK_ALL_WRITTEN(data, n);         no element still holds poison_bits
//   LLMRT_REQUIRE_NMSE / LLMRT_REQUIRE_ALL_WRITTEN: the same, ending the test case on failure.
//
// The macros report through doctest at the caller's file and line; the functions behind them
// (check_nmse, check_max_abs, check_all_written) return a check_result and use no doctest, for
// callers that report in their own way. Include <doctest/doctest.h> first, or let this header do it.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "llmrt/core/error.hpp"
#include "llmrt/testing/measures.hpp"
#include "llmrt/testing/poison.hpp"

namespace llmrt::testing {

// What a check found: whether it passed, and on failure a message naming the worst elements.
struct check_result {
    bool passed = false;
    std::string message;  // empty when passed
    explicit operator bool() const { return passed; }
};

namespace detail {
inline void check_bound(double bound, const char* operation) {
    check(bound >= 0.0, errc::invalid_argument,
          [&] { return std::string(operation) + ": the bound " + format_measure(bound) + " is not a number >= 0"; });
}

// Shared by the NMSE and max-abs checks: the measure against its bound, then NaN / inf mismatches.
inline check_result check_measure(const float* out, const float* ref, int64_t n, double bound, const char* measure_name,
                                  double error_report::*measure, int worst) {
    const error_report r = compare(out, ref, n);
    const double value = r.*measure;
    check_result result;
    result.passed = value <= bound && r.all_finite_match();
    if (!result.passed) {
        std::string why;
        if (!(value <= bound)) why = std::string(measure_name) + " " + format_measure(value) + " is above the bound " + format_measure(bound);
        if (!r.all_finite_match())
            why += (why.empty() ? "" : "; ") + std::to_string(r.nan_count) + " NaN and " +
                   std::to_string(r.inf_mismatch_count) + " mismatched inf element(s)";
        result.message = why + "\n" + r.describe(out, ref, worst);
    }
    return result;
}
}  // namespace detail

// Passes when nmse(out, ref) <= bound and no element is a NaN or a mismatched inf.
inline check_result check_nmse(const float* out, const float* ref, int64_t n, double bound, int worst = 5) {
    detail::check_bound(bound, "testing::check_nmse");
    return detail::check_measure(out, ref, n, bound, "nmse", &error_report::nmse, worst);
}

// Passes when max |out − ref| <= bound and no element is a NaN or a mismatched inf.
inline check_result check_max_abs(const float* out, const float* ref, int64_t n, double bound, int worst = 5) {
    detail::check_bound(bound, "testing::check_max_abs");
    return detail::check_measure(out, ref, n, bound, "max abs error", &error_report::max_abs_error, worst);
}

// Passes when no element of data still holds poison_bits; the message lists the unwritten indices.
inline check_result check_all_written(const float* data, int64_t n) {
    const std::vector<int64_t> missing = unwritten(data, n);
    check_result result;
    result.passed = missing.empty();
    if (!result.passed) result.message = "elements never written: " + describe_unwritten(missing);
    return result;
}

}  // namespace llmrt::testing

// Reports a failed check_result through doctest at the caller's file and line: `fail_at` is
// DOCTEST_ADD_FAIL_CHECK_AT (go on) or DOCTEST_ADD_FAIL_AT (end the test case).
#define LLMRT_DETAIL_REPORT(fail_at, call, text)                                             \
    do {                                                                                     \
        const ::llmrt::testing::check_result llmrt_check_result_ = (call);                   \
        if (!llmrt_check_result_.passed)                                                     \
            fail_at(__FILE__, __LINE__, (std::string(text) + ": " + llmrt_check_result_.message)); \
    } while (false)

#define LLMRT_CHECK_NMSE(out, ref, n, bound)                                                        \
    LLMRT_DETAIL_REPORT(DOCTEST_ADD_FAIL_CHECK_AT, ::llmrt::testing::check_nmse(out, ref, n, bound), \
                        "LLMRT_CHECK_NMSE(" #out ", " #ref ", " #n ", " #bound ")")
#define LLMRT_REQUIRE_NMSE(out, ref, n, bound)                                                \
    LLMRT_DETAIL_REPORT(DOCTEST_ADD_FAIL_AT, ::llmrt::testing::check_nmse(out, ref, n, bound), \
                        "LLMRT_REQUIRE_NMSE(" #out ", " #ref ", " #n ", " #bound ")")
#define LLMRT_CHECK_MAX_ABS(out, ref, n, bound)                                                        \
    LLMRT_DETAIL_REPORT(DOCTEST_ADD_FAIL_CHECK_AT, ::llmrt::testing::check_max_abs(out, ref, n, bound), \
                        "LLMRT_CHECK_MAX_ABS(" #out ", " #ref ", " #n ", " #bound ")")
#define LLMRT_CHECK_ALL_WRITTEN(data, n)                                                        \
    LLMRT_DETAIL_REPORT(DOCTEST_ADD_FAIL_CHECK_AT, ::llmrt::testing::check_all_written(data, n), \
                        "LLMRT_CHECK_ALL_WRITTEN(" #data ", " #n ")")
#define LLMRT_REQUIRE_ALL_WRITTEN(data, n)                                                \
    LLMRT_DETAIL_REPORT(DOCTEST_ADD_FAIL_AT, ::llmrt::testing::check_all_written(data, n), \
                        "LLMRT_REQUIRE_ALL_WRITTEN(" #data ", " #n ")")
