// Compute pipelines from embedded SPIR-V: push constants only (operands travel as device
// addresses), uint32 specialization constants with ids 0, 1, ..., an optionally required
// subgroup size with full subgroups, and a pipeline cache whose data can be saved and restored.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

#include "llmrt/core/error.hpp"
#include "llmrt/vulkan/check.hpp"
#include "llmrt/vulkan/context.hpp"
#include "llmrt/vulkan/spirv.hpp"

namespace llmrt::vulkan {

class pipeline_cache {
public:
    // `data` from an earlier data() call (on the same driver) speeds pipeline creation up; a
    // driver that does not recognise it starts empty.
    explicit pipeline_cache(const context& ctx, std::span<const uint8_t> data = {})
        : cache_(LLMRT_VK_CHECK(
              vk::raii::PipelineCache(ctx.device(), vk::PipelineCacheCreateInfo({}, data.size(), data.data())))) {}

    vk::PipelineCache handle() const noexcept { return *cache_; }
    const vk::raii::PipelineCache& raii() const noexcept { return cache_; }
    std::vector<uint8_t> data() const { return LLMRT_VK_CHECK(cache_.getData()); }

private:
    vk::raii::PipelineCache cache_;
};

struct pipeline_options {
    std::vector<uint32_t> specialization;  // values of constant_id 0, 1, ...
    uint32_t push_constant_bytes = 0;
    uint32_t subgroup_size = 0;             // 0: the device's choice; else required, with full subgroups
    const pipeline_cache* cache = nullptr;
    bool capture_statistics = false;        // when the context has pipeline statistics
};

class compute_pipeline {
public:
    compute_pipeline(const context& ctx, const spirv_blob& spirv, const pipeline_options& options) {
        check(!spirv.words.empty(), errc::invalid_argument,
              [&] { return "vulkan::compute_pipeline: empty SPIR-V for " + std::string(spirv.name); });
        check(options.push_constant_bytes <= ctx.info().max_push_constants, errc::missing_feature, [&] {
            return "vulkan::compute_pipeline(" + std::string(spirv.name) + "): " +
                   std::to_string(options.push_constant_bytes) + " bytes of push constants, the device allows " +
                   std::to_string(ctx.info().max_push_constants);
        });
        const vk::raii::ShaderModule module = LLMRT_VK_CHECK(vk::raii::ShaderModule(
            ctx.device(), vk::ShaderModuleCreateInfo({}, spirv.words.size_bytes(), spirv.words.data())));
        const vk::PushConstantRange range(vk::ShaderStageFlagBits::eCompute, 0, options.push_constant_bytes);
        vk::PipelineLayoutCreateInfo layout_info;
        if (options.push_constant_bytes > 0) layout_info.setPushConstantRanges(range);
        layout_ = LLMRT_VK_CHECK(vk::raii::PipelineLayout(ctx.device(), layout_info));

        std::vector<vk::SpecializationMapEntry> entries;
        for (uint32_t i = 0; i < options.specialization.size(); ++i)
            entries.emplace_back(i, uint32_t(i * sizeof(uint32_t)), sizeof(uint32_t));
        const vk::SpecializationInfo specialization(entries, vk::ArrayProxyNoTemporaries<const uint32_t>(options.specialization));
        vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, *module, "main",
                                                options.specialization.empty() ? nullptr : &specialization);
        const vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo required(options.subgroup_size);
        if (options.subgroup_size != 0) {
            const auto& info = ctx.info();
            check(options.subgroup_size >= info.min_subgroup_size && options.subgroup_size <= info.max_subgroup_size,
                  errc::invalid_argument, [&] {
                      return "vulkan::compute_pipeline(" + std::string(spirv.name) + "): subgroup size " +
                             std::to_string(options.subgroup_size) + " outside the device's " +
                             std::to_string(info.min_subgroup_size) + ".." + std::to_string(info.max_subgroup_size);
                  });
            stage.flags = vk::PipelineShaderStageCreateFlagBits::eRequireFullSubgroups;
            if (info.can_require_subgroup_size) stage.pNext = &required;
        }
        const bool statistics = options.capture_statistics && ctx.has_pipeline_statistics();
        vk::PipelineCreateFlags flags = vk::PipelineCreateFlagBits::eDispatchBase;
        if (statistics) flags |= vk::PipelineCreateFlagBits::eCaptureStatisticsKHR;
        const vk::ComputePipelineCreateInfo pipeline_info(flags, stage, *layout_);
        pipeline_ = options.cache ? LLMRT_VK_CHECK(vk::raii::Pipeline(ctx.device(), options.cache->raii(), pipeline_info))
                                  : LLMRT_VK_CHECK(vk::raii::Pipeline(ctx.device(), nullptr, pipeline_info));
        if (statistics) {
            const auto executables = ctx.device().getPipelineExecutablePropertiesKHR(vk::PipelineInfoKHR(*pipeline_));
            for (uint32_t i = 0; i < executables.size(); ++i)
                for (const auto& stat : ctx.device().getPipelineExecutableStatisticsKHR(vk::PipelineExecutableInfoKHR(*pipeline_, i))) {
                    std::string value;
                    switch (stat.format) {
                        case vk::PipelineExecutableStatisticFormatKHR::eBool32: value = stat.value.b32 ? "true" : "false"; break;
                        case vk::PipelineExecutableStatisticFormatKHR::eInt64: value = std::to_string(stat.value.i64); break;
                        case vk::PipelineExecutableStatisticFormatKHR::eUint64: value = std::to_string(stat.value.u64); break;
                        case vk::PipelineExecutableStatisticFormatKHR::eFloat64: value = std::to_string(stat.value.f64); break;
                    }
                    statistics_ += (statistics_.empty() ? "" : ", ") + std::string(stat.name.data()) + " " + value;
                }
        }
    }

    // The driver's statistics ("Register Count 64, ..."), when captured; else empty.
    const std::string& statistics() const noexcept { return statistics_; }

    vk::Pipeline handle() const noexcept { return *pipeline_; }
    vk::PipelineLayout layout() const noexcept { return *layout_; }

private:
    vk::raii::PipelineLayout layout_{nullptr};
    vk::raii::Pipeline pipeline_{nullptr};
    std::string statistics_;
};

}  // namespace llmrt::vulkan
