// The SPIR-V embedded in llmrt::vulkan (shaders/CMakeLists.txt): the quantizer and, for every
// weight type, "mmvq_<type>" and "mmvq_id_<type>". Needs the llmrt::vulkan target, whose
// generated headers hold the blobs.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <string>
#include <string_view>

#if !__has_include("llmrt/vulkan/embedded_spirv.hpp")
#error "llmrt/vulkan/shaders.hpp needs the generated SPIR-V headers: link the llmrt::vulkan CMake target"
#endif
#include "llmrt/vulkan/embedded_spirv.hpp"

#include "llmrt/core/error.hpp"
#include "llmrt/vulkan/spirv.hpp"

namespace llmrt::vulkan {

// Every embedded blob.
inline std::span<const spirv_blob> embedded_shaders() noexcept { return spirv_index::llmrt_vulkan_spirv; }

// The blob called `name`, or nullptr.
inline const spirv_blob* find_shader(std::string_view name) noexcept {
    for (const spirv_blob& blob : embedded_shaders())
        if (blob.name == name) return &blob;
    return nullptr;
}

// The blob called `name`; llmrt::error (errc::unsupported_type) when the build embedded none.
inline const spirv_blob& shader(std::string_view name) {
    const spirv_blob* blob = find_shader(name);
    check(blob != nullptr, errc::unsupported_type, [&] {
        return "vulkan: no embedded SPIR-V called '" + std::string(name) +
               "' (a weight type without shaders/include/llmrt/blocks/<type>.glsl?)";
    });
    return *blob;
}

}  // namespace llmrt::vulkan
