// argmax on Vulkan (shaders/ops/argmax.comp): the first index of each column's largest value,
// ranked as the CPU reference's scan ranks them (NaN included). A column of up to argmax_chunk
// values is one work-group; a longer one (a vocabulary of logits) is split into chunks of
// argmax_chunk, each ranked by its own work-group into a scratch of partial winners, which a
// second dispatch ranks.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::ops {

// Values one stage-0 work-group ranks: 16 per invocation.
inline constexpr int64_t argmax_chunk = 16 * int64_t(workgroup_size);

namespace detail {
struct argmax_push {
    uint64_t x, y, partials;
    uint32_t ne0, chunk, chunks, stage;
};
static_assert(sizeof(argmax_push) == 40, "argmax_push must match shaders/ops/argmax.comp");

inline int64_t argmax_chunks(int64_t ne0) { return (ne0 + argmax_chunk - 1) / argmax_chunk; }
}  // namespace detail

// Scratch for up to max_cols columns of ne0 values: one partial winner (8 bytes) per chunk.
inline std::size_t argmax_scratch_bytes(int64_t ne0, int64_t max_cols) {
    const int64_t chunks = detail::argmax_chunks(ne0);
    return chunks > 1 ? std::size_t(chunks) * std::size_t(max_cols) * 8 : 0;
}

// x: cols columns of ne0 floats; y: cols int32; scratch: argmax_scratch_bytes(ne0, cols) bytes.
inline void record_argmax(kernels& k, recorder& r, const operand& x, const operand& y, int64_t ne0, int64_t cols,
                          const operand& scratch) {
    const char* name = "vulkan::ops::argmax";
    check(ne0 >= 1 && cols >= 1 && ne0 <= int64_t(INT32_MAX), errc::shape_mismatch, [&] {
        return std::string(name) + ": " + std::to_string(cols) + " columns of " + std::to_string(ne0) + " values";
    });
    const uint64_t bytes = uint64_t(ne0 * cols) * 4;
    const int64_t chunks = detail::argmax_chunks(ne0);
    require_bytes(x, bytes, name, "x");
    require_bytes(y, uint64_t(cols) * 4, name, "y");
    require_bytes(scratch, argmax_scratch_bytes(ne0, cols), name, "the scratch");
    const device_info& device = k.device().info();
    const compute_pipeline& p = k.pipeline("argmax", sizeof(detail::argmax_push));
    const operand y_used = y.part(0, uint64_t(cols) * 4);
    detail::argmax_push push{x.address, y.address, scratch.address, uint32_t(ne0), uint32_t(argmax_chunk),
                             uint32_t(chunks), 0};
    const grid first = make_grid(device, uint64_t(chunks), uint64_t(cols), name);
    check(first.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": columns of " + std::to_string(ne0) + " values are too long"; });
    if (chunks == 1) {
        r.access({x.part(0, bytes)}, {y_used});
        r.dispatch(p, push, first);
        return;
    }
    const operand partials = scratch.part(0, argmax_scratch_bytes(ne0, cols));
    r.access({x.part(0, bytes)}, {partials});
    r.dispatch(p, push, first);
    push.stage = 1;
    const grid second = make_grid(device, uint64_t(cols), 1, name);
    check(second.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": too many columns: " + std::to_string(cols); });
    r.access({partials}, {y_used});
    r.dispatch(p, push, second);
}

}  // namespace llmrt::vulkan::ops
