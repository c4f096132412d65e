// The device a Vulkan test program shares, and the rules around it:
//   * no usable device: the test is skipped with a message, except under CI (CI=true), where
//     lavapipe is installed and a missing device is a failure;
//   * every test ends by checking that the loader and the layers (the Khronos validation layer
//     when VK_INSTANCE_LAYERS names it) reported nothing while it ran.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "llmrt/vulkan/context.hpp"

namespace llmrt::testing {

inline bool in_ci() {
    const char* ci = std::getenv("CI");
    return ci && (std::string(ci) == "true" || std::string(ci) == "1");
}

struct shared_device {
    std::unique_ptr<vulkan::context> context;
    std::string why_none;
};

inline shared_device& test_device() {
    static shared_device device = [] {
        shared_device d;
        try {
            d.context = std::make_unique<vulkan::context>();
        } catch (const std::exception& e) {
            d.why_none = e.what();
        }
        return d;
    }();
    return device;
}

// Fails the test with everything recorded, then forgets it.
inline void check_no_vulkan_messages(vulkan::context& ctx) {
    const auto messages = ctx.messages();
    std::string text;
    for (const auto& m : messages) text += "\n  " + m;
    CHECK_MESSAGE(messages.empty(), "the Vulkan loader or layers reported:" << text);
    ctx.clear_messages();
}

// Checks, when the test case ends, that nothing was reported while it ran.
struct vulkan_message_guard {
    vulkan::context& ctx;
    explicit vulkan_message_guard(vulkan::context& c) : ctx(c) {}
    ~vulkan_message_guard() { check_no_vulkan_messages(ctx); }
    vulkan_message_guard(const vulkan_message_guard&) = delete;
    vulkan_message_guard& operator=(const vulkan_message_guard&) = delete;
};

}  // namespace llmrt::testing

// Declares `ctx` (llmrt::vulkan::context&) or leaves the test: skipped without a device, failed
// under CI.
#define LLMRT_VULKAN_TEST_DEVICE(ctx)                                                                     \
    auto& llmrt_device_ = ::llmrt::testing::test_device();                                                \
    if (!llmrt_device_.context) {                                                                          \
        if (::llmrt::testing::in_ci()) FAIL("no Vulkan device under CI: " << llmrt_device_.why_none);       \
        MESSAGE("skipped, no usable Vulkan device: " << llmrt_device_.why_none);                           \
        return;                                                                                            \
    }                                                                                                      \
    ::llmrt::vulkan::context& ctx = *llmrt_device_.context;                                                \
    const ::llmrt::testing::vulkan_message_guard llmrt_message_guard_(ctx)
