// Rotary position embedding on Vulkan (shaders/ops/rope.comp), normal or NeoX pair order, one
// invocation per element, with linear scaling (freq_scale) and optional frequency factors.
// theta_scale = base^(−2/n_rot) is computed here exactly as the CPU reference computes it, and
// the shader steps θ by the same float multiplications.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "llmrt/graph/node.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::ops {

namespace detail {
struct rope_push {
    uint64_t x, y, positions;
    uint32_t ne0, head_dim, n_rot, neox;
    float theta_scale, freq_scale;
    uint64_t factors;
};
static_assert(sizeof(rope_push) == 56, "rope_push must match shaders/ops/rope.comp");
}  // namespace detail

// factors: n_rot/2 floats, or an empty operand (every factor 1).
inline void record_rope(kernels& k, recorder& r, const operand& x, const operand& positions, const operand& y,
                        int64_t cols, const graph::rope_params& p, const operand& factors = {}) {
    const char* name = "vulkan::ops::rope";
    const int64_t ne0 = int64_t(p.n_head) * p.head_dim;
    check(cols >= 1 && p.n_head >= 1 && p.head_dim >= 2 && p.n_rot >= 2 && p.n_rot <= p.head_dim && p.n_rot % 2 == 0 &&
              p.freq_base > 0.0f && p.freq_scale > 0.0f,
          errc::shape_mismatch, [&] {
              return std::string(name) + ": n_head " + std::to_string(p.n_head) + ", head_dim " +
                     std::to_string(p.head_dim) + ", n_rot " + std::to_string(p.n_rot) +
                     ": need an even n_rot <= head_dim, freq_base > 0 and freq_scale > 0";
          });
    if (factors.bytes) require_bytes(factors, uint64_t(p.n_rot / 2) * 4, name, "factors");
    const uint64_t bytes = uint64_t(ne0 * cols) * 4;
    require_bytes(x, bytes, name, "x");
    require_bytes(y, bytes, name, "y");
    require_bytes(positions, uint64_t(cols) * 4, name, "positions");
    const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
    const detail::rope_push push{x.address,       y.address,
                                 positions.address, uint32_t(ne0),
                                 uint32_t(p.head_dim), uint32_t(p.n_rot),
                                 p.order == graph::rope_order::neox ? 1u : 0u, theta_scale,
                                 p.freq_scale, factors.bytes ? factors.address : 0};
    const grid g = make_grid(k.device().info(), (uint64_t(ne0) + workgroup_size - 1) / workgroup_size, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": columns of " + std::to_string(ne0) + " values are too long"; });
    if (factors.bytes)
        r.access({x.part(0, bytes), positions.part(0, uint64_t(cols) * 4), factors.part(0, uint64_t(p.n_rot / 2) * 4)},
                 {y.part(0, bytes)});
    else
        r.access({x.part(0, bytes), positions.part(0, uint64_t(cols) * 4)}, {y.part(0, bytes)});
    r.dispatch(k.pipeline("rope", sizeof push), push, g);
}

}  // namespace llmrt::vulkan::ops
