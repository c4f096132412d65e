// The pipelines of the graph executor's op shaders (shaders/ops/), created on first use and kept:
// a backend creates every one it needs while it prepares a graph, so running creates none.
//
//   vulkan::ops::kernels k(ctx);
//   const vulkan::compute_pipeline& p = k.pipeline("rms_norm", sizeof(push));
//
// Every op shader runs work-groups of ops::workgroup_size invocations, but top_k_wide (256,
// ops/top_k.hpp). Needs the llmrt::vulkan CMake target (which links llmrt::vulkan_ops, whose
// generated headers hold the blobs).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if !__has_include("llmrt/vulkan/ops/embedded_spirv.hpp")
#error "llmrt/vulkan/ops/kernels.hpp needs the generated SPIR-V headers: link the llmrt::vulkan CMake target"
#endif
#include "llmrt/vulkan/ops/embedded_spirv.hpp"

#include "llmrt/core/error.hpp"
#include "llmrt/vulkan/context.hpp"
#include "llmrt/vulkan/pipeline.hpp"
#include "llmrt/vulkan/spirv.hpp"

namespace llmrt::vulkan::ops {

// LLMRT_OPS_WG of shaders/ops/ops_common.glsl.
inline constexpr uint32_t workgroup_size = 128;

// Every embedded op shader.
inline std::span<const spirv_blob> op_shaders() noexcept { return spirv_index::llmrt_vulkan_ops_spirv; }

// The op shader called `name`, or nullptr.
inline const spirv_blob* find_op_shader(std::string_view name) noexcept {
    for (const spirv_blob& blob : op_shaders())
        if (blob.name == name) return &blob;
    return nullptr;
}

class kernels {
public:
    explicit kernels(const context& ctx, const pipeline_cache* cache = nullptr) : ctx_(&ctx), cache_(cache) {}
    kernels(const kernels&) = delete;
    kernels& operator=(const kernels&) = delete;

    const context& device() const noexcept { return *ctx_; }

    // The pipeline of op shader `name` with push_bytes of push constants and the given values of
    // specialization constants 0, 1, ...; llmrt::error (unsupported_type) naming the shader when
    // the build embedded none of that name.
    const compute_pipeline& pipeline(const std::string& name, uint32_t push_bytes,
                                     const std::vector<uint32_t>& constants = {}) {
        const std::lock_guard<std::mutex> lock(mutex_);
        auto key = std::make_pair(name, constants);
        auto found = pipelines_.find(key);
        if (found == pipelines_.end()) {
            const spirv_blob* blob = find_op_shader(name);
            check(blob != nullptr, errc::unsupported_type,
                  [&] { return "vulkan::ops: no embedded op shader called '" + name + "'"; });
            pipeline_options options;
            options.specialization = constants;
            options.push_constant_bytes = push_bytes;
            options.cache = cache_;
            auto created = std::make_unique<compute_pipeline>(*ctx_, *blob, options);
            found = pipelines_.emplace(std::move(key), std::move(created)).first;
        }
        return *found->second;
    }

    std::size_t pipeline_count() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        return pipelines_.size();
    }

private:
    const context* ctx_;
    const pipeline_cache* cache_;
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, std::vector<uint32_t>>, std::unique_ptr<compute_pipeline>> pipelines_;
};

}  // namespace llmrt::vulkan::ops
