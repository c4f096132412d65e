// A Vulkan instance, one device with the features llmrt's shaders need, its compute queue and
// a command pool: everything the buffers, pipelines and dispatches of llmrt::vulkan hang off.
//
//   llmrt::vulkan::context ctx;                       // the best suitable device
//   llmrt::vulkan::context ctx({.device = "H100"});   // by name substring, or "1" by index
//
// A device without a feature llmrt needs is refused with llmrt::error (errc::missing_feature)
// naming the device and every missing feature; no device at all is errc::missing_feature too.
// When the instance offers VK_EXT_debug_utils, a messenger records the validation and performance
// warnings and errors of the layers (VK_LAYER_KHRONOS_validation, enabled by VK_INSTANCE_LAYERS)
// and the loader's errors;
// messages() returns them, so tests can fail on any. The library itself never prints.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

#include "llmrt/core/error.hpp"
#include "llmrt/vulkan/check.hpp"

namespace llmrt::vulkan {

enum class vendor { nvidia, amd, intel, mesa, other };

inline vendor vendor_of(uint32_t vendor_id) {
    switch (vendor_id) {
        case 0x10de: return vendor::nvidia;
        case 0x1002: return vendor::amd;
        case 0x8086: return vendor::intel;
        case 0x10005: return vendor::mesa;  // VK_VENDOR_ID_MESA: lavapipe and other Mesa software devices
        default: return vendor::other;
    }
}

// What llmrt reads of a physical device.
struct device_info {
    uint32_t index = 0;  // in the instance's enumeration
    std::string name;
    uint32_t vendor_id = 0;
    uint32_t device_id = 0;
    vendor maker = vendor::other;
    vk::PhysicalDeviceType type = vk::PhysicalDeviceType::eOther;
    uint32_t api_version = 0;
    uint32_t subgroup_size = 0;  // the default
    uint32_t min_subgroup_size = 0;
    uint32_t max_subgroup_size = 0;
    bool can_require_subgroup_size = false;  // subgroup size control for compute shaders
    bool integer_dot_accelerated = false;    // integerDotProduct4x8BitPackedSignedAccelerated
    float timestamp_period_ns = 0.0f;
    uint32_t max_workgroup_count[3] = {0, 0, 0};
    uint32_t max_workgroup_size = 0;
    uint32_t max_shared_memory = 0;
    uint32_t max_push_constants = 0;
    std::vector<std::string> missing;  // features llmrt needs and this device lacks (empty: usable)
};

namespace detail {

inline std::string join(const std::vector<std::string>& items) {
    std::string text;
    for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
    return text;
}

inline device_info describe(const vk::raii::PhysicalDevice& device, uint32_t index) {
    device_info info;
    info.index = index;
    const vk::PhysicalDeviceProperties base = device.getProperties();
    info.name = base.deviceName.data();
    info.vendor_id = base.vendorID;
    info.device_id = base.deviceID;
    info.maker = vendor_of(base.vendorID);
    info.type = base.deviceType;
    info.api_version = base.apiVersion;
    info.timestamp_period_ns = base.limits.timestampPeriod;
    for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = base.limits.maxComputeWorkGroupCount[i];
    info.max_workgroup_size = base.limits.maxComputeWorkGroupInvocations;
    info.max_shared_memory = base.limits.maxComputeSharedMemorySize;
    info.max_push_constants = base.limits.maxPushConstantsSize;

    auto& missing = info.missing;
    if (base.apiVersion < VK_API_VERSION_1_3) {
        missing.push_back("Vulkan 1.3 (the device offers " + std::to_string(VK_API_VERSION_MAJOR(base.apiVersion)) + "." +
                          std::to_string(VK_API_VERSION_MINOR(base.apiVersion)) + ")");
        return info;  // the 1.3 property and feature structures below are not defined for it
    }
    const auto properties = device.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceSubgroupProperties,
                                                  vk::PhysicalDeviceSubgroupSizeControlProperties,
                                                  vk::PhysicalDeviceShaderIntegerDotProductProperties>();
    const auto& subgroup = properties.get<vk::PhysicalDeviceSubgroupProperties>();
    const auto& size_control = properties.get<vk::PhysicalDeviceSubgroupSizeControlProperties>();
    info.subgroup_size = subgroup.subgroupSize;
    info.min_subgroup_size = size_control.minSubgroupSize;
    info.max_subgroup_size = size_control.maxSubgroupSize;
    info.can_require_subgroup_size =
        bool(size_control.requiredSubgroupSizeStages & vk::ShaderStageFlagBits::eCompute);
    info.integer_dot_accelerated =
        properties.get<vk::PhysicalDeviceShaderIntegerDotProductProperties>().integerDotProduct4x8BitPackedSignedAccelerated;

    const auto features = device.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan11Features,
                                              vk::PhysicalDeviceVulkan12Features, vk::PhysicalDeviceVulkan13Features>();
    const auto& f10 = features.get<vk::PhysicalDeviceFeatures2>().features;
    const auto& f11 = features.get<vk::PhysicalDeviceVulkan11Features>();
    const auto& f12 = features.get<vk::PhysicalDeviceVulkan12Features>();
    const auto& f13 = features.get<vk::PhysicalDeviceVulkan13Features>();
    if (!f13.shaderIntegerDotProduct) missing.push_back("shaderIntegerDotProduct");
    if (!f12.storageBuffer8BitAccess) missing.push_back("storageBuffer8BitAccess");
    if (!f11.storageBuffer16BitAccess) missing.push_back("storageBuffer16BitAccess");
    if (!f12.bufferDeviceAddress) missing.push_back("bufferDeviceAddress");
    if (!f10.shaderInt64) missing.push_back("shaderInt64");
    if (!f10.shaderFloat64) missing.push_back("shaderFloat64");
    if (!f13.subgroupSizeControl) missing.push_back("subgroupSizeControl");
    if (!f13.computeFullSubgroups) missing.push_back("computeFullSubgroups");
    if (!f13.maintenance4) missing.push_back("maintenance4");  // work-group sizes by specialization constant (LocalSizeId)
    if (!(subgroup.supportedStages & vk::ShaderStageFlagBits::eCompute))
        missing.push_back("subgroup operations in compute shaders");
    const auto needed_operations = vk::SubgroupFeatureFlagBits::eBasic | vk::SubgroupFeatureFlagBits::eArithmetic;
    if ((subgroup.supportedOperations & needed_operations) != needed_operations)
        missing.push_back("subgroup basic and arithmetic operations");
    // Every shader is compiled for one subgroup size: the device must run compute shaders at a
    // single size, or let the pipeline require one.
    if (!info.can_require_subgroup_size && info.min_subgroup_size != info.max_subgroup_size)
        missing.push_back("a fixed subgroup size (sizes " + std::to_string(info.min_subgroup_size) + ".." +
                          std::to_string(info.max_subgroup_size) + " vary and cannot be required)");
    if (info.subgroup_size < 4 || info.subgroup_size > 128)
        missing.push_back("a subgroup size of 4 to 128 (it has " + std::to_string(info.subgroup_size) + ")");
    if (base.limits.maxPushConstantsSize < 128) missing.push_back("128 bytes of push constants");
    return info;
}

// Every warning and error the debug messenger saw.
struct message_log {
    std::mutex mutex;
    std::vector<std::string> messages;
};

inline VKAPI_ATTR VkBool32 VKAPI_CALL record_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT types,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    auto* log = static_cast<message_log*>(user);
    // The loader's own warnings (general type) describe the environment, such as the layers
    // VK_INSTANCE_LAYERS adds; only its errors are kept.
    const bool general_only = (types & ~VkDebugUtilsMessageTypeFlagsEXT(VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT)) == 0;
    if (general_only && severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) return VK_FALSE;
    std::string text = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
    text += (types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT)    ? " (validation): "
            : (types & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT) ? " (performance): "
                                                                         : " (general): ";
    text += data && data->pMessage ? data->pMessage : "(no message)";
    const std::lock_guard<std::mutex> lock(log->mutex);
    log->messages.push_back(std::move(text));
    return VK_FALSE;
}

inline vk::DebugUtilsMessengerCreateInfoEXT messenger_info(message_log* log) {
    return vk::DebugUtilsMessengerCreateInfoEXT(
        {}, vk::DebugUtilsMessageSeverityFlagBitsEXT::eWarning | vk::DebugUtilsMessageSeverityFlagBitsEXT::eError,
        vk::DebugUtilsMessageTypeFlagBitsEXT::eGeneral | vk::DebugUtilsMessageTypeFlagBitsEXT::eValidation |
            vk::DebugUtilsMessageTypeFlagBitsEXT::ePerformance,
        &record_message, log);
}

inline int type_rank(vk::PhysicalDeviceType type) {
    switch (type) {
        case vk::PhysicalDeviceType::eDiscreteGpu: return 0;
        case vk::PhysicalDeviceType::eIntegratedGpu: return 1;
        case vk::PhysicalDeviceType::eVirtualGpu: return 2;
        case vk::PhysicalDeviceType::eCpu: return 3;
        default: return 4;
    }
}

inline bool is_index(const std::string& text) {
    return !text.empty() && text.size() < 6 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

inline std::string lower(std::string text) {
    for (char& c : text) c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return text;
}

}  // namespace detail

struct context_options {
    // Which device: empty picks the environment variable LLMRT_VULKAN_DEVICE, and when that is
    // unset too the best usable device (discrete, then integrated, virtual, CPU); digits pick the
    // device of that index; other text picks the first device whose name contains it (ignoring case).
    std::string device;
    // Record loader and layer warnings and errors through VK_EXT_debug_utils when offered.
    bool record_messages = true;
    // Enable VK_KHR_pipeline_executable_properties when offered, so pipelines can report the
    // driver's statistics (registers, spills) for tuning.
    bool pipeline_statistics = false;
};

class context {
public:
    explicit context(const context_options& options = {}) : log_(std::make_unique<detail::message_log>()) {
        const vk::ApplicationInfo app("llmrt", 1, "llmrt", 1, VK_API_VERSION_1_3);
        bool debug_utils = false;
        if (options.record_messages) {
            for (const auto& extension : LLMRT_VK_CHECK(raii_.enumerateInstanceExtensionProperties()))
                debug_utils = debug_utils || std::string(extension.extensionName.data()) == VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        }
        std::vector<const char*> extensions;
        if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        vk::InstanceCreateInfo instance_info({}, &app, {}, extensions);
        const auto messenger_info = detail::messenger_info(log_.get());
        if (debug_utils) instance_info.pNext = &messenger_info;  // messages of instance creation too
        instance_ = LLMRT_VK_CHECK(vk::raii::Instance(raii_, instance_info));
        if (debug_utils) messenger_ = LLMRT_VK_CHECK(vk::raii::DebugUtilsMessengerEXT(instance_, messenger_info));

        vk::raii::PhysicalDevices devices = LLMRT_VK_CHECK(vk::raii::PhysicalDevices(instance_));
        std::vector<device_info> infos;
        for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(detail::describe(devices[i], i));
        const device_info& chosen = choose(infos, options.device);
        info_ = chosen;
        physical_ = std::move(devices[chosen.index]);
        create_device(options.pipeline_statistics);
    }

