// Quantized mat-vec on Vulkan: Y = W · X for up to 8 activation columns, W in any weight type,
// X quantized to Q8_1 on the device first (the values llmrt::quantize_row gives), and its
// mixture-of-experts form mmvq_id, where each activation column multiplies the W slice its int32
// expert id names.
//
//   vulkan::mmvq kernels(ctx);
//   const std::size_t scratch_bytes = vulkan::q8_1_activation_layout(k, ncols).bytes;
//   kernels.run(qtype::q4_K, {.rows = m, .k = k, .ncols = 4}, w.span(), x.span(), scratch.span(), y.span());
//   kernels.record(cmd, ...);                      // into the caller's command buffer instead
//
// Shapes, strides and buffer sizes are checked on the host before anything is recorded; bad ones
// raise llmrt::error naming the offending value. Batched mmvq broadcasts W as grouped-query
// attention does: W has w_batch matrices, X and Y have `batch`, a multiple of w_batch, and
// batch b uses W matrix b / (batch / w_batch). Column c of Y is bit-identical for every ncols.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include <vulkan/vulkan_raii.hpp>

#include "llmrt/core/error.hpp"
#include "llmrt/quant/dispatch.hpp"
#include "llmrt/quant/types.hpp"
#include "llmrt/vulkan/buffer.hpp"
#include "llmrt/vulkan/context.hpp"
#include "llmrt/vulkan/mmvq_tuning.hpp"
#include "llmrt/vulkan/pipeline.hpp"
#include "llmrt/vulkan/shaders.hpp"

namespace llmrt::vulkan {

// Where the two regions of llmrt's GPU Q8_1 layout (shaders/include/llmrt/q8_1_activations.glsl)
// lie in a scratch buffer holding `columns` columns of k activations.
struct q8_1_layout {
    std::size_t qs_offset = 0;       // columns·k int8 quants, column c at c·k
    std::size_t records_offset = 0;  // columns·k/32 records of 8 bytes, column c at c·k/4: fp16 d,
                                     // fp16 s = d·Σq, int16 Σq of values 0..15, int16 Σq of 16..31
    std::size_t bytes = 0;           // the scratch size needed
};

inline q8_1_layout q8_1_activation_layout(int64_t k, int64_t columns) {
    check(k > 0 && k % 32 == 0 && columns >= 1, errc::shape_mismatch, [&] {
        return "vulkan: Q8_1 activations of " + std::to_string(columns) + " columns of k = " + std::to_string(k) +
               ": need k a positive multiple of 32 and at least one column";
    });
    auto align16 = [](std::size_t n) { return (n + 15) / 16 * 16; };
    q8_1_layout l;
    const std::size_t n = std::size_t(k) * std::size_t(columns);
    l.records_offset = align16(n);
    l.bytes = l.records_offset + align16(n / 4);
    return l;
}

// Y (rows × ncols per batch) = W (rows × k) · X (k × ncols per batch), batched and broadcast.
struct mmvq_shape {
    int64_t rows = 0;
    int64_t k = 0;
    int64_t ncols = 1;           // 1..8
    int64_t batch = 1;           // batches of X and Y
    int64_t w_batch = 1;         // matrices in W: 1 or a divisor of batch
    int64_t w_row_stride = 0;    // bytes between rows of W; 0: row_size(type, k)
    int64_t w_batch_stride = 0;  // bytes between matrices of W; 0: rows · w_row_stride
    int64_t x_col_stride = 0;    // floats between columns of X; 0: k
    int64_t x_batch_stride = 0;  // floats between batches of X; 0: ncols · x_col_stride
    int64_t y_col_stride = 0;    // floats between columns of Y; 0: rows
    int64_t y_batch_stride = 0;  // floats between batches of Y; 0: ncols · y_col_stride
};

// Y[t][s] (rows floats) = W[ids[t][s]] · X[t][x_per_token == 1 ? 0 : s] for token t, slot s.
struct mmvq_id_shape {
    int64_t rows = 0;
    int64_t k = 0;
    int64_t experts = 1;          // matrices in W
    int64_t tokens = 1;
    int64_t slots = 1;            // ids per token
    int64_t x_per_token = 1;      // activation columns per token: 1 (shared by its slots) or slots
    int64_t ids_stride = 0;       // int32 between the ids of consecutive tokens; 0: slots
    int64_t w_row_stride = 0;     // bytes; 0: row_size(type, k)
    int64_t w_expert_stride = 0;  // bytes; 0: rows · w_row_stride
    int64_t x_col_stride = 0;     // floats between activation columns (token t, column j at t·x_per_token + j); 0: k
    int64_t y_col_stride = 0;     // floats between the slots of a token; 0: rows
    int64_t y_token_stride = 0;   // floats between tokens; 0: slots · y_col_stride
};

// Columns of f32 activations to quantize: `batch` batches of `ncols` columns of k floats.
struct quantize_shape {
    int64_t k = 0;
    int64_t ncols = 1;
    int64_t batch = 1;
    int64_t x_col_stride = 0;    // floats; 0: k
    int64_t x_batch_stride = 0;  // floats; 0: ncols · x_col_stride
};

namespace detail {

// The push constants of shaders/mmvq.comp and shaders/quantize_q8_1.comp, member for member.
struct mmvq_push {
    uint64_t w, w_batch_stride, act_qs, act_records, y, ids;
    uint32_t rows, k, w_row_stride, row_groups, y_col_stride, y_batch_stride, batch_ratio, n_experts, x_per_token,
        ids_stride;
};
static_assert(sizeof(mmvq_push) == 88, "mmvq_push must match the push constant block of shaders/mmvq.comp");

struct quantize_push {
    uint64_t x, qs, records;
    uint32_t k, columns, ncols, x_col_stride, x_batch_stride;
};
inline constexpr uint32_t quantize_push_bytes = 44;  // the GLSL block's size, without C++'s tail padding

inline void require(bool condition, const char* operation, const std::string& what) {
    check(condition, errc::shape_mismatch, [&] { return std::string(operation) + ": " + what; });
}

inline uint32_t to_u32(int64_t v, const char* operation, const char* what) {
    check(v >= 0 && v <= int64_t(UINT32_MAX), errc::invalid_argument, [&] {
        return std::string(operation) + ": " + what + " = " + std::to_string(v) + " does not fit the shader's 32 bits";
    });
    return uint32_t(v);
}

inline void require_span(const device_span& span, uint64_t bytes, uint64_t alignment, const char* operation,
                         const char* name) {
    check(span.address % alignment == 0, errc::invalid_argument, [&] {
        return std::string(operation) + ": " + name + " at address " + std::to_string(span.address) +
               " is not " + std::to_string(alignment) + "-byte aligned";
    });
    check(span.bytes >= bytes, errc::shape_mismatch, [&] {
        return std::string(operation) + ": " + name + " holds " + std::to_string(span.bytes) + " bytes, the shape needs " +
               std::to_string(bytes);
    });
}

struct type_facts {
    const char* name;
    int64_t block_size;
    std::size_t block_bytes;
};

inline type_facts facts(qtype type, const char* operation) {
    return dispatch<weight_types>(type, operation, [](auto tag) {
        using B = typename decltype(tag)::type;
        return type_facts{B::name, B::block_size, sizeof(B)};
    });
}

inline void compute_barrier(vk::CommandBuffer cmd) {
    const vk::MemoryBarrier barrier(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eShaderRead);
    cmd.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {},
                        barrier, {}, {});
}

}  // namespace detail

