// Recording graph ops into one command buffer with the barriers they need, and no others.
//
// An operand is a byte range of one buffer with its device address (shaders take addresses in
// push constants). Before each dispatch the recorder is told what it reads and writes; it records
// a barrier (compute writes -> compute reads and writes) only when the dispatch reads or writes
// bytes that a dispatch since the last barrier wrote, or writes bytes one read: independent
// dispatches (the q, k and v projections; gate and up) run without one between them.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

#include "llmrt/core/error.hpp"
#include "llmrt/vulkan/buffer.hpp"
#include "llmrt/vulkan/context.hpp"
#include "llmrt/vulkan/pipeline.hpp"

namespace llmrt::vulkan::ops {

struct operand {
    vk::Buffer buffer;
    std::size_t offset = 0;   // of the range in the buffer
    std::size_t bytes = 0;
    uint64_t address = 0;     // device address of byte `offset`

    static operand of(const vulkan::buffer& b, std::size_t offset = 0, std::size_t bytes = SIZE_MAX) {
        const device_span s = b.span(offset, bytes);
        return {b.handle(), offset, s.bytes, s.address};
    }
    device_span span() const noexcept { return {address, bytes}; }
    // The bytes [at, at + n) of this range.
    operand part(std::size_t at, std::size_t n) const {
        check(at <= bytes && n <= bytes - at, errc::invalid_argument, [&] {
            return "vulkan::ops::operand: bytes [" + std::to_string(at) + ", " + std::to_string(at + n) +
                   ") lie outside a range of " + std::to_string(bytes);
        });
        return {buffer, offset + at, n, address + at};
    }
    bool overlaps(const operand& o) const noexcept {
        return buffer == o.buffer && offset < o.offset + o.bytes && o.offset < offset + bytes;
    }
};

// Raises llmrt::error when `o` holds fewer than `need` bytes.
inline void require_bytes(const operand& o, uint64_t need, const char* op, const char* what) {
    check(o.bytes >= need, errc::shape_mismatch, [&] {
        return std::string(op) + ": " + what + " holds " + std::to_string(o.bytes) + " bytes, the shape needs " +
               std::to_string(need);
    });
}

// Work-group counts of one dispatch.
struct grid {
    uint32_t x = 1, y = 1, z = 1;
};

// `groups` work-groups along x (spilling into z beyond the device's x limit: shaders number them
// with llmrt_group_index), `y` along y and `z` along z; llmrt::error naming `op` when they exceed
// the device's limits.
inline grid make_grid(const device_info& device, uint64_t groups, uint64_t y, const char* op, uint64_t z = 1) {
    const uint64_t x = std::min<uint64_t>(std::max<uint64_t>(groups, 1), device.max_workgroup_count[0]);
    const uint64_t spill = (std::max<uint64_t>(groups, 1) + x - 1) / x;
    check(y <= device.max_workgroup_count[1] && z * spill <= device.max_workgroup_count[2] && (z == 1 || spill == 1),
          errc::shape_mismatch, [&] {
              return std::string(op) + ": " + std::to_string(groups) + " x " + std::to_string(y) + " x " +
                     std::to_string(z) + " work-groups exceed the device's limits " +
                     std::to_string(device.max_workgroup_count[0]) + " x " + std::to_string(device.max_workgroup_count[1]) +
                     " x " + std::to_string(device.max_workgroup_count[2]);
          });
    return {uint32_t(x), uint32_t(y), uint32_t(z * spill)};
}

// The barrier between dependent compute dispatches.
inline void compute_to_compute_barrier(vk::CommandBuffer cmd) {
    const vk::MemoryBarrier barrier(vk::AccessFlagBits::eShaderWrite,
                                    vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
    cmd.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {},
                        barrier, {}, {});
}

class recorder {
public:
    explicit recorder(vk::CommandBuffer cmd) : cmd_(cmd) {}

    vk::CommandBuffer command_buffer() const noexcept { return cmd_; }
    std::size_t barriers() const noexcept { return barriers_; }
    std::size_t dispatches() const noexcept { return dispatches_; }

    // Declares the next dispatch's operands; records a barrier first when they conflict with what
    // ran since the last one.
    void access(std::span<const operand> reads, std::span<const operand> writes) {
        bool hazard = false;
        for (const operand& r : reads) hazard = hazard || touches(written_, r);
        for (const operand& w : writes) hazard = hazard || touches(written_, w) || touches(read_, w);
        if (hazard) barrier();
        for (const operand& r : reads)
            if (r.bytes) read_.push_back(r);
        for (const operand& w : writes)
            if (w.bytes) {
                written_.push_back(w);
                history_.push_back(w);
            }
    }
    void access(std::initializer_list<operand> reads, std::initializer_list<operand> writes) {
        access(std::span<const operand>(reads.begin(), reads.size()), std::span<const operand>(writes.begin(), writes.size()));
    }

    // Writes declared so far, and whether any of those after the first `mark` touched `o`: what
    // lets a later dispatch reuse a result an earlier one left (ops/mul_mat.hpp's Q8_1 activations).
    std::size_t write_count() const noexcept { return history_.size(); }
    bool written_since(const operand& o, std::size_t mark) const {
        for (std::size_t i = mark; i < history_.size(); ++i)
            if (history_[i].overlaps(o)) return true;
        return false;
    }

    // A barrier now, whatever was declared (e.g. before commands the recorder does not see).
    void barrier() {
        compute_to_compute_barrier(cmd_);
        read_.clear();
        written_.clear();
        ++barriers_;
    }

    template <class Push>
    void dispatch(const compute_pipeline& p, const Push& push, grid g) {
        static_assert(sizeof(Push) % 4 == 0, "vulkan::ops::recorder::dispatch: push constants are whole 32-bit words");
        cmd_.bindPipeline(vk::PipelineBindPoint::eCompute, p.handle());
        cmd_.pushConstants(p.layout(), vk::ShaderStageFlagBits::eCompute, 0, uint32_t(sizeof(Push)), &push);
        cmd_.dispatch(g.x, g.y, g.z);
        ++dispatches_;
    }

    // Counts a dispatch recorded by someone else (the mmvq kernels) after access().
    void count_dispatch() noexcept { ++dispatches_; }

private:
    static bool touches(const std::vector<operand>& list, const operand& o) {
        if (o.bytes == 0) return false;
        for (const operand& x : list)
            if (x.overlaps(o)) return true;
        return false;
    }

    vk::CommandBuffer cmd_;
    std::vector<operand> read_, written_, history_;
    std::size_t barriers_ = 0, dispatches_ = 0;
};

}  // namespace llmrt::vulkan::ops
