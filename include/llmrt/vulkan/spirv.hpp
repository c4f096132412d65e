// An embedded SPIR-V module, as llmrt_add_shader (cmake/llmrt_shaders.cmake) generates it, and
// the one thing the host reads back from one: the default value of a specialization constant,
// which is how a shader tells the host facts of its block include (slice size, block bytes)
// without the host restating them.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>

namespace llmrt::vulkan {

struct spirv_blob {
    std::string_view name;               // "mmvq_q4_K", "mmvq_id_q4_K", "quantize_q8_1", ...
    std::span<const std::uint32_t> words;
};

// The default of the 32-bit specialization constant with constant_id `spec_id`, or nullopt.
inline std::optional<uint32_t> spec_constant_default(const spirv_blob& blob, uint32_t spec_id) {
    constexpr uint32_t op_spec_constant = 50, op_decorate = 71, decoration_spec_id = 1;
    std::map<uint32_t, uint32_t> ids;  // result id -> SpecId
    std::map<uint32_t, uint32_t> defaults;
    const auto words = blob.words;
    if (words.size() <= 5 || words[0] != 0x07230203u) return std::nullopt;
    for (std::size_t at = 5; at < words.size();) {
        const uint32_t count = words[at] >> 16, opcode = words[at] & 0xffffu;
        if (count == 0 || at + count > words.size()) return std::nullopt;
        if (opcode == op_decorate && count >= 4 && words[at + 2] == decoration_spec_id) ids[words[at + 1]] = words[at + 3];
        if (opcode == op_spec_constant && count >= 4) defaults[words[at + 2]] = words[at + 3];
        at += count;
    }
    for (const auto& [id, sid] : ids)
        if (sid == spec_id && defaults.count(id)) return defaults.at(id);
    return std::nullopt;
}

}  // namespace llmrt::vulkan
