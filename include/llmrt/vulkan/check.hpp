// Vulkan failures as llmrt::error: LLMRT_VK_CHECK(expr) evaluates expr (a Vulkan-Hpp call) and
// turns a vk::SystemError, or a returned vk::Result other than eSuccess, into llmrt::error naming
// the expression, the file and line, and the Vulkan result.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <string>
#include <type_traits>
#include <utility>

#include <vulkan/vulkan_raii.hpp>

#include "llmrt/core/error.hpp"

namespace llmrt::vulkan::detail {

inline errc code_of(vk::Result result) {
    return result == vk::Result::eErrorOutOfDeviceMemory || result == vk::Result::eErrorOutOfHostMemory
               ? errc::out_of_memory
               : errc::device_error;
}

[[noreturn]] inline void fail(vk::Result result, const char* expression, const char* file, int line) {
    throw error(code_of(result), std::string(expression) + " failed at " + file + ":" + std::to_string(line) + ": " +
                                     vk::to_string(result));
}

template <class Call>
decltype(auto) vk_check(Call&& call, const char* expression, const char* file, int line) {
    try {
        if constexpr (std::is_same_v<decltype(call()), vk::Result>) {
            const vk::Result result = call();
            if (result != vk::Result::eSuccess) fail(result, expression, file, line);
            return result;
        } else {
            return call();
        }
    } catch (const vk::SystemError& e) {
        fail(static_cast<vk::Result>(e.code().value()), expression, file, line);
    }
}

}  // namespace llmrt::vulkan::detail

#define LLMRT_VK_CHECK(...) \
    ::llmrt::vulkan::detail::vk_check([&]() -> decltype(auto) { return (__VA_ARGS__); }, #__VA_ARGS__, __FILE__, __LINE__)
