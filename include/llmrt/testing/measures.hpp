// Error measures for comparing a kernel's output with a reference.
//
//   nmse          = Σ (out[i] − ref[i])² / Σ ref[i]²      (accumulated in double)
//   max_abs_error = max |out[i] − ref[i]|
//   max_rel_error = max |out[i] − ref[i]| / |ref[i]|      over ref[i] ≠ 0
//   ulp_distance  = how many representable floats lie between a and b
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "llmrt/core/config.hpp"
#include "llmrt/core/error.hpp"
#include "llmrt/testing/poison.hpp"

namespace llmrt::testing {

namespace detail {
inline void check_buffers(const float* out, const float* ref, int64_t n, const char* operation) {
    check(n >= 0, errc::invalid_argument,
          [&] { return std::string(operation) + ": negative element count " + std::to_string(n); });
    check(n == 0 || (out != nullptr && ref != nullptr), errc::invalid_argument,
          [&] { return std::string(operation) + ": null buffer for " + std::to_string(n) + " elements"; });
}

// A float as text that round-trips (9 significant digits), with nan/inf spelled out.
inline std::string format_float(float v) {
    char text[48];
    std::snprintf(text, sizeof text, "%.9g", double(v));
    return text;
}

// A measure as text, 6 significant digits (measures span far below float's range).
inline std::string format_measure(double v) {
    char text[48];
    std::snprintf(text, sizeof text, "%.6g", v);
    return text;
}

// |out − ref| as the measures see it: 0 for equal infinities, +inf for any other inf or NaN pair.
inline double abs_difference(float out, float ref) {
    if (std::isnan(out) || std::isnan(ref)) return std::numeric_limits<double>::infinity();
    if (std::isinf(out) || std::isinf(ref))
        return out == ref ? 0.0 : std::numeric_limits<double>::infinity();
    return std::fabs(double(out) - double(ref));
}
}  // namespace detail

// How far apart two floats are in representable steps: 0 for equal values (and for +0 / −0),
// 1 for neighbours, growing across zero by the steps on both sides. Any NaN gives UINT32_MAX.
inline uint32_t ulp_distance(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<uint32_t>::max();
    // Maps the float bit patterns onto a monotonic integer line, −0 and +0 both at 0.
    auto ordered = [](float v) -> int64_t {
        const uint32_t bits = llmrt::bit_cast<uint32_t>(v);
        const int64_t magnitude = int64_t(bits & 0x7fffffffu);
        return (bits & 0x80000000u) ? -magnitude : magnitude;
    };
    const int64_t d = ordered(a) - ordered(b);
    const uint64_t distance = uint64_t(d < 0 ? -d : d);
    return distance > std::numeric_limits<uint32_t>::max() ? std::numeric_limits<uint32_t>::max()
                                                           : uint32_t(distance);
}

// Σ(out−ref)² / Σref² in double; 0 when both are all zero, +inf when ref is all zero and out is not.
// Any NaN, or an infinity in either buffer, makes it NaN or inf, so a bound check fails.
inline double nmse(const float* out, const float* ref, int64_t n) {
    detail::check_buffers(out, ref, n, "testing::nmse");
    double err = 0.0, norm = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double d = double(out[i]) - double(ref[i]);
        err += d * d;
        norm += double(ref[i]) * double(ref[i]);
    }
    if (norm == 0.0) return err == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
    return err / norm;
}

// Everything a failed comparison needs to say. The finite measures (nmse, max_abs_error,
// max_rel_error) cover the pairs where both values are finite; NaN and inf are counted apart.
struct error_report {
    int64_t n = 0;
    double nmse = 0.0;            // over the finite pairs; see testing::nmse
    double max_abs_error = 0.0;   // over the finite pairs
    double max_rel_error = 0.0;   // over the finite pairs with ref ≠ 0
    int64_t worst_index = -1;     // the element with the largest |out − ref| (NaN / inf count as largest); −1: none differ
    int64_t nan_count = 0;        // elements where exactly one of out, ref is NaN (a NaN in both matches)
    int64_t inf_mismatch_count = 0;  // elements where out or ref is ±inf and they are not the same inf

