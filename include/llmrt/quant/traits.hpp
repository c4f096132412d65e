// The contract every quant block type fulfils, and the traits read from it.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "llmrt/core/config.hpp"
#include "llmrt/core/qtype.hpp"

namespace llmrt {

// A quant block type B is a trivially copyable struct whose bytes are exactly ggml's block,
// with three static members:
//   B::id          the qtype (GGUF/ggml type id)
//   B::block_size  elements per block
//   B::name        the type's name as ggml spells it ("q4_K")
//   B::round_trip_rmse  the accuracy of the reference quantizer: quantize then dequantize unit
//                  Gaussian data (tests/quant/test_api.cpp's 16384 values) and take the RMS of
//                  the error over the RMS of the data, measured (q4_K: 0.0711). A figure for
//                  users choosing a type; the test holds every codec within 10% of it.
// and, for weight types, `using vec_dot_type = ...` naming the activation block that ggml's
// CPU dot product pairs it with. Its header defines dequantize_block(const B&, float*) and
// quantize_row(const float*, B*, int64_t).
template <class B>
concept quant_block = std::is_trivially_copyable_v<B> && requires {
    { B::id } -> std::convertible_to<qtype>;
    { B::block_size } -> std::convertible_to<int64_t>;
    { B::name } -> std::convertible_to<const char*>;
    { B::round_trip_rmse } -> std::convertible_to<double>;
};

template <class B>
concept weight_block = quant_block<B> && requires { typename B::vec_dot_type; };

template <class B>
struct quant_traits {
    static_assert(quant_block<B>,
                  "llmrt::quant_traits<B>: B is not an llmrt quant block; it needs static members id, "
                  "block_size, name and round_trip_rmse (see include/llmrt/quant/traits.hpp)");
    static constexpr qtype id = B::id;
    static constexpr int64_t block_size = B::block_size;
    static constexpr std::size_t type_size = sizeof(B);
    static constexpr const char* name = B::name;
    static constexpr double bits_per_weight = 8.0 * double(sizeof(B)) / double(B::block_size);
};

}  // namespace llmrt