class mmvq {
public:
    explicit mmvq(const context& ctx, const pipeline_cache* cache = nullptr) : ctx_(&ctx), cache_(cache) {}

    mmvq(const mmvq&) = delete;
    mmvq& operator=(const mmvq&) = delete;

    // The tuning of a type: default_tuning unless set_tuning replaced it.
    mmvq_tuning tuning(qtype type) const {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto found = tunings_.find(type);
        return found != tunings_.end() ? found->second : default_tuning(ctx_->info(), type);
    }

    // Replaces a type's tuning (for benches and experiments); checked against the device.
    void set_tuning(qtype type, const mmvq_tuning& t) {
        const auto f = detail::facts(type, "vulkan::mmvq::set_tuning");
        const device_info& d = ctx_->info();
        const bool fixed = d.subgroup_size == t.subgroup_size && d.min_subgroup_size == d.max_subgroup_size;
        check((d.can_require_subgroup_size || fixed) && t.subgroup_size >= d.min_subgroup_size &&
                  t.subgroup_size <= d.max_subgroup_size && t.workgroup_size % t.subgroup_size == 0 &&
                  t.workgroup_size <= d.max_workgroup_size && t.slices_per_lane >= 1 && t.slices_per_lane <= 16 &&
                  t.k_split >= 1 && (t.workgroup_size / t.subgroup_size) % t.k_split == 0 &&
                  (t.workgroup_size / t.subgroup_size) % std::max(t.long_row_k_split, 1u) == 0,
              errc::invalid_argument, [&] {
                  return std::string("vulkan::mmvq::set_tuning(") + f.name + "): work-group " +
                         std::to_string(t.workgroup_size) + ", subgroup " + std::to_string(t.subgroup_size) +
                         ", slices per lane " + std::to_string(t.slices_per_lane) + ", k split " + std::to_string(t.k_split) +
                         " (long rows " + std::to_string(t.long_row_k_split) + ")" +
                         " do not fit the device or each other (subgroups " +
                         std::to_string(d.min_subgroup_size) + ".." + std::to_string(d.max_subgroup_size) +
                         ", work-groups up to " + std::to_string(d.max_workgroup_size) + ")";
              });
        check(t.staged || f.block_bytes % 4 == 0, errc::invalid_argument, [&] {
            return std::string("vulkan::mmvq::set_tuning(") + f.name + "): its " + std::to_string(f.block_bytes) +
                   "-byte blocks are not 4-byte aligned, so they must be staged";
        });
        for (int64_t ncols = 1; ncols <= mmvq_max_columns; ++ncols) {
            const uint32_t rows = t.rows[ncols - 1], unroll = t.unroll[ncols - 1];
            check(rows >= 1 && rows <= 8, errc::invalid_argument, [&] {
                return std::string("vulkan::mmvq::set_tuning(") + f.name + "): " + std::to_string(rows) +
                       " rows per team; 1..8 are allowed";
            });
            check(unroll >= 1 && unroll <= 8, errc::invalid_argument, [&] {
                return std::string("vulkan::mmvq::set_tuning(") + f.name + "): unroll " + std::to_string(unroll) +
                       " for " + std::to_string(ncols) + " columns; 1..8 are allowed";
            });
            mmvq_tuning staged = t;  // a shape whose strides break alignment falls back to staging
            staged.staged = true;
            std::size_t bytes = shared_bytes(type, staged, ncols, t.k_split);
            if (t.long_row_k_split != 0) bytes = std::max(bytes, shared_bytes(type, staged, ncols, t.long_row_k_split));
            check(bytes <= d.max_shared_memory, errc::invalid_argument, [&] {
                return std::string("vulkan::mmvq::set_tuning(") + f.name + "): " + std::to_string(ncols) +
                       " columns need " + std::to_string(bytes) + " bytes of shared memory, the device has " +
                       std::to_string(d.max_shared_memory);
            });
        }
        const std::lock_guard<std::mutex> lock(mutex_);
        tunings_[type] = t;
    }

