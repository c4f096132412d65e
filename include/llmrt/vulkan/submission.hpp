// How a Vulkan graph program submits work and moves bytes it cannot map: submit() runs a command
// buffer on the context's queue and waits for it (polling the fence for up to spin_wait_us,
// then blocking: a decoding step takes about a millisecond, and a blocking wait adds the
// thread's wake-up to every one); copy_to_device and copy_to_host go through a host-visible
// staging buffer in chunks of its size, one submission each.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <vulkan/vulkan_raii.hpp>

#include "llmrt/core/error.hpp"
#include "llmrt/vulkan/buffer.hpp"
#include "llmrt/vulkan/check.hpp"
#include "llmrt/vulkan/context.hpp"

namespace llmrt::vulkan::detail {

class submission {
public:
    submission(const context& ctx, const vk::raii::CommandPool& pool, uint32_t spin_wait_us)
        : ctx_(&ctx), spin_wait_us_(spin_wait_us) {
        transfer_ = LLMRT_VK_CHECK(
            vk::raii::CommandBuffers(ctx.device(), vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1)));
        fence_ = LLMRT_VK_CHECK(vk::raii::Fence(ctx.device(), vk::FenceCreateInfo()));
    }

    // The host-visible buffer the copies go through.
    void set_staging(buffer& staging) noexcept { staging_ = &staging; }

    void submit(vk::CommandBuffer cmd) {
        LLMRT_VK_CHECK(ctx_->device().resetFences(*fence_));
        const vk::SubmitInfo info({}, {}, cmd);
        LLMRT_VK_CHECK(ctx_->queue().submit(info, *fence_));
        // Poll first: a decoding step takes about a millisecond, and a blocking wait adds the
        // thread's wake-up to every one. Then block.
        const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_wait_us_);
        while (std::chrono::steady_clock::now() < spin_until) {
            vk::Result status = vk::Result::eNotReady;
            try {
                status = fence_.getStatus();
            } catch (const vk::SystemError& e) {
                throw error(errc::device_error, std::string("vulkan backend: a submission's fence: ") + e.what());
            }
            if (status == vk::Result::eSuccess) return;
            check(status == vk::Result::eNotReady, errc::device_error,
                  [&] { return "vulkan backend: a submission's fence gave " + vk::to_string(status); });
        }
        const vk::Result waited = LLMRT_VK_CHECK(ctx_->device().waitForFences(*fence_, VK_TRUE, UINT64_MAX));
        check(waited == vk::Result::eSuccess, errc::device_error,
              [&] { return "vulkan backend: waiting for a submission gave " + vk::to_string(waited); });
    }

    // One submission of what `record` records into a one-time command buffer, between barriers
    // that order it after earlier work and make its writes visible to the host.
    template <class Record>
    void record_transfer(Record&& record) {
        vk::CommandBuffer cmd = *transfer_.front();
        LLMRT_VK_CHECK(cmd.reset());
        LLMRT_VK_CHECK(cmd.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit)));
        const vk::MemoryBarrier before(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite,
                                       vk::AccessFlagBits::eTransferRead | vk::AccessFlagBits::eTransferWrite);
        cmd.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader | vk::PipelineStageFlagBits::eTransfer,
                            vk::PipelineStageFlagBits::eTransfer, {}, before, {}, {});
        record(cmd);
        const vk::MemoryBarrier after(vk::AccessFlagBits::eTransferWrite, vk::AccessFlagBits::eHostRead);
        cmd.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer, vk::PipelineStageFlagBits::eHost, {}, after, {}, {});
        LLMRT_VK_CHECK(cmd.end());
        submit(cmd);
    }

    void copy_to_device(const buffer& dst, std::size_t offset, const void* src, std::size_t bytes) {
        for (std::size_t done = 0; done < bytes;) {
            const std::size_t chunk = std::min(bytes - done, staging_->size());
            std::memcpy(staging_->mapped(), static_cast<const std::byte*>(src) + done, chunk);
            record_transfer([&](vk::CommandBuffer cmd) {
                cmd.copyBuffer(staging_->handle(), dst.handle(), vk::BufferCopy(0, offset + done, chunk));
            });
            done += chunk;
        }
    }

    void copy_to_host(const buffer& src, std::size_t offset, void* dst, std::size_t bytes) {
        for (std::size_t done = 0; done < bytes;) {
            const std::size_t chunk = std::min(bytes - done, staging_->size());
            record_transfer([&](vk::CommandBuffer cmd) {
                cmd.copyBuffer(src.handle(), staging_->handle(), vk::BufferCopy(offset + done, 0, chunk));
            });
            std::memcpy(static_cast<std::byte*>(dst) + done, staging_->mapped(), chunk);
            done += chunk;
        }
    }

private:
    const context* ctx_;
    uint32_t spin_wait_us_;
    buffer* staging_ = nullptr;
    vk::raii::CommandBuffers transfer_{nullptr};
    vk::raii::Fence fence_{nullptr};
};

}  // namespace llmrt::vulkan::detail
