// Per-column reductions on Vulkan, one work-group per column, sums in double in a fixed order:
//   rms_norm  y = x / sqrt(mean(x²) + eps)            (shaders/ops/rms_norm.comp)
//   softmax   y = exp(x − max) / Σ exp(x − max)        (shaders/ops/softmax.comp)
//   top_probability  y[c] = softmax's value at column c's largest element (the same shader)
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <string>

#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::ops {

namespace detail {
struct rms_norm_push {
    uint64_t x, y;
    uint32_t ne0;
    float eps;
};
static_assert(sizeof(rms_norm_push) == 24, "rms_norm_push must match shaders/ops/rms_norm.comp");

struct softmax_push {
    uint64_t x = 0, y = 0, positions = 0;
    uint64_t sinks = 0;  // attention: one float per head, or 0
    uint32_t row_stride = 0, row_length = 0, rows_per_token = 0;
    uint32_t window = 0;  // attention: 0, or the keys each query sees
    uint32_t top_only = 0;  // 1: y[row] = the row's top probability; the row itself is not written
    uint32_t unused = 0;
};
static_assert(sizeof(softmax_push) == 56, "softmax_push must match shaders/ops/softmax.comp");

inline void check_columns(const char* name, int64_t ne0, int64_t cols) {
    check(ne0 >= 1 && cols >= 1 && ne0 <= int64_t(UINT32_MAX), errc::shape_mismatch, [&] {
        return std::string(name) + ": " + std::to_string(cols) + " columns of " + std::to_string(ne0) + " values";
    });
}
}  // namespace detail

inline void record_rms_norm(kernels& k, recorder& r, const operand& x, const operand& y, int64_t ne0, int64_t cols,
                            float eps) {
    const char* name = "vulkan::ops::rms_norm";
    detail::check_columns(name, ne0, cols);
    const uint64_t bytes = uint64_t(ne0 * cols) * 4;
    require_bytes(x, bytes, name, "x");
    require_bytes(y, bytes, name, "y");
    const detail::rms_norm_push push{x.address, y.address, uint32_t(ne0), eps};
    const grid g = make_grid(k.device().info(), 1, uint64_t(cols), name);
    r.access({x.part(0, bytes)}, {y.part(0, bytes)});
    r.dispatch(k.pipeline("rms_norm", sizeof push), push, g);
}

namespace detail {
// softmax.comp over cols dense columns of ne0 values: y the columns' softmax, or with top_only
// one float per column (the column's top probability).
inline void record_softmax_columns(kernels& k, recorder& r, const operand& x, const operand& y, int64_t ne0, int64_t cols,
                                   bool top_only, const char* name) {
    check_columns(name, ne0, cols);
    const uint64_t bytes = uint64_t(ne0 * cols) * 4, y_bytes = top_only ? uint64_t(cols) * 4 : bytes;
    require_bytes(x, bytes, name, "x");
    require_bytes(y, y_bytes, name, "y");
    const softmax_push push{x.address, y.address, 0, 0, uint32_t(ne0), uint32_t(ne0), 1, 0, top_only ? 1u : 0u, 0};
    const grid g = make_grid(k.device().info(), uint64_t(cols), 1, name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": too many columns: " + std::to_string(cols); });
    r.access({x.part(0, bytes)}, {y.part(0, y_bytes)});
    r.dispatch(k.pipeline("softmax", sizeof push), push, g);
}
}  // namespace detail

inline void record_softmax(kernels& k, recorder& r, const operand& x, const operand& y, int64_t ne0, int64_t cols) {
    detail::record_softmax_columns(k, r, x, y, ne0, cols, false, "vulkan::ops::softmax");
}

// y[c] = softmax(x[:, c]) at the column's largest element: one float per column.
inline void record_top_probability(kernels& k, recorder& r, const operand& x, const operand& y, int64_t ne0, int64_t cols) {
    detail::record_softmax_columns(k, r, x, y, ne0, cols, true, "vulkan::ops::top_probability");
}

}  // namespace llmrt::vulkan::ops