    // Creates the pipelines a later record of (type, ncols) and of mmvq_id needs, so recording
    // creates nothing.
    void prepare(qtype type, int64_t ncols) {
        check_ncols(ncols, "vulkan::mmvq::prepare");
        const mmvq_tuning t = tuning(type);
        for (uint32_t k_split : {t.k_split, t.long_row_k_split}) {
            if (k_split == 0) continue;
            (void)mmvq_pipeline(type, ncols, false, t.staged, k_split);
            (void)mmvq_pipeline(type, 1, true, t.staged, k_split);
            if (!t.staged) {  // shapes whose strides break the alignment fall back to staging
                (void)mmvq_pipeline(type, ncols, false, true, k_split);
                (void)mmvq_pipeline(type, 1, true, true, k_split);
            }
        }
        (void)quantize_pipeline();
    }

    // ---- f32 -> Q8_1 activations ----

    void record_quantize(vk::CommandBuffer cmd, const quantize_shape& shape, device_span x, device_span scratch) {
        record_plan(cmd, plan_quantize(shape, x, scratch));
    }

    // ---- mmvq ----

    // Y = W · X on activations already in `scratch` (record_quantize with ncols and batch of shape).
    void record_mmvq(vk::CommandBuffer cmd, qtype type, const mmvq_shape& shape, device_span w, device_span scratch,
                     device_span y) {
        record_plan(cmd, plan_mmvq(type, shape, w, scratch, y));
    }

    // Quantizes X into scratch, then Y = W · X. Everything is checked before anything is recorded.
    void record(vk::CommandBuffer cmd, qtype type, const mmvq_shape& shape, device_span w, device_span x,
                device_span scratch, device_span y) {
        const mmvq_plan mat_vec = plan_mmvq(type, shape, w, scratch, y);
        if (mat_vec.groups == 0) return;
        const mmvq_shape s = normalized(shape, detail::facts(type, "vulkan::mmvq"));
        const quantize_plan quantize = plan_quantize({s.k, s.ncols, s.batch, s.x_col_stride, s.x_batch_stride}, x, scratch);
        record_plan(cmd, quantize);
        detail::compute_barrier(cmd);
        record_plan(cmd, mat_vec);
    }

