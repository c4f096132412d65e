// An embedded SPIR-V module: what llmrt_add_shader (cmake/llmrt_shaders.cmake) generates.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace llmrt::vulkan {

struct spirv_blob {
    std::string_view name;               // "mmvq_q4_K", "mmvq_id_q4_K", "quantize_q8_1", ...
    std::span<const std::uint32_t> words;
};

}  // namespace llmrt::vulkan
