// Device buffers with a device address (shaders reach them through push constants).
//
//   buffer w(ctx, bytes);                          // device-local; upload/download go through staging
//   buffer y(ctx, bytes, memory::host_visible);    // mapped, coherent; the host reads it directly
//   w.upload(host, bytes);  y.download(host, bytes);  w.span() -> {address, bytes} for a dispatch
//
// Sizes are rounded up to a multiple of 16 bytes: the mat-vec shaders read weights in aligned
// 16-byte units and may touch the last unit of a matrix whose size is not a multiple of 16.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

#include "llmrt/core/error.hpp"
#include "llmrt/vulkan/check.hpp"
#include "llmrt/vulkan/context.hpp"

namespace llmrt::vulkan {

enum class memory { device_local, host_visible };

// A range of device memory by address, as the dispatch functions take their operands.
struct device_span {
    uint64_t address = 0;
    std::size_t bytes = 0;
};

namespace detail {
inline uint32_t memory_type(const context& ctx, uint32_t allowed, vk::MemoryPropertyFlags wanted) {
    const auto properties = ctx.physical_device().getMemoryProperties();
    for (uint32_t i = 0; i < properties.memoryTypeCount; ++i)
        if ((allowed & (1u << i)) && (properties.memoryTypes[i].propertyFlags & wanted) == wanted) return i;
    throw error(errc::missing_feature, "vulkan::buffer: the device has no memory type with " + vk::to_string(wanted));
}
}  // namespace detail

class buffer {
public:
    buffer(const context& ctx, std::size_t bytes, memory kind = memory::device_local)
        : ctx_(&ctx), kind_(kind), size_((bytes + 15) / 16 * 16) {
        check(bytes > 0, errc::invalid_argument, "vulkan::buffer: a buffer of 0 bytes");
        const auto usage = vk::BufferUsageFlagBits::eStorageBuffer | vk::BufferUsageFlagBits::eTransferSrc |
                           vk::BufferUsageFlagBits::eTransferDst | vk::BufferUsageFlagBits::eShaderDeviceAddress;
        buffer_ = LLMRT_VK_CHECK(vk::raii::Buffer(ctx.device(), vk::BufferCreateInfo({}, size_, usage)));
        const vk::MemoryRequirements needs = buffer_.getMemoryRequirements();
        const auto wanted = kind == memory::device_local
                                ? vk::MemoryPropertyFlags(vk::MemoryPropertyFlagBits::eDeviceLocal)
                                : vk::MemoryPropertyFlagBits::eHostVisible | vk::MemoryPropertyFlagBits::eHostCoherent;
        const vk::MemoryAllocateFlagsInfo flags(vk::MemoryAllocateFlagBits::eDeviceAddress);
        vk::MemoryAllocateInfo allocate(needs.size, detail::memory_type(ctx, needs.memoryTypeBits, wanted));
        allocate.pNext = &flags;
        memory_ = LLMRT_VK_CHECK(vk::raii::DeviceMemory(ctx.device(), allocate));
        LLMRT_VK_CHECK(buffer_.bindMemory(*memory_, 0));
        address_ = ctx.device().getBufferAddress(vk::BufferDeviceAddressInfo(*buffer_));
        if (kind == memory::host_visible) mapped_ = LLMRT_VK_CHECK(memory_.mapMemory(0, VK_WHOLE_SIZE));
    }

    std::size_t size() const noexcept { return size_; }
    memory kind() const noexcept { return kind_; }
    vk::Buffer handle() const noexcept { return *buffer_; }
    uint64_t address() const noexcept { return address_; }

    // {address + offset, bytes} (bytes defaults to the rest of the buffer).
    device_span span(std::size_t offset = 0, std::size_t bytes = SIZE_MAX) const {
        check_range(offset, bytes == SIZE_MAX ? 0 : bytes, "span");
        return {address_ + offset, bytes == SIZE_MAX ? size_ - offset : bytes};
    }

    // The host view of a host-visible buffer.
    void* mapped() const {
        check(mapped_ != nullptr, errc::invalid_argument, "vulkan::buffer::mapped: the buffer is device-local");
        return mapped_;
    }

    // Copies host bytes in (device-local buffers through a host-visible staging buffer).
    void upload(const void* data, std::size_t bytes, std::size_t offset = 0) {
        check_range(offset, bytes, "upload");
        if (bytes == 0) return;
        if (mapped_) {
            std::memcpy(static_cast<char*>(mapped_) + offset, data, bytes);
            return;
        }
        buffer staging(*ctx_, bytes, memory::host_visible);
        std::memcpy(staging.mapped_, data, bytes);
        ctx_->run([&](vk::CommandBuffer cmd) { cmd.copyBuffer(staging.handle(), *buffer_, vk::BufferCopy(0, offset, bytes)); });
    }

    // Copies bytes out to the host.
    void download(void* data, std::size_t bytes, std::size_t offset = 0) const {
        check_range(offset, bytes, "download");
        if (bytes == 0) return;
        if (mapped_) {
            std::memcpy(data, static_cast<const char*>(mapped_) + offset, bytes);
            return;
        }
        buffer staging(*ctx_, bytes, memory::host_visible);
        ctx_->run([&](vk::CommandBuffer cmd) { cmd.copyBuffer(*buffer_, staging.handle(), vk::BufferCopy(offset, 0, bytes)); });
        std::memcpy(data, staging.mapped_, bytes);
    }

    template <class T>
    void upload(std::span<const T> values, std::size_t offset = 0) {
        upload(values.data(), values.size_bytes(), offset);
    }
    template <class T>
    std::vector<T> download(std::size_t count, std::size_t offset = 0) const {
        std::vector<T> values(count);
        download(values.data(), count * sizeof(T), offset);
        return values;
    }

    // Sets every 32-bit word of the buffer to `word` (vkCmdFillBuffer) and waits.
    void fill(uint32_t word) {
        ctx_->run([&](vk::CommandBuffer cmd) { cmd.fillBuffer(*buffer_, 0, VK_WHOLE_SIZE, word); });
    }

private:
    void check_range(std::size_t offset, std::size_t bytes, const char* operation) const {
        check(offset <= size_ && bytes <= size_ - offset, errc::invalid_argument, [&] {
            return std::string("vulkan::buffer::") + operation + ": bytes " + std::to_string(offset) + " .. " +
                   std::to_string(offset + bytes) + " lie outside the buffer's " + std::to_string(size_);
        });
    }

    const context* ctx_;
    memory kind_;
    std::size_t size_;
    vk::raii::Buffer buffer_{nullptr};
    vk::raii::DeviceMemory memory_{nullptr};
    uint64_t address_ = 0;
    void* mapped_ = nullptr;
};

}  // namespace llmrt::vulkan