    // record() into a command buffer of its own, submitted and waited for.
    void run(qtype type, const mmvq_shape& shape, device_span w, device_span x, device_span scratch, device_span y) {
        ctx_->run([&](vk::CommandBuffer cmd) { record(cmd, type, shape, w, x, scratch, y); });
    }

    // ---- mmvq_id ----

    // Y[t][s] = W[ids[t][s]] · X[t][...] on activations already in scratch (record_quantize with
    // ncols = x_per_token, batch = tokens). An id outside [0, experts) yields a column of NaN.
    void record_mmvq_id(vk::CommandBuffer cmd, qtype type, const mmvq_id_shape& shape, device_span w, device_span ids,
                        device_span scratch, device_span y) {
        record_plan(cmd, plan_mmvq_id(type, shape, w, ids, scratch, y));
    }

    void record_id(vk::CommandBuffer cmd, qtype type, const mmvq_id_shape& shape, device_span w, device_span ids,
                   device_span x, device_span scratch, device_span y) {
        const mmvq_plan mat_vec = plan_mmvq_id(type, shape, w, ids, scratch, y);
        if (mat_vec.groups == 0) return;
        const mmvq_id_shape s = normalized(shape, detail::facts(type, "vulkan::mmvq_id"));
        const quantize_plan quantize =
            plan_quantize({s.k, s.x_per_token, s.tokens, s.x_col_stride, s.x_per_token * s.x_col_stride}, x, scratch);
        record_plan(cmd, quantize);
        detail::compute_barrier(cmd);
        record_plan(cmd, mat_vec);
    }

    void run_id(qtype type, const mmvq_id_shape& shape, device_span w, device_span ids, device_span x,
                device_span scratch, device_span y) {
        ctx_->run([&](vk::CommandBuffer cmd) { record_id(cmd, type, shape, w, ids, x, scratch, y); });
    }

    // The pipeline of one variant ("mmvq" or "mmvq_id") for ncols columns and a k split (the
    // tuning's k_split or long_row_k_split), created on first use.
    const compute_pipeline& mmvq_pipeline(qtype type, int64_t ncols, bool id, bool staged, uint32_t k_split) {
        const auto f = detail::facts(type, id ? "vulkan::mmvq_id" : "vulkan::mmvq");
        check_ncols(ncols, "vulkan::mmvq");
        const mmvq_tuning t = tuning(type);
        const std::string name = std::string(id ? "mmvq_id_" : "mmvq_") + f.name;
        const uint32_t unroll = staged ? 1u : t.unroll[ncols - 1];  // the staged path does not use it
        const std::vector<uint32_t> constants = {t.workgroup_size, t.subgroup_size, t.rows[ncols - 1], uint32_t(ncols),
                                                 t.slices_per_lane, staged ? 1u : 0u, k_split, unroll};
        return pipeline(name, constants, sizeof(detail::mmvq_push), t.subgroup_size);
    }

    // Shared memory of the mmvq pipeline for (type, tuning, ncols), as shaders/mmvq.comp sizes it;
    // the slice size and block bytes come from the SPIR-V's own constants.
    static std::size_t shared_bytes(qtype type, const mmvq_tuning& t, int64_t ncols, uint32_t k_split) {
        const auto f = detail::facts(type, "vulkan::mmvq");
        const spirv_blob& blob = shader(std::string("mmvq_") + f.name);
        const auto slice_values = spec_constant_default(blob, 100), block_bytes = spec_constant_default(blob, 101);
        check(slice_values && block_bytes && *slice_values > 0 && *block_bytes == f.block_bytes, errc::unsupported_type, [&] {
            return std::string("vulkan::mmvq: the SPIR-V of ") + f.name + " does not state its slice size and block bytes";
        });
        const std::size_t subgroups = t.workgroup_size / t.subgroup_size, rows = t.rows[ncols - 1];
        const std::size_t slices_per_block = std::size_t(f.block_size) / *slice_values;
        const std::size_t lane_slices = std::size_t(t.subgroup_size) * t.slices_per_lane;
        const std::size_t chunk_blocks = lane_slices >= slices_per_block ? lane_slices / slices_per_block : 1;
        const std::size_t window_units = (chunk_blocks * f.block_bytes + 15) / 16 + 1;
        const std::size_t tile_words = t.staged ? subgroups * rows * 4 * (window_units + 1) : 1;
        const std::size_t partial_words = k_split > 1 ? subgroups * std::size_t(ncols) * rows : 1;
        return 4 * (tile_words + partial_words);
    }

    const compute_pipeline& quantize_pipeline() {
        return pipeline("quantize_q8_1", {quantize_workgroup}, detail::quantize_push_bytes, 0);
    }

private:
    static constexpr uint32_t quantize_workgroup = 64;