    // True when no element is NaN or a mismatched inf; the finite measures still need a bound.
    bool all_finite_match() const { return nan_count == 0 && inf_mismatch_count == 0; }

    // A few lines: the summary, then the `worst` elements with the largest |out − ref| as
    // "[index] got X expected Y (abs err E, U ulp)", where an element still holding poison_bits reads
    // "got unwritten (poison)". out and ref must be the buffers this report came from.
    std::string describe(const float* out, const float* ref, int worst = 5) const {
        std::string text = "n=" + std::to_string(n) + " nmse=" + detail::format_measure(nmse) +
                           " max_abs=" + detail::format_measure(max_abs_error) +
                           " max_rel=" + detail::format_measure(max_rel_error) +
                           " nan=" + std::to_string(nan_count) + " inf_mismatch=" + std::to_string(inf_mismatch_count);
        if (out == nullptr || ref == nullptr || n <= 0 || worst <= 0) return text;
        std::vector<int64_t> order;
        for (int64_t i = 0; i < n; ++i)
            if (detail::abs_difference(out[i], ref[i]) > 0.0) order.push_back(i);
        const std::size_t shown = std::min<std::size_t>(order.size(), std::size_t(worst));
        // Largest difference first; the lower index first among equals so the text is stable.
        std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(shown), order.end(), [&](int64_t a, int64_t b) {
            const double da = detail::abs_difference(out[a], ref[a]), db = detail::abs_difference(out[b], ref[b]);
            return da != db ? da > db : a < b;
        });
        if (order.empty()) return text + "\n  all elements equal";
        text += "\n  " + std::to_string(order.size()) + " element(s) differ; worst " + std::to_string(shown) + ":";
        for (std::size_t j = 0; j < shown; ++j) {
            const int64_t i = order[j];
            text += "\n  [" + std::to_string(i) + "] got " +
                    (is_poison(out[i]) ? std::string("unwritten (poison)") : detail::format_float(out[i])) + " expected " +
                    detail::format_float(ref[i]) + " (abs err " +
                    detail::format_measure(detail::abs_difference(out[i], ref[i])) + ", " +
                    std::to_string(ulp_distance(out[i], ref[i])) + " ulp)";
        }
        return text;
    }
};

// Compares out with ref element by element. A NaN in out where ref is not NaN counts in nan_count
// (so does a NaN in ref alone; a NaN in both is a match); an infinity must match in sign, else it
// counts in inf_mismatch_count.
inline error_report compare(const float* out, const float* ref, int64_t n) {
    detail::check_buffers(out, ref, n, "testing::compare");
    error_report r;
    r.n = n;
    double err = 0.0, norm = 0.0, worst = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float o = out[i], e = ref[i];
        if (std::isnan(o) || std::isnan(e)) {
            if (std::isnan(o) && std::isnan(e)) continue;
            ++r.nan_count;
        } else if (std::isinf(o) || std::isinf(e)) {
            if (o != e) ++r.inf_mismatch_count;
        } else {
            const double d = std::fabs(double(o) - double(e));
            err += d * d;
            norm += double(e) * double(e);
            r.max_abs_error = std::max(r.max_abs_error, d);
            if (e != 0.0f) r.max_rel_error = std::max(r.max_rel_error, d / std::fabs(double(e)));
        }
        const double d = detail::abs_difference(o, e);
        if (d > worst) {
            worst = d;
            r.worst_index = i;
        }
    }
    r.nmse = norm == 0.0 ? (err == 0.0 ? 0.0 : std::numeric_limits<double>::infinity()) : err / norm;
    return r;
}

}  // namespace llmrt::testing
