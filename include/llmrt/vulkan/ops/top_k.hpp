// top_k over long columns on Vulkan (graph::op::top_k of more than 256 values: a vocabulary's
// logits), with cpu::top_k's picks bit for bit, NaN, signed zeros and ties included
// (shaders/ops/top_k_wide.comp says how). moe.hpp's record_top_k sends such columns here and
// keeps the per-column scan of moe.comp for the routers' short ones.
//
//   slices  a work-group of 256 invocations per top_k_wide_slice values of a column: the keys of
//           its best k into the scratch (only when the column is longer than one slice)
//   merge   a work-group per column: the best k of those keys (or of the column), sorted, then
//           the picks
//
// k is at most top_k_wide_max_k: the merge sorts its keys in shared memory (8 KiB). A larger k
// (or a device without work-groups of 256) goes to the per-column scan, which lavapipe, ending a
// shader after 65535 loop iterations, finishes only while k·n stays below that.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/vulkan/context.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::ops {

// The largest k the wide path takes (MAX_K of the shader), its work-group size (WG) and the values
// a slice work-group selects from (SLICE: 16 an invocation).
inline constexpr int64_t top_k_wide_max_k = 1024;
inline constexpr uint32_t top_k_wide_workgroup = 256;
inline constexpr int64_t top_k_wide_slice = 16 * int64_t(top_k_wide_workgroup);

namespace detail {
struct top_k_wide_push {
    uint64_t x, y, keys;
    uint32_t n, k, slices, stage, cols, unused;
};
static_assert(sizeof(top_k_wide_push) == 48, "top_k_wide_push must match shaders/ops/top_k_wide.comp");

inline int64_t top_k_wide_slices(int64_t n) { return (n + top_k_wide_slice - 1) / top_k_wide_slice; }
inline bool top_k_wide_shape(int64_t n, int64_t k) {
    return n > 256 && n <= int64_t(INT32_MAX) && k >= 1 && k <= n && k <= top_k_wide_max_k;
}
}  // namespace detail

// Whether the wide path takes columns of n values and k picks on this device (work-groups of 256).
inline bool top_k_wide_takes(const device_info& device, int64_t n, int64_t k) {
    return detail::top_k_wide_shape(n, k) && device.max_workgroup_size >= top_k_wide_workgroup;
}

// Scratch for up to max_cols columns of n values and k picks: k keys (8 bytes) per slice of each
// column; 0 where the column is one slice or the wide path does not take the shape.
inline std::size_t top_k_scratch_bytes(int64_t n, int64_t k, int64_t max_cols) {
    if (!detail::top_k_wide_shape(n, k) || max_cols < 1 || n <= top_k_wide_slice) return 0;
    return std::size_t(detail::top_k_wide_slices(n)) * std::size_t(k) * std::size_t(max_cols) * 8;
}

// x: cols columns of n floats; y: cols columns of k int32, cpu::top_k's picks; scratch:
// top_k_scratch_bytes(n, k, cols) bytes.
inline void record_top_k_wide(kernels& kn, recorder& r, const operand& x, const operand& y, int64_t n, int64_t k,
                              int64_t cols, const operand& scratch) {
    const char* name = "vulkan::ops::top_k";
    const device_info& device = kn.device().info();
    check(top_k_wide_takes(device, n, k) && cols >= 1 && cols <= int64_t(INT32_MAX), errc::shape_mismatch, [&] {
        return std::string(name) + ": k = " + std::to_string(k) + " of " + std::to_string(cols) + " columns of " +
               std::to_string(n) + " on the wide path (257..2^31-1 values, 1 <= k <= min(n, " +
               std::to_string(top_k_wide_max_k) + "), work-groups of " + std::to_string(top_k_wide_workgroup) + ")";
    });
    const uint64_t x_bytes = uint64_t(n * cols) * 4, y_bytes = uint64_t(k * cols) * 4;
    const std::size_t keys_bytes = top_k_scratch_bytes(n, k, cols);
    require_bytes(x, x_bytes, name, "x");
    require_bytes(y, y_bytes, name, "y");
    require_bytes(scratch, keys_bytes, name, "the scratch");
    const int64_t slices = detail::top_k_wide_slices(n);
    const operand keys = scratch.part(0, keys_bytes);
    const compute_pipeline& pipeline = kn.pipeline("top_k_wide", sizeof(detail::top_k_wide_push));
    detail::top_k_wide_push push{x.address, y.address, keys.address, uint32_t(n), uint32_t(k), uint32_t(slices),
                                 0, uint32_t(cols), 0};
    if (slices > 1) {
        r.access({x.part(0, x_bytes)}, {keys});
        r.dispatch(pipeline, push, make_grid(device, uint64_t(slices), uint64_t(cols), name));
    }
    push.stage = 1;
    r.access({x.part(0, x_bytes), keys}, {y.part(0, y_bytes)});
    r.dispatch(pipeline, push, make_grid(device, uint64_t(cols), 1, name));
}

}  // namespace llmrt::vulkan::ops