    // A dispatch, checked and with its push constants filled in, ready to record.
    struct quantize_plan {
        detail::quantize_push push{};
        uint32_t groups_x = 0, columns = 0;
    };
    struct mmvq_plan {
        detail::mmvq_push push{};
        qtype type{};
        int64_t ncols = 1;
        bool id = false;
        bool staged = true;
        uint32_t k_split = 1;
        uint32_t groups = 0, batches = 0;  // groups == 0: nothing to do
    };

    quantize_plan plan_quantize(const quantize_shape& shape, device_span x, device_span scratch) const {
        const char* op = "vulkan::mmvq::record_quantize";
        quantize_shape s = shape;
        if (s.x_col_stride == 0) s.x_col_stride = s.k;
        if (s.x_batch_stride == 0) s.x_batch_stride = s.ncols * s.x_col_stride;
        detail::require(s.k > 0 && s.k % 32 == 0, op, "k = " + std::to_string(s.k) + " is not a positive multiple of 32");
        detail::require(s.ncols >= 1 && s.batch >= 1, op,
                        std::to_string(s.ncols) + " columns in " + std::to_string(s.batch) + " batches");
        detail::require(s.x_col_stride >= s.k && (s.batch == 1 || s.x_batch_stride >= (s.ncols - 1) * s.x_col_stride + s.k),
                        op, "X strides " + std::to_string(s.x_col_stride) + " (column), " +
                                std::to_string(s.x_batch_stride) + " (batch) overlap columns of k = " + std::to_string(s.k));
        const int64_t columns = s.ncols * s.batch;
        const int64_t x_floats = (s.batch - 1) * s.x_batch_stride + (s.ncols - 1) * s.x_col_stride + s.k;
        detail::require_span(x, uint64_t(x_floats) * 4, 4, op, "X");
        const q8_1_layout layout = q8_1_activation_layout(s.k, columns);
        detail::require_span(scratch, layout.bytes, 16, op, "the Q8_1 scratch");

        quantize_plan plan;
        plan.push.x = x.address;
        plan.push.qs = scratch.address + layout.qs_offset;
        plan.push.records = scratch.address + layout.records_offset;
        plan.push.k = detail::to_u32(s.k, op, "k");
        plan.push.columns = detail::to_u32(columns, op, "columns");
        plan.push.ncols = detail::to_u32(s.ncols, op, "ncols");
        plan.push.x_col_stride = detail::to_u32(s.x_col_stride, op, "x_col_stride");
        plan.push.x_batch_stride = detail::to_u32(s.x_batch_stride, op, "x_batch_stride");
        plan.groups_x = uint32_t((s.k / 32 + quantize_workgroup - 1) / quantize_workgroup);
        plan.columns = plan.push.columns;
        check(plan.groups_x <= ctx_->info().max_workgroup_count[0], errc::shape_mismatch,
              [&] { return std::string(op) + ": k = " + std::to_string(s.k) + " needs more work-groups than the device has"; });
        return plan;
    }

    mmvq_plan plan_mmvq(qtype type, const mmvq_shape& shape, device_span w, device_span scratch, device_span y) const {
        const char* op = "vulkan::mmvq";
        const auto f = detail::facts(type, op);
        const mmvq_shape s = normalized(shape, f);
        check_mmvq(s, f, op);
        mmvq_plan plan;
        plan.type = type;
        plan.ncols = s.ncols;
        if (s.rows == 0) return plan;
        const q8_1_layout layout = q8_1_activation_layout(s.k, s.ncols * s.batch);
        detail::require_span(scratch, layout.bytes, 16, op, "the Q8_1 scratch");
        const uint64_t w_bytes = uint64_t((s.w_batch - 1) * s.w_batch_stride + (s.rows - 1) * s.w_row_stride) +
                                 uint64_t(s.k / f.block_size) * f.block_bytes;
        detail::require_span(w, (w_bytes + 15) / 16 * 16, 16, op, "W");
        const int64_t y_floats = (s.batch - 1) * s.y_batch_stride + (s.ncols - 1) * s.y_col_stride + s.rows;
        detail::require_span(y, uint64_t(y_floats) * 4, 4, op, "Y");

        const mmvq_tuning t = tuning(type);
        plan.k_split = t.k_split_for(s.rows, s.k);
        const uint32_t rows_per_group = t.rows[s.ncols - 1] * (t.workgroup_size / t.subgroup_size / plan.k_split);
        plan.staged = t.staged || !direct_aligned(f, w.address, s.w_row_stride, s.w_batch_stride);
        auto& push = plan.push;
        push.w = w.address;
        push.w_batch_stride = uint64_t(s.w_batch_stride);
        push.act_qs = scratch.address + layout.qs_offset;
        push.act_records = scratch.address + layout.records_offset;
        push.y = y.address;
        push.rows = detail::to_u32(s.rows, op, "rows");
        push.k = detail::to_u32(s.k, op, "k");
        push.w_row_stride = detail::to_u32(s.w_row_stride, op, "w_row_stride");
        push.row_groups = uint32_t((s.rows + rows_per_group - 1) / rows_per_group);  // rows per work-group
        push.y_col_stride = detail::to_u32(s.y_col_stride, op, "y_col_stride");
        push.y_batch_stride = detail::to_u32(s.y_batch_stride, op, "y_batch_stride");
        push.batch_ratio = uint32_t(s.batch / s.w_batch);
        detail::to_u32(int64_t(layout.bytes), op, "Q8_1 scratch bytes");
        plan.groups = push.row_groups;
        plan.batches = detail::to_u32(s.batch, op, "batch");
        check_groups(plan.groups, op);
        return plan;
    }

