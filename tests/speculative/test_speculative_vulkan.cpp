// Speculative decoding end to end with the llama model on the Vulkan backend: the CPU program's
// tests (speculative_end_to_end.hpp) applied to a Vulkan case. Like tests/vulkan, it runs on any
// Vulkan 1.3 device (lavapipe included); without one every test skips with a message, except
// under CI (CI=true), where lavapipe is installed and a missing device fails. The Khronos
// validation layer is switched on when installed, and each test fails on any message it reports.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <llmrt/vulkan/backend.hpp>

#include "../vulkan/vulkan_test_device.hpp"
#include "speculative_end_to_end.hpp"

namespace llmrt::test {

// What tests/vulkan's CMake sets for its programs, set here before the device is made: a writable
// XDG_RUNTIME_DIR for the loader, and the validation layer when it is installed.
inline void prepare_vulkan_environment() {
    if (!std::getenv("XDG_RUNTIME_DIR")) {
        const auto dir = std::filesystem::temp_directory_path() / "llmrt-xdg-runtime";
        std::filesystem::create_directories(dir);
        setenv("XDG_RUNTIME_DIR", dir.c_str(), 0);
    }
    for (const char* layers : {"/usr/share/vulkan/explicit_layer.d", "/usr/local/share/vulkan/explicit_layer.d",
                               "/etc/vulkan/explicit_layer.d"})
        if (std::filesystem::exists(std::filesystem::path(layers) / "VkLayer_khronos_validation.json"))
            setenv("VK_INSTANCE_LAYERS", "VK_LAYER_KHRONOS_validation", 0);
}

struct vulkan_backend_case {
    // The Vulkan backend on the program's device; when a test is done with it, it checks that the
    // loader and the layers reported nothing while the test ran.
    struct backend_type : vulkan::backend {
        explicit backend_type(vulkan::context& ctx) : vulkan::backend(ctx), ctx_(&ctx) {}
        ~backend_type() { testing::check_no_vulkan_messages(*ctx_); }
        backend_type(const backend_type&) = delete;
        backend_type& operator=(const backend_type&) = delete;

    private:
        vulkan::context* ctx_;
    };
    static constexpr const char* name = "vulkan";
    static std::unique_ptr<backend_type> make() {
        prepare_vulkan_environment();
        auto& device = testing::test_device();
        if (!device.context) {
            if (testing::in_ci()) FAIL("no Vulkan device under CI: " << device.why_none);
            return nullptr;
        }
        return std::make_unique<backend_type>(*device.context);
    }
};

}  // namespace llmrt::test

LLMRT_SPECULATIVE_END_TO_END_TESTS(llmrt::test::vulkan_backend_case);
