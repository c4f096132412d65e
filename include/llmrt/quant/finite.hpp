// The input checks of the row functions: whole blocks, and finite values for the quantizers.
//
// ggml's reference quantizers convert x·(1/d) to an integer without looking at it: a NaN or
// ±Inf input (or one that turns the scale into Inf) makes that conversion undefined behaviour
// in C++, and in practice gives whatever the instruction set does with it. llmrt's quantizers
// accept finite values only and throw an invalid_argument error naming the first value that is
// not, so such a row is reported instead of being silently quantized to garbage.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "llmrt/core/error.hpp"

namespace llmrt {

// quantize_row and vec_dot take whole blocks: n a non-negative multiple of the block size (a
// shorter count would leave the tail unwritten or unread, a negative one wrap a size).
inline void check_whole_blocks(int64_t n, int64_t block_size, const char* type_name, const char* operation) {
    check(n >= 0 && n % block_size == 0, errc::invalid_argument, [&] {
        return std::string(type_name) + " " + operation + ": " + std::to_string(n) +
               " elements is not a non-negative multiple of the block size " + std::to_string(block_size);
    });
}

// True when none of the n values is NaN or ±Inf, i.e. none has all exponent bits set. Integer
// operations with no early exit, so that g++ and clang vectorize it even for plain SSE2 (a float
// comparison is not vectorized, as it may raise the invalid flag): adding 2^23 to the exponent
// field carries into the sign bit exactly when that field is all ones. The quantizers call it
// once per block, next to their amax scan.
inline bool all_finite(const float* x, int n) {
    uint32_t carries = 0;
    for (int i = 0; i < n; ++i) {
        uint32_t bits;
        std::memcpy(&bits, x + i, sizeof bits);
        carries |= (bits & 0x7f800000u) + 0x00800000u;
    }
    return (carries & 0x80000000u) == 0;
}

namespace detail {
[[noreturn]] inline void throw_non_finite(const float* block, int n, int64_t block_index, const char* type_name) {
    int i = 0;
    while (i < n - 1 && std::fabs(block[i]) <= FLT_MAX) ++i;
    const float v = block[i];
    const std::string value = std::isnan(v) ? (std::signbit(v) ? "-nan" : "nan") : (v < 0 ? "-inf" : "+inf");
    throw error(errc::invalid_argument,
                std::string(type_name) + " quantize_row: element " + std::to_string(block_index * n + i) +
                    " (block " + std::to_string(block_index) + ", index " + std::to_string(i) + " in the block) is " +
                    value + "; quantizers accept finite values only");
}
}  // namespace detail

// Throws unless the n values of block `block_index` (of n values each, counted from the row's
// start) are all finite.
inline void check_finite_block(const float* block, int n, int64_t block_index, const char* type_name) {
    if (!all_finite(block, n)) [[unlikely]]
        detail::throw_non_finite(block, n, block_index, type_name);
}

}  // namespace llmrt