    mmvq_plan plan_mmvq_id(qtype type, const mmvq_id_shape& shape, device_span w, device_span ids, device_span scratch,
                           device_span y) const {
        const char* op = "vulkan::mmvq_id";
        const auto f = detail::facts(type, op);
        const mmvq_id_shape s = normalized(shape, f);
        check_mmvq_id(s, f, op);
        mmvq_plan plan;
        plan.type = type;
        plan.id = true;
        if (s.rows == 0) return plan;
        const q8_1_layout layout = q8_1_activation_layout(s.k, s.tokens * s.x_per_token);
        detail::require_span(scratch, layout.bytes, 16, op, "the Q8_1 scratch");
        const uint64_t w_bytes = uint64_t((s.experts - 1) * s.w_expert_stride + (s.rows - 1) * s.w_row_stride) +
                                 uint64_t(s.k / f.block_size) * f.block_bytes;
        detail::require_span(w, (w_bytes + 15) / 16 * 16, 16, op, "W");
        detail::require_span(ids, uint64_t((s.tokens - 1) * s.ids_stride + s.slots) * 4, 4, op, "ids");
        const int64_t y_floats = (s.tokens - 1) * s.y_token_stride + (s.slots - 1) * s.y_col_stride + s.rows;
        detail::require_span(y, uint64_t(y_floats) * 4, 4, op, "Y");

        const mmvq_tuning t = tuning(type);
        plan.staged = t.staged || !direct_aligned(f, w.address, s.w_row_stride, s.w_expert_stride);
        auto& push = plan.push;
        push.w = w.address;
        push.w_batch_stride = uint64_t(s.w_expert_stride);
        push.act_qs = scratch.address + layout.qs_offset;
        push.act_records = scratch.address + layout.records_offset;
        push.y = y.address;
        push.ids = ids.address;
        push.rows = detail::to_u32(s.rows, op, "rows");
        push.k = detail::to_u32(s.k, op, "k");
        push.w_row_stride = detail::to_u32(s.w_row_stride, op, "w_row_stride");
        plan.k_split = t.k_split_for(s.rows, s.k);
        const uint32_t rows_per_group = t.rows[0] * (t.workgroup_size / t.subgroup_size / plan.k_split);
        push.row_groups = uint32_t((s.rows + rows_per_group - 1) / rows_per_group);
        push.y_col_stride = detail::to_u32(s.y_col_stride, op, "y_col_stride");
        push.y_batch_stride = detail::to_u32(s.y_token_stride, op, "y_token_stride");
        push.batch_ratio = detail::to_u32(s.slots, op, "slots");
        push.n_experts = detail::to_u32(s.experts, op, "experts");
        push.x_per_token = detail::to_u32(s.x_per_token, op, "x_per_token");
        push.ids_stride = detail::to_u32(s.ids_stride, op, "ids_stride");
        detail::to_u32(int64_t(layout.bytes), op, "Q8_1 scratch bytes");
        detail::to_u32(s.tokens * s.ids_stride, op, "ids elements");
        plan.groups = push.row_groups;
        plan.batches = detail::to_u32(s.tokens * s.slots, op, "tokens · slots");
        check_groups(plan.groups, op);
        return plan;
    }

