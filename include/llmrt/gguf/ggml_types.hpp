// ggml's tensor element types as a GGUF file names them: type id, name, block size and bytes per
// block. The reader and writer size every tensor from this table, so they handle tensors of types
// llmrt cannot decode too; which types llmrt decodes is llmrt::all_types, a separate list.
//
// The figures are ggml's: the ids from `enum ggml_type` (ggml/include/ggml.h), the names, block
// sizes and type sizes from `type_traits` (ggml/src/ggml.c), the type sizes being sizeof of the
// block structs in ggml/src/ggml-common.h; as of GGML_TYPE_COUNT = 43 (Q2_0 the newest). Ids 4, 5,
// 31..33 and 36..38 are types ggml has removed: GGUF files must not hold them, and neither
// ggml nor llmrt reads them (the table names them after their old enum names, in lower case).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace llmrt::gguf {

struct ggml_type_info {
    uint32_t id;
    const char* name;      // ggml's type_name: "q4_K", "iq2_xxs"
    uint32_t block_size;   // elements a block holds; 0 for a removed type
    uint32_t type_size;    // bytes a block takes; 0 for a removed type

    constexpr bool removed() const noexcept { return block_size == 0; }

    // Into `bytes`, the bytes of a tensor of this type with dimensions ne (ne[0] a multiple of
    // block_size, every ne >= 1): ne[0] / block_size · type_size · ne[1] · ..., every product
    // checked, the first row's included (2^62 f32 elements are 2^64 bytes, which would wrap to 0).
    // False when they overflow 64 bits.
    template <std::size_t N>
    constexpr bool tensor_bytes(const std::array<int64_t, N>& ne, uint64_t& bytes) const noexcept {
        bytes = uint64_t(ne[0]) / block_size;
        bool fits = !__builtin_mul_overflow(bytes, uint64_t(type_size), &bytes);
        for (std::size_t d = 1; d < N; ++d) fits = fits && !__builtin_mul_overflow(bytes, uint64_t(ne[d]), &bytes);
        return fits;
    }
};

// Indexed by id.
inline constexpr std::array<ggml_type_info, 43> ggml_types{{
    {0, "f32", 1, 4},
    {1, "f16", 1, 2},
    {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},
    {4, "q4_2", 0, 0},  // removed
    {5, "q4_3", 0, 0},  // removed
    {6, "q5_0", 32, 22},
    {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},
    {9, "q8_1", 32, 36},
    {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},
    {12, "q4_K", 256, 144},
    {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},
    {15, "q8_K", 256, 292},
    {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},
    {18, "iq3_xxs", 256, 98},
    {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},
    {21, "iq3_s", 256, 110},
    {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136},
    {24, "i8", 1, 1},
    {25, "i16", 1, 2},
    {26, "i32", 1, 4},
    {27, "i64", 1, 8},
    {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},
    {30, "bf16", 1, 2},
    {31, "q4_0_4_4", 0, 0},  // removed from GGUF files: ggml repacks q4_0 at run time instead
    {32, "q4_0_4_8", 0, 0},  // removed
    {33, "q4_0_8_8", 0, 0},  // removed
    {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},
    {36, "iq4_nl_4_4", 0, 0},  // removed from GGUF files: ggml repacks iq4_nl at run time instead
    {37, "iq4_nl_4_8", 0, 0},  // removed
    {38, "iq4_nl_8_8", 0, 0},  // removed
    {39, "mxfp4", 32, 17},
    {40, "nvfp4", 64, 36},
    {41, "q1_0", 128, 18},
    {42, "q2_0", 64, 18},
}};

namespace detail {
constexpr bool ggml_types_indexed_by_id() {
    for (uint32_t i = 0; i < ggml_types.size(); ++i)
        if (ggml_types[i].id != i || (ggml_types[i].block_size == 0) != (ggml_types[i].type_size == 0)) return false;
    return true;
}
static_assert(ggml_types_indexed_by_id(), "llmrt::gguf::ggml_types: entry i must describe ggml type id i");
}  // namespace detail

// The type ggml defines with this id, or nullptr for an id it never defined or has removed.
constexpr const ggml_type_info* find_ggml_type(uint32_t id) noexcept {
    return id < ggml_types.size() && !ggml_types[id].removed() ? &ggml_types[id] : nullptr;
}

// ggml's name of a type id ("iq2_xxs"), that of a removed type included; "unknown" beyond.
constexpr const char* ggml_type_name(uint32_t id) noexcept {
    return id < ggml_types.size() ? ggml_types[id].name : "unknown";
}

// An id ggml does not define, for messages: "ggml type id 4 (q4_2, removed from ggml)",
// "unknown ggml type id 57 (ggml defines 0..42)".
inline std::string describe_undefined_ggml_type(uint32_t id) {
    if (id < ggml_types.size())
        return "ggml type id " + std::to_string(id) + " (" + ggml_types[id].name + ", removed from ggml)";
    return "unknown ggml type id " + std::to_string(id) + " (ggml defines 0.." + std::to_string(ggml_types.size() - 1) +
           ")";
}

}  // namespace llmrt::gguf
