// Rotary position embedding on Vulkan (shaders/ops/rope.comp), normal or NeoX pair order, one
// invocation per element, with linear scaling (freq_scale), optional frequency factors and YaRN.
// theta_scale = base^(−2/n_rot) and YaRN's magnitude are computed here exactly as the CPU
// reference computes them, and the shader steps θ by the same float multiplications.
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
// YaRN's terms as llmrt_rope_yarn (shaders/ops/ops_common.glsl) takes them.
struct rope_yarn {
    float ext_factor = 0.0f;
    float mscale = 1.0f;     // cos and sin's magnitude
    float corr_low = 0.0f;
    float corr_span = 1.0f;  // max(0.001, corr_high − corr_low)
};

// In cpu::rope_cos_sin's float operations, so the shader scales by the reference's bits.
inline rope_yarn yarn_of(const graph::rope_params& p) {
    rope_yarn y;
    y.ext_factor = p.ext_factor;
    y.mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) y.mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    y.corr_low = p.corr_low;
    y.corr_span = std::fmax(0.001f, p.corr_high - p.corr_low);
    return y;
}

struct rope_push {
    uint64_t x = 0, y = 0, positions = 0;
    uint32_t ne0 = 0, head_dim = 0, n_rot = 0, neox = 0;
    float theta_scale = 0.0f, freq_scale = 0.0f;
    uint64_t factors = 0;
    rope_yarn yarn;
};
static_assert(sizeof(rope_push) == 72, "rope_push must match shaders/ops/rope.comp");
}  // namespace detail

// factors: n_rot/2 floats, or an empty operand (every factor 1).
inline void record_rope(kernels& k, recorder& r, const operand& x, const operand& positions, const operand& y,
                        int64_t cols, const graph::rope_params& p, const operand& factors = {}) {
    const char* name = "vulkan::ops::rope";
    const int64_t ne0 = int64_t(p.n_head) * p.head_dim;
    check(cols >= 1 && p.n_head >= 1 && p.head_dim >= 2 && p.n_rot >= 2 && p.n_rot <= p.head_dim && p.n_rot % 2 == 0 &&
              p.freq_base > 0.0f && p.freq_scale > 0.0f && std::isfinite(p.ext_factor) && std::isfinite(p.attn_factor) &&
              std::isfinite(p.corr_low) && std::isfinite(p.corr_high),
          errc::shape_mismatch, [&] {
              return std::string(name) + ": n_head " + std::to_string(p.n_head) + ", head_dim " +
                     std::to_string(p.head_dim) + ", n_rot " + std::to_string(p.n_rot) +
                     ": need an even n_rot <= head_dim, freq_base > 0, freq_scale > 0 and finite YaRN terms";
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
                                 p.freq_scale, factors.bytes ? factors.address : 0,
                                 detail::yarn_of(p)};
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