    // Whether lanes may read W in place: 16-byte loads need 16-byte blocks and strides, 4-byte
    // loads 4-byte ones.
    static bool direct_aligned(const detail::type_facts& f, uint64_t address, int64_t row_stride, int64_t batch_stride) {
        const uint64_t a = f.block_bytes % 16 == 0 ? 16 : 4;
        return f.block_bytes % 4 == 0 && address % a == 0 && uint64_t(row_stride) % a == 0 && uint64_t(batch_stride) % a == 0;
    }

    void check_groups(uint32_t row_groups, const char* op) const {
        const auto& limit = ctx_->info().max_workgroup_count;
        const uint64_t x = std::min(row_groups, limit[0]);
        check((row_groups + x - 1) / x <= limit[2], errc::shape_mismatch, [&] {
            return std::string(op) + ": " + std::to_string(row_groups) + " row groups exceed the device's work-group counts";
        });
    }

    void record_plan(vk::CommandBuffer cmd, const quantize_plan& plan) {
        const compute_pipeline& p = quantize_pipeline();
        cmd.bindPipeline(vk::PipelineBindPoint::eCompute, p.handle());
        cmd.pushConstants(p.layout(), vk::ShaderStageFlagBits::eCompute, 0, detail::quantize_push_bytes, &plan.push);
        const auto& limit = ctx_->info().max_workgroup_count;
        for (uint32_t y0 = 0; y0 < plan.columns; y0 += limit[1])
            cmd.dispatchBase(0, y0, 0, plan.groups_x, std::min(limit[1], plan.columns - y0), 1);
    }

    // Row groups spread over x (and z beyond the device's x limit), batches over y in chunks.
    void record_plan(vk::CommandBuffer cmd, const mmvq_plan& plan) {
        if (plan.groups == 0) return;
        const compute_pipeline& p = mmvq_pipeline(plan.type, plan.ncols, plan.id, plan.staged, plan.k_split);
        cmd.bindPipeline(vk::PipelineBindPoint::eCompute, p.handle());
        cmd.pushConstants(p.layout(), vk::ShaderStageFlagBits::eCompute, 0, sizeof(plan.push), &plan.push);
        const auto& limit = ctx_->info().max_workgroup_count;
        const uint32_t x = std::min(plan.groups, limit[0]);
        const uint32_t z = (plan.groups + x - 1) / x;
        for (uint32_t y0 = 0; y0 < plan.batches; y0 += limit[1])
            cmd.dispatchBase(0, y0, 0, x, std::min(limit[1], plan.batches - y0), z);
    }

    static void check_ncols(int64_t ncols, const char* op) {
        detail::require(ncols >= 1 && ncols <= mmvq_max_columns, op,
                        "ncols = " + std::to_string(ncols) + "; mmvq takes 1 to " + std::to_string(mmvq_max_columns) +
                            " columns per batch");
    }

    static mmvq_shape normalized(mmvq_shape s, const detail::type_facts& f) {
        if (s.w_row_stride == 0 && s.k > 0 && s.k % f.block_size == 0)
            s.w_row_stride = s.k / f.block_size * int64_t(f.block_bytes);
        if (s.w_batch_stride == 0) s.w_batch_stride = s.rows * s.w_row_stride;
        if (s.x_col_stride == 0) s.x_col_stride = s.k;
        if (s.x_batch_stride == 0) s.x_batch_stride = s.ncols * s.x_col_stride;
        if (s.y_col_stride == 0) s.y_col_stride = s.rows;
        if (s.y_batch_stride == 0) s.y_batch_stride = s.ncols * s.y_col_stride;
        return s;
    }

    static mmvq_id_shape normalized(mmvq_id_shape s, const detail::type_facts& f) {
        if (s.ids_stride == 0) s.ids_stride = s.slots;
        if (s.w_row_stride == 0 && s.k > 0 && s.k % f.block_size == 0)
            s.w_row_stride = s.k / f.block_size * int64_t(f.block_bytes);
        if (s.w_expert_stride == 0) s.w_expert_stride = s.rows * s.w_row_stride;
        if (s.x_col_stride == 0) s.x_col_stride = s.k;
        if (s.y_col_stride == 0) s.y_col_stride = s.rows;
        if (s.y_token_stride == 0) s.y_token_stride = s.slots * s.y_col_stride;
        return s;
    }

    static void check_matrix(int64_t rows, int64_t k, int64_t w_row_stride, const detail::type_facts& f, const char* op) {
        detail::require(rows >= 0, op, "rows = " + std::to_string(rows) + " is negative");
        detail::require(k > 0 && k % f.block_size == 0, op,
                        "k = " + std::to_string(k) + " is not a positive multiple of " + f.name + "'s block size " +
                            std::to_string(f.block_size));
        const int64_t row_bytes = k / f.block_size * int64_t(f.block_bytes);
        detail::require(w_row_stride >= row_bytes, op,
                        "w_row_stride = " + std::to_string(w_row_stride) + " bytes is below a row of " +
                            std::to_string(k) + " " + f.name + " values (" + std::to_string(row_bytes) + " bytes)");
    }

