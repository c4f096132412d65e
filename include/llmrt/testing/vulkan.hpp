// Host helpers for testing Vulkan kernels: poison an output buffer before the dispatch, then copy
// it back and compare it with the CPU reference in one call.
//
//   llmrt::vulkan::buffer y(ctx, n * sizeof(float));
//   llmrt::testing::poison_device(y);
//   kernels.run(..., y.span());
//   auto report = llmrt::testing::compare_device(y, ref);   // reads back n = ref.size() floats
//   CHECK_MESSAGE(report.complete(), report.describe(ref.data()));
//   CHECK(report.nmse < 5e-4);
//
// Needs the llmrt::vulkan CMake target. Failures raise llmrt::error.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/testing/poison.hpp"
#include "llmrt/testing/readback.hpp"
#include "llmrt/vulkan/buffer.hpp"

namespace llmrt::testing {

// Fills every word of the buffer with poison_bits, so a float the kernel never writes stays poison.
inline void poison_device(vulkan::buffer& buffer) { buffer.fill(poison_bits); }

// Copies n floats from byte `offset` of the buffer to the host.
inline std::vector<float> copy_to_host(const vulkan::buffer& buffer, int64_t n, std::size_t offset = 0) {
    check(n >= 0, errc::invalid_argument,
          [&] { return "testing::copy_to_host: negative element count " + std::to_string(n); });
    return buffer.download<float>(std::size_t(n), offset);
}

// Copies n floats back from byte `offset` of the buffer and compares them with the host
// reference ref: the error measures, the unwritten (still poisoned) indices and the host copy.
inline readback_report compare_device(const vulkan::buffer& buffer, const float* ref, int64_t n, std::size_t offset = 0) {
    check(n == 0 || ref != nullptr, errc::invalid_argument, "testing::compare_device: null reference");
    return compare_readback(copy_to_host(buffer, n, offset), ref, n);
}

// The same, for a reference held in a vector: ref.size() floats.
inline readback_report compare_device(const vulkan::buffer& buffer, const std::vector<float>& ref, std::size_t offset = 0) {
    return compare_device(buffer, ref.data(), int64_t(ref.size()), offset);
}

}  // namespace llmrt::testing
