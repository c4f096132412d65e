// The constants of the GGUF v3 container format (ggml's docs/gguf.md), shared by reader and writer.
//
//   header     "GGUF" | u32 version | u64 tensor_count | u64 kv_count
//   metadata   kv_count x (string key | u32 value_type | value)
//   tensors    tensor_count x (string name | u32 n_dims | u64 ne[n_dims] | u32 ggml type | u64 offset)
//   padding    zeros up to a multiple of general.alignment (u32, default 32)
//   data       each tensor at data start + offset; offsets are multiples of the alignment
//
// A string is a u64 byte count and the bytes (no terminator); an array is a u32 element type,
// a u64 count and the elements. Everything is little-endian.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>

namespace llmrt::gguf {

static_assert(std::endian::native == std::endian::little,
              "llmrt::gguf reads and writes GGUF's little-endian layout by copying bytes, so it needs a "
              "little-endian host");

// "GGUF" as it lies in the file.
inline constexpr char magic[4] = {'G', 'G', 'U', 'F'};

// The version the writer produces. Version 2 has the same layout and is read as well.
inline constexpr uint32_t version = 3;
inline constexpr uint32_t oldest_readable_version = 2;

// Data alignment when the file has no general.alignment key.
inline constexpr uint32_t default_alignment = 32;
inline constexpr const char* alignment_key = "general.alignment";

// ggml tensors have at most four dimensions.
inline constexpr uint32_t max_dims = 4;

// How deep arrays of arrays may nest (an array of scalars is depth 1). The spec sets no limit;
// a bound keeps the reader's recursion, and so its stack, bounded on hostile input.
inline constexpr int max_array_depth = 8;

// Fewest bytes a key/value pair and a tensor info can take: they bound the counts a header may
// claim before anything is allocated for them.
inline constexpr std::size_t min_kv_bytes = 8 + 4 + 1;            // empty key, type, one-byte value
inline constexpr std::size_t min_tensor_info_bytes = 8 + 4 + 4 + 8;  // empty name, n_dims = 0, type, offset
inline constexpr std::size_t header_bytes = 4 + 4 + 8 + 8;

}  // namespace llmrt::gguf