    context(const context&) = delete;
    context& operator=(const context&) = delete;

    const device_info& info() const noexcept { return info_; }
    const vk::raii::Instance& instance() const noexcept { return instance_; }
    const vk::raii::PhysicalDevice& physical_device() const noexcept { return physical_; }
    const vk::raii::Device& device() const noexcept { return device_; }
    vk::Queue queue() const noexcept { return *queue_; }
    uint32_t queue_family() const noexcept { return queue_family_; }
    // Whether pipelines can report statistics (context_options::pipeline_statistics, when offered).
    bool has_pipeline_statistics() const noexcept { return pipeline_statistics_; }

    // Warnings and errors recorded so far (see the top of this file), and forgetting them.
    std::vector<std::string> messages() const {
        const std::lock_guard<std::mutex> lock(log_->mutex);
        return log_->messages;
    }
    void clear_messages() {
        const std::lock_guard<std::mutex> lock(log_->mutex);
        log_->messages.clear();
    }

    // Records into a fresh primary command buffer, submits it to the queue and waits for it.
    void run(const std::function<void(vk::CommandBuffer)>& record) const {
        const std::lock_guard<std::mutex> lock(submit_mutex_);
        vk::raii::CommandBuffers buffers = LLMRT_VK_CHECK(
            vk::raii::CommandBuffers(device_, vk::CommandBufferAllocateInfo(*pool_, vk::CommandBufferLevel::ePrimary, 1)));
        vk::raii::CommandBuffer& cmd = buffers.front();
        LLMRT_VK_CHECK(cmd.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit)));
        record(*cmd);
        LLMRT_VK_CHECK(cmd.end());
        submit_and_wait(*cmd);
    }

    // Submits an already recorded command buffer to the queue and waits for it.
    void submit_and_wait(vk::CommandBuffer cmd) const {
        const vk::raii::Fence fence = LLMRT_VK_CHECK(vk::raii::Fence(device_, vk::FenceCreateInfo()));
        const vk::SubmitInfo submit({}, {}, cmd);
        LLMRT_VK_CHECK(queue_.submit(submit, *fence));
        LLMRT_VK_CHECK(device_.waitForFences(*fence, VK_TRUE, UINT64_MAX));
    }

    vk::CommandPool command_pool() const noexcept { return *pool_; }

