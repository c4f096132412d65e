// The host side of dequantize_scaled.comp: its pipeline, built from the SPIR-V that
// llmrt_add_shader embedded in this program, and a dispatch that checks its operands first.
//
//   my_kernels::dequantize_scaled kernel(ctx);
//   kernel.run(w.span(), scales.span(), y.span(), rows, k);   // y = scales[r] · dequantize(W[r])
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <llmrt/core/error.hpp>
#include <llmrt/quant/codec.hpp>
#include <llmrt/vulkan/buffer.hpp>
#include <llmrt/vulkan/context.hpp>
#include <llmrt/vulkan/pipeline.hpp>

#include "dequantize_scaled.spv.hpp"  // generated: my_kernels::spirv::dequantize_scaled

namespace my_kernels {

// The push constant block of dequantize_scaled.comp, member for member.
struct dequantize_scaled_push {
    uint64_t w, scales, y;
    uint32_t rows, k, w_row_stride;
};
static_assert(offsetof(dequantize_scaled_push, rows) == 24 && offsetof(dequantize_scaled_push, w_row_stride) == 32,
              "dequantize_scaled_push must match the push constant block of dequantize_scaled.comp");

class dequantize_scaled {
public:
    static constexpr uint32_t workgroup_size = 64;  // local_size_x of the shader
    static constexpr int64_t slice_values = 32;     // weights one invocation writes (SLICE_VALUES of Q4_K)

    explicit dequantize_scaled(const llmrt::vulkan::context& ctx)
        : ctx_(&ctx),
          pipeline_(ctx, {"dequantize_scaled", spirv::dequantize_scaled}, pipeline_options()) {}

    // y (rows·k floats) = scales[r] · the dequantized Q4_K row r of w (rows rows of k weights,
    // packed at row_size(q4_K, k) bytes each). Waits for the result. A shape that does not fit the
    // spans or the shader raises llmrt::error.
    void run(llmrt::vulkan::device_span w, llmrt::vulkan::device_span scales, llmrt::vulkan::device_span y,
             int64_t rows, int64_t k) const {
        using llmrt::check;
        using llmrt::errc;
        const std::size_t row_bytes = llmrt::row_size(llmrt::qtype::q4_K, k);  // raises unless k is whole blocks
        check(rows >= 0, errc::shape_mismatch, [&] { return "dequantize_scaled: " + std::to_string(rows) + " rows"; });
        const uint64_t slices = uint64_t(rows) * uint64_t(k / slice_values);
        const uint64_t groups = (slices + workgroup_size - 1) / workgroup_size;
        check(slices <= UINT32_MAX && groups <= ctx_->info().max_workgroup_count[0], errc::shape_mismatch, [&] {
            return "dequantize_scaled: " + std::to_string(rows) + " rows of k = " + std::to_string(k) + " need " +
                   std::to_string(groups) + " work-groups, more than one dispatch holds";
        });
        require_bytes(w, uint64_t(rows) * row_bytes, "w");
        require_bytes(scales, uint64_t(rows) * sizeof(float), "scales");
        require_bytes(y, uint64_t(rows) * uint64_t(k) * sizeof(float), "y");
        if (groups == 0) return;

        const dequantize_scaled_push push{w.address, scales.address, y.address, uint32_t(rows), uint32_t(k),
                                          uint32_t(row_bytes)};
        ctx_->run([&](vk::CommandBuffer cmd) {
            cmd.bindPipeline(vk::PipelineBindPoint::eCompute, pipeline_.handle());
            cmd.pushConstants(pipeline_.layout(), vk::ShaderStageFlagBits::eCompute, 0, sizeof push, &push);
            cmd.dispatch(uint32_t(groups), 1, 1);
        });
    }

private:
    // No specialization constants, no required subgroup size: the push constants are all it takes.
    static llmrt::vulkan::pipeline_options pipeline_options() {
        llmrt::vulkan::pipeline_options options;
        options.push_constant_bytes = sizeof(dequantize_scaled_push);
        return options;
    }

    static void require_bytes(llmrt::vulkan::device_span span, uint64_t bytes, const char* name) {
        llmrt::check(span.bytes >= bytes, llmrt::errc::shape_mismatch, [&] {
            return std::string("dequantize_scaled: ") + name + " holds " + std::to_string(span.bytes) +
                   " bytes, the shape needs " + std::to_string(bytes);
        });
    }

    const llmrt::vulkan::context* ctx_;
    llmrt::vulkan::compute_pipeline pipeline_;
};

}  // namespace my_kernels
