// Element-wise graph ops on Vulkan (shaders/ops/elementwise.comp), on `cols` columns of ne0 floats:
//   mul     y = a ⊙ b          add     y = a + b      (b one column for all when broadcast_b)
//   silu    y = a · σ(a)       swiglu  y = silu(a) ⊙ b
//   swiglu_oai  g = min(a, limit), u = clamp(b, ±limit), y = g·σ(alpha·g)·(u + 1)   (gpt-oss)
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <string>

#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::ops {

enum class elementwise_op : uint32_t { mul = 0, add = 1, silu = 2, swiglu = 3, swiglu_oai = 4 };  // OP_* of the shader

namespace detail {
struct elementwise_push {
    uint64_t a = 0, b = 0, y = 0;
    uint32_t ne0 = 0, op = 0, broadcast_b = 0;
    float alpha = 0.0f, limit = 0.0f;  // swiglu_oai
    uint32_t unused = 0;
};
static_assert(sizeof(elementwise_push) == 48, "elementwise_push must match shaders/ops/elementwise.comp");
}  // namespace detail

// b is ignored for silu (pass a); alpha and limit are swiglu_oai's only.
inline void record_elementwise(kernels& k, recorder& r, elementwise_op op, const operand& a, const operand& b,
                               const operand& y, int64_t ne0, int64_t cols, bool broadcast_b, float alpha = 0.0f,
                               float limit = 0.0f) {
    const char* name = "vulkan::ops::elementwise";
    check(ne0 >= 1 && cols >= 1, errc::shape_mismatch, [&] {
        return std::string(name) + ": " + std::to_string(cols) + " columns of " + std::to_string(ne0) + " values";
    });
    const uint64_t bytes = uint64_t(ne0 * cols) * 4;
    require_bytes(a, bytes, name, "a");
    require_bytes(y, bytes, name, "y");
    const bool binary = op != elementwise_op::silu;
    if (binary) require_bytes(b, broadcast_b ? uint64_t(ne0) * 4 : bytes, name, "b");
    const detail::elementwise_push push{a.address, binary ? b.address : a.address, y.address, uint32_t(ne0),
                                        uint32_t(op), broadcast_b ? 1u : 0u, alpha, limit, 0};
    const grid g = make_grid(k.device().info(), (uint64_t(ne0) + workgroup_size - 1) / workgroup_size, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": columns of " + std::to_string(ne0) + " values are too long"; });
    const operand a_used = a.part(0, bytes), y_used = y.part(0, bytes);
    if (binary) {
        const operand b_used = b.part(0, broadcast_b ? uint64_t(ne0) * 4 : bytes);
        r.access({a_used, b_used}, {y_used});
    } else {
        r.access({a_used}, {y_used});
    }
    r.dispatch(k.pipeline("elementwise", sizeof push), push, g);
}

}  // namespace llmrt::vulkan::ops