    static void check_mmvq(const mmvq_shape& s, const detail::type_facts& f, const char* op) {
        check_ncols(s.ncols, op);
        check_matrix(s.rows, s.k, s.w_row_stride, f, op);
        detail::require(s.batch >= 1 && s.w_batch >= 1 && s.batch % s.w_batch == 0, op,
                        "W has " + std::to_string(s.w_batch) + " matrices and X " + std::to_string(s.batch) +
                            " batches; W's count must be 1 or divide X's");
        detail::require(s.w_batch == 1 || s.w_batch_stride >= s.rows * s.w_row_stride, op,
                        "w_batch_stride = " + std::to_string(s.w_batch_stride) + " bytes overlaps matrices of " +
                            std::to_string(s.rows) + " rows");
        detail::require(s.x_col_stride >= s.k && (s.batch == 1 || s.x_batch_stride >= (s.ncols - 1) * s.x_col_stride + s.k),
                        op, "X strides " + std::to_string(s.x_col_stride) + " (column), " +
                                std::to_string(s.x_batch_stride) + " (batch) overlap columns of k = " + std::to_string(s.k));
        detail::require(s.y_col_stride >= s.rows && (s.batch == 1 || s.y_batch_stride >= (s.ncols - 1) * s.y_col_stride + s.rows),
                        op, "Y strides " + std::to_string(s.y_col_stride) + " (column), " +
                                std::to_string(s.y_batch_stride) + " (batch) overlap columns of " +
                                std::to_string(s.rows) + " rows");
    }

    static void check_mmvq_id(const mmvq_id_shape& s, const detail::type_facts& f, const char* op) {
        check_matrix(s.rows, s.k, s.w_row_stride, f, op);
        detail::require(s.experts >= 1 && s.tokens >= 1 && s.slots >= 1, op,
                        std::to_string(s.experts) + " experts, " + std::to_string(s.tokens) + " tokens, " +
                            std::to_string(s.slots) + " slots: each must be at least 1");
        detail::require(s.x_per_token == 1 || s.x_per_token == s.slots, op,
                        "x_per_token = " + std::to_string(s.x_per_token) + "; it must be 1 or slots (" +
                            std::to_string(s.slots) + ")");
        detail::require(s.ids_stride >= s.slots, op,
                        "ids_stride = " + std::to_string(s.ids_stride) + " is below slots = " + std::to_string(s.slots));
        detail::require(s.w_expert_stride >= s.rows * s.w_row_stride || s.experts == 1, op,
                        "w_expert_stride = " + std::to_string(s.w_expert_stride) + " bytes overlaps experts of " +
                            std::to_string(s.rows) + " rows");
        detail::require(s.x_col_stride >= s.k, op,
                        "x_col_stride = " + std::to_string(s.x_col_stride) + " is below k = " + std::to_string(s.k));
        detail::require(s.y_col_stride >= s.rows && (s.tokens == 1 || s.y_token_stride >= (s.slots - 1) * s.y_col_stride + s.rows),
                        op, "Y strides " + std::to_string(s.y_col_stride) + " (slot), " + std::to_string(s.y_token_stride) +
                                " (token) overlap columns of " + std::to_string(s.rows) + " rows");
    }

    const compute_pipeline& pipeline(const std::string& name, const std::vector<uint32_t>& constants,
                                     uint32_t push_bytes, uint32_t subgroup_size) {
        const std::lock_guard<std::mutex> lock(mutex_);
        auto key = std::make_pair(name, constants);
        auto found = pipelines_.find(key);
        if (found == pipelines_.end()) {
            pipeline_options options;
            options.specialization = constants;
            options.push_constant_bytes = push_bytes;
            options.subgroup_size = subgroup_size;
            options.cache = cache_;
            options.capture_statistics = ctx_->has_pipeline_statistics();
            auto created = std::make_unique<compute_pipeline>(*ctx_, shader(name), options);
            found = pipelines_.emplace(std::move(key), std::move(created)).first;
        }
        return *found->second;
    }

    const context* ctx_;
    const pipeline_cache* cache_;
    mutable std::mutex mutex_;
    std::map<qtype, mmvq_tuning> tunings_;
    std::map<std::pair<std::string, std::vector<uint32_t>>, std::unique_ptr<compute_pipeline>> pipelines_;
};

}  // namespace llmrt::vulkan
