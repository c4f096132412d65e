// Compiles against llmrt::vulkan from an installed package: the backend's headers and the
// embedded SPIR-V they include must all be there. Needs no Vulkan device to run: it looks up the
// embedded shaders every weight type needs.
#include <llmrt/llmrt.hpp>
#include <llmrt/vulkan/backend.hpp>

#include <cstdio>
#include <string>

int main() {
    int missing = 0;
    llmrt::weight_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        for (const std::string variant : {"mmvq_", "mmvq_id_"})
            if (llmrt::vulkan::find_shader(variant + B::name) == nullptr) {
                std::printf("missing SPIR-V: %s%s\n", variant.c_str(), B::name);
                ++missing;
            }
    });
    std::printf("llmrt::vulkan from the installed package: %zu op shaders, %d mmvq shaders missing\n",
                llmrt::vulkan::ops::op_shaders().size(), missing);
    return missing == 0 && !llmrt::vulkan::ops::op_shaders().empty() ? 0 : 1;
}
