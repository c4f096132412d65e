// Row-level codecs built on each type's block functions, and the runtime-typed public API.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt {

template <quant_block B>
void dequantize_row(const B* x, float* y, int64_t n) {
    for (int64_t ib = 0; ib < n / B::block_size; ++ib) dequantize_block(x[ib], y + ib * B::block_size);
}

// Elements per block of t.
inline int64_t block_size(qtype t) {
    return dispatch(t, "block_size", [](auto tag) { return decltype(tag)::type::block_size; });
}

// Bytes per block of t.
inline std::size_t type_size(qtype t) {
    return dispatch(t, "type_size", [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

namespace detail {
inline void check_row_length(qtype t, int64_t n, const char* operation) {
    const int64_t bs = block_size(t);
    check(n >= 0 && n % bs == 0, errc::invalid_argument, [&] {
        return std::string(operation) + ": " + std::to_string(n) + " elements of " + name(t) +
               (n < 0 ? " is negative" : " is not a multiple of its block size " + std::to_string(bs));
    });
}
inline void check_pointers(const void* a, const void* b, int64_t n, const char* operation) {
    check(n == 0 || (a != nullptr && b != nullptr), errc::invalid_argument,
          [&] { return std::string(operation) + ": null pointer for " + std::to_string(n) + " elements"; });
}
}  // namespace detail

// Bytes that n elements of t take; n must be a non-negative multiple of t's block size, and the
// bytes must fit in int64_t (offsets and sizes are added and compared as int64_t further on;
// unchecked, f32's 4·2^62 would wrap to 0 and a size check downstream would pass).
inline std::size_t row_size(qtype t, int64_t n) {
    detail::check_row_length(t, n, "row_size");
    const int64_t blocks = n / block_size(t);
    int64_t bytes = 0;
    check(!__builtin_mul_overflow(blocks, int64_t(type_size(t)), &bytes), errc::invalid_argument, [&] {
        return "row_size: " + std::to_string(n) + " elements of " + name(t) + " take " + std::to_string(blocks) +
               " blocks of " + std::to_string(type_size(t)) + " bytes, more than 2^63 - 1 bytes";
    });
    return std::size_t(bytes);
}

// Quantizes n floats into t's blocks, byte-identical to ggml's reference quantizer.
inline void quantize(qtype t, const float* src, void* dst, int64_t n) {
    detail::check_row_length(t, n, "quantize");
    detail::check_pointers(src, dst, n, "quantize");
    dispatch(t, "quantize", [&](auto tag) {
        using B = typename decltype(tag)::type;
        quantize_row(src, static_cast<B*>(dst), n);
    });
}

// Dequantizes n elements of t into floats, bit-identical to ggml's to_float.
inline void dequantize(qtype t, const void* src, float* dst, int64_t n) {
    detail::check_row_length(t, n, "dequantize");
    detail::check_pointers(src, dst, n, "dequantize");
    dispatch(t, "dequantize", [&](auto tag) {
        using B = typename decltype(tag)::type;
        dequantize_row(static_cast<const B*>(src), dst, n);
    });
}

}  // namespace llmrt
