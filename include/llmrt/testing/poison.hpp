// Poisoning output buffers, to catch elements a kernel never wrote.
//
// Fill the output with poison_bits before the kernel runs; afterwards every element still holding
// exactly those bits was skipped. The pattern is a quiet NaN with a payload no arithmetic produces
// (arithmetic NaNs carry the canonical payload 0x7fc00000 or propagate an input's payload), so a
// written NaN is not mistaken for a skipped element, and a skipped one fails any NaN check too.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"

namespace llmrt::testing {

inline constexpr uint32_t poison_bits = 0x7fa5a5a5u;  // a NaN no kernel produces by arithmetic

namespace detail {
inline void check_poison_buffer(const void* data, int64_t n, const char* operation) {
    check(n >= 0, errc::invalid_argument,
          [&] { return std::string(operation) + ": negative element count " + std::to_string(n); });
    check(n == 0 || data != nullptr, errc::invalid_argument,
          [&] { return std::string(operation) + ": null buffer for " + std::to_string(n) + " elements"; });
}
}  // namespace detail

// Fills n floats with poison_bits.
inline void poison(float* data, int64_t n) {
    detail::check_poison_buffer(data, n, "testing::poison");
    if (data == nullptr) return;  // n == 0; saying so also keeps g++'s -Warray-bounds quiet under ASan
    for (int64_t i = 0; i < n; ++i) std::memcpy(data + i, &poison_bits, sizeof poison_bits);
}

// True when v holds exactly poison_bits.
inline bool is_poison(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits == poison_bits;
}

// The indices, ascending, of the elements still holding poison_bits.
inline std::vector<int64_t> unwritten(const float* data, int64_t n) {
    detail::check_poison_buffer(data, n, "testing::unwritten");
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < n; ++i)
        if (is_poison(data[i])) indices.push_back(i);
    return indices;
}

// "[3, 17, 18, ...] (N unwritten)": at most `shown` indices, for failure messages.
inline std::string describe_unwritten(const std::vector<int64_t>& indices, std::size_t shown = 16) {
    std::string text = "[";
    for (std::size_t j = 0; j < indices.size() && j < shown; ++j) text += (j ? ", " : "") + std::to_string(indices[j]);
    if (indices.size() > shown) text += ", ...";
    return text + "] (" + std::to_string(indices.size()) + " unwritten)";
}

}  // namespace llmrt::testing
