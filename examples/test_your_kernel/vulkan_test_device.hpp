// The Vulkan device the tests of this program share, and two rules around it:
//   * no usable Vulkan 1.3 device: a test passes with a "skipped" message, except where the
//     environment says CI=true (a CI machine that installed lavapipe), where it fails;
//   * a test fails when the loader or the layers reported anything while it ran (run with
//     VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation to have every dispatch validated).
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include <llmrt/vulkan/context.hpp>

namespace my_kernels::test {

struct shared_device {
    std::unique_ptr<llmrt::vulkan::context> context;
    std::string why_none;  // the reason there is none
};

inline shared_device& vulkan_device() {
    static shared_device device = [] {
        shared_device d;
        try {
            d.context = std::make_unique<llmrt::vulkan::context>();
        } catch (const std::exception& e) {
            d.why_none = e.what();
        }
        return d;
    }();
    return device;
}

inline bool in_ci() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

// Checks, when the test case ends, that the loader and the layers reported nothing during it.
struct no_vulkan_messages {
    llmrt::vulkan::context& ctx;
    explicit no_vulkan_messages(llmrt::vulkan::context& c) : ctx(c) { ctx.clear_messages(); }
    ~no_vulkan_messages() {
        std::string text;
        for (const std::string& m : ctx.messages()) text += "\n  " + m;
        CHECK_MESSAGE(text.empty(), "the Vulkan loader or layers reported:" << text);
        ctx.clear_messages();
    }
    no_vulkan_messages(const no_vulkan_messages&) = delete;
    no_vulkan_messages& operator=(const no_vulkan_messages&) = delete;
};

}  // namespace my_kernels::test

// Declares `ctx` (llmrt::vulkan::context&), or ends the test case: skipped without a device,
// failed under CI.
#define NEEDS_VULKAN_DEVICE(ctx)                                                                    \
    auto& shared_device_ = ::my_kernels::test::vulkan_device();                                     \
    if (!shared_device_.context) {                                                                  \
        if (::my_kernels::test::in_ci()) FAIL("no Vulkan device under CI: " << shared_device_.why_none); \
        MESSAGE("skipped: no usable Vulkan device (" << shared_device_.why_none << ")");            \
        return;                                                                                     \
    }                                                                                               \
    ::llmrt::vulkan::context& ctx = *shared_device_.context;                                        \
    const ::my_kernels::test::no_vulkan_messages message_check_(ctx)
