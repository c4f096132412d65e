// argmax on Vulkan (shaders/ops/argmax.comp): the first index of each column's largest value,
// ranked as the CPU reference's scan ranks them (NaN included), one work-group per column.
#pragma once

#include <cstdint>
#include <string>

#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::ops {

namespace detail {
struct argmax_push {
    uint64_t x, y;
    uint32_t ne0, unused;
};
static_assert(sizeof(argmax_push) == 24, "argmax_push must match shaders/ops/argmax.comp");
}  // namespace detail

// x: cols columns of ne0 floats; y: cols int32.
inline void record_argmax(kernels& k, recorder& r, const operand& x, const operand& y, int64_t ne0, int64_t cols) {
    const char* name = "vulkan::ops::argmax";
    check(ne0 >= 1 && cols >= 1 && ne0 <= int64_t(INT32_MAX), errc::shape_mismatch, [&] {
        return std::string(name) + ": " + std::to_string(cols) + " columns of " + std::to_string(ne0) + " values";
    });
    const uint64_t bytes = uint64_t(ne0 * cols) * 4;
    require_bytes(x, bytes, name, "x");
    require_bytes(y, uint64_t(cols) * 4, name, "y");
    const detail::argmax_push push{x.address, y.address, uint32_t(ne0), 0};
    const grid g = make_grid(k.device().info(), uint64_t(cols), 1, name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": too many columns: " + std::to_string(cols); });
    r.access({x.part(0, bytes)}, {y.part(0, uint64_t(cols) * 4)});
    r.dispatch(k.pipeline("argmax", sizeof push), push, g);
}

}  // namespace llmrt::vulkan::ops