private:
    static const device_info& choose(const std::vector<device_info>& infos, std::string wanted) {
        check(!infos.empty(), errc::missing_feature, "vulkan::context: no Vulkan device found");
        if (wanted.empty())
            if (const char* env = std::getenv("LLMRT_VULKAN_DEVICE")) wanted = env;
        auto listing = [&] {
            std::string text;
            for (const auto& d : infos)
                text += (text.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.name +
                        (d.missing.empty() ? "" : " (lacks " + detail::join(d.missing) + ")");
            return text;
        };
        const device_info* chosen = nullptr;
        if (wanted.empty()) {
            for (const auto& d : infos)
                if (d.missing.empty() && (!chosen || detail::type_rank(d.type) < detail::type_rank(chosen->type))) chosen = &d;
            check(chosen != nullptr, errc::missing_feature,
                  [&] { return "vulkan::context: no Vulkan device has what llmrt needs; devices: " + listing(); });
            return *chosen;
        }
        if (detail::is_index(wanted)) {
            const unsigned long index = std::stoul(wanted);
            check(index < infos.size(), errc::invalid_argument, [&] {
                return "vulkan::context: no Vulkan device of index " + wanted + "; devices: " + listing();
            });
            chosen = &infos[index];
        } else {
            for (const auto& d : infos)
                if (!chosen && detail::lower(d.name).find(detail::lower(wanted)) != std::string::npos) chosen = &d;
            check(chosen != nullptr, errc::invalid_argument, [&] {
                return "vulkan::context: no Vulkan device's name contains '" + wanted + "'; devices: " + listing();
            });
        }
        check(chosen->missing.empty(), errc::missing_feature, [&] {
            return "vulkan::context: device " + std::to_string(chosen->index) + " (" + chosen->name + ") lacks " +
                   detail::join(chosen->missing);
        });
        return *chosen;
    }

    void create_device(bool want_statistics) {
        const auto families = physical_.getQueueFamilyProperties();
        bool found = false;
        for (uint32_t i = 0; i < families.size() && !found; ++i)
            if (families[i].queueFlags & vk::QueueFlagBits::eCompute) {
                queue_family_ = i;
                found = true;
            }
        check(found, errc::missing_feature,
              [&] { return "vulkan::context: device " + info_.name + " has no compute queue"; });

        vk::StructureChain<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan11Features,
                           vk::PhysicalDeviceVulkan12Features, vk::PhysicalDeviceVulkan13Features>
            features;
        auto& f10 = features.get<vk::PhysicalDeviceFeatures2>().features;
        f10.shaderInt64 = VK_TRUE;
        f10.shaderFloat64 = VK_TRUE;
        features.get<vk::PhysicalDeviceVulkan11Features>().storageBuffer16BitAccess = VK_TRUE;
        auto& f12 = features.get<vk::PhysicalDeviceVulkan12Features>();
        f12.storageBuffer8BitAccess = VK_TRUE;
        f12.bufferDeviceAddress = VK_TRUE;
        auto& f13 = features.get<vk::PhysicalDeviceVulkan13Features>();
        f13.shaderIntegerDotProduct = VK_TRUE;
        f13.subgroupSizeControl = VK_TRUE;
        f13.computeFullSubgroups = VK_TRUE;
        f13.maintenance4 = VK_TRUE;

        std::vector<const char*> extensions;
        vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR statistics(VK_TRUE);
        if (want_statistics)
            for (const auto& e : physical_.enumerateDeviceExtensionProperties())
                if (std::string(e.extensionName.data()) == VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) {
                    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
                    features.get<vk::PhysicalDeviceVulkan13Features>().pNext = &statistics;
                    pipeline_statistics_ = true;
                }

        const float priority = 1.0f;
        const vk::DeviceQueueCreateInfo queue_info({}, queue_family_, 1, &priority);
        vk::DeviceCreateInfo device_info({}, queue_info, {}, extensions);
        device_info.pNext = &features.get<vk::PhysicalDeviceFeatures2>();
        device_ = LLMRT_VK_CHECK(vk::raii::Device(physical_, device_info));
        queue_ = LLMRT_VK_CHECK(vk::raii::Queue(device_, queue_family_, 0));
        pool_ = LLMRT_VK_CHECK(vk::raii::CommandPool(
            device_, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, queue_family_)));
    }

    std::unique_ptr<detail::message_log> log_;  // first: the messenger outlives nothing that logs
    vk::raii::Context raii_;
    vk::raii::Instance instance_{nullptr};
    vk::raii::DebugUtilsMessengerEXT messenger_{nullptr};
    vk::raii::PhysicalDevice physical_{nullptr};
    device_info info_;
    vk::raii::Device device_{nullptr};
    uint32_t queue_family_ = 0;
    vk::raii::Queue queue_{nullptr};
    vk::raii::CommandPool pool_{nullptr};
    bool pipeline_statistics_ = false;
    mutable std::mutex submit_mutex_;
};

// Every Vulkan device of a fresh instance, with what each lacks for llmrt (for listings and tests).
inline std::vector<device_info> list_devices() {
    vk::raii::Context raii;
    const vk::ApplicationInfo app("llmrt", 1, "llmrt", 1, VK_API_VERSION_1_3);
    const vk::raii::Instance instance = LLMRT_VK_CHECK(vk::raii::Instance(raii, vk::InstanceCreateInfo({}, &app)));
    const vk::raii::PhysicalDevices devices = LLMRT_VK_CHECK(vk::raii::PhysicalDevices(instance));
    std::vector<device_info> infos;
    for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(detail::describe(devices[i], i));
    return infos;
}

}  // namespace llmrt::vulkan
