// vulkan::backend: the graph executor on a Vulkan device.
//
//   vulkan::context ctx;                                  // the device (vulkan/context.hpp)
//   vulkan::backend vk_backend(ctx);
//   graph::executor ex(vk_backend, g);                    // everything is allocated and recorded here
//   ex.write(tokens, ids);  ex.run(n);  ex.read(logits, out);
//
// prepare(graph, plan) allocates all the program will ever use: the arena (device-local, zeroed),
// the states (zeroed), the weights (uploaded), a host-visible buffer holding a host copy of every
// input and output, a staging buffer for the other reads and writes, and the pipelines. It then
// records one command buffer per batch size 1..max_batch, each the whole forward: the run's input
// columns copied into the arena, every op's dispatches with a barrier only where a dispatch reads
// or writes what an earlier one wrote (or writes what one read), then the outputs copied back.
// run(n) (after the executor has checked the ids and positions the host wrote) submits the
// command buffer for n and waits; it records and allocates nothing.
//
//   inputs    write() and read() are a memcpy to and from the host copy; each run copies its
//             columns to the device first, so shaders read device memory
//   outputs   arena tensors copied to the host copy at the end of each run (for batched outputs,
//             the run's columns): read() is a memcpy
//   others    states, weights and (in a plan without memory reuse) every node go through the
//             staging buffer, one submission per chunk
//
// Steps: the plan's lowering (graph/lower.hpp) with every fusion but stacked products and carried
// steps: norm, rope_cache, attention and swiglu steps are one dispatch each (steps.hpp,
// ops/fused.hpp), producers write the Q8_1 rounding the next mat-vecs read, and the mat-vecs of
// one activation run without a barrier between them. Op steps (and every node of a plan made with
// fuse = false): quantized mul_mat through llmrt's mmvq on Q8_1 activations (ops/mul_mat.hpp),
// every other op through the shaders of shaders/ops/ (ops/*.hpp), each with the CPU reference's
// formula and summation order. Every step is deterministic (fixed reduction orders; the attention
// step's atomic counter only picks which work-group combines, in a fixed order) and column by
// column, so a token's results do not depend on the batch it runs in. Errors are llmrt::error: an
// op, type or shape the backend cannot run is refused when the graph is prepared, naming the node.
//
// A program submits to the context's queue from the calling thread; do not use one context's
// queue from two threads at once. The backend must outlive its programs.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <vulkan/vulkan_raii.hpp>

#include "llmrt/core/error.hpp"
#include "llmrt/graph/backend.hpp"
#include "llmrt/graph/graph.hpp"
#include "llmrt/graph/plan.hpp"
#include "llmrt/vulkan/buffer.hpp"
#include "llmrt/vulkan/check.hpp"
#include "llmrt/vulkan/context.hpp"
#include "llmrt/vulkan/mmvq.hpp"
#include "llmrt/vulkan/ops/argmax.hpp"
#include "llmrt/vulkan/ops/attention.hpp"
#include "llmrt/vulkan/ops/elementwise.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/moe.hpp"
#include "llmrt/vulkan/ops/mul_mat.hpp"
#include "llmrt/vulkan/ops/norm.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"
#include "llmrt/vulkan/ops/rope.hpp"
#include "llmrt/vulkan/ops/rows.hpp"
#include "llmrt/vulkan/steps.hpp"
#include "llmrt/vulkan/supported.hpp"
#include "llmrt/vulkan/submission.hpp"

namespace llmrt::vulkan {

struct backend_options {
    // Host-visible bytes through which write() and read() reach device memory (in chunks of this
    // size); smaller when no tensor needs as much.
    std::size_t staging_bytes = std::size_t(64) << 20;
    // Weights and states are packed into device buffers of up to this many bytes (a larger tensor
    // gets a buffer of its own).
    std::size_t pool_bytes = std::size_t(256) << 20;
    // How long run() polls for the forward to finish before it blocks (0: block at once). A device
    // that is the CPU itself (lavapipe) never polls: the polling thread would take a core from it.
    uint32_t spin_wait_us = 20000;
};

// What one recorded forward holds.
struct forward_stats {
    std::size_t dispatches = 0;
    std::size_t barriers = 0;  // between dispatches (not counting the ones around the run)
};

namespace detail {

inline constexpr std::size_t placement_alignment = 256;

inline std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// Where a tensor lives: a range of one of the program's buffers.
struct placement {
    buffer* buf = nullptr;
    std::size_t offset = 0;
    std::size_t bytes = 0;  // the tensor's bytes rounded up to 16 (every placement has that room)
    ops::operand operand() const { return ops::operand::of(*buf, offset, bytes); }
};

// An input or output in the arena with its copy in the host-visible buffer: inputs are copied in
// at the start of each run, outputs out at its end.
struct host_copy {
    int32_t node = -1;
    std::size_t offset = 0;  // in the host-visible buffer
};

class program_state {
public:
    program_state(const context& ctx, ops::kernels& op_kernels, mmvq& mmvq_kernels, const backend_options& options,
                  const graph::graph& g, const graph::plan& p)
        : ctx_(&ctx), ops_(&op_kernels), mmvq_(&mmvq_kernels), graph_(&g), plan_(&p), max_batch_(g.max_batch()) {
        pool_ = LLMRT_VK_CHECK(vk::raii::CommandPool(
            ctx.device(), vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer, ctx.queue_family())));
        forward_ = LLMRT_VK_CHECK(vk::raii::CommandBuffers(
            ctx.device(), vk::CommandBufferAllocateInfo(*pool_, vk::CommandBufferLevel::ePrimary, uint32_t(max_batch_))));
        submit_ = std::make_unique<submission>(ctx, pool_,
                                               ctx.info().type == vk::PhysicalDeviceType::eCpu ? 0 : options.spin_wait_us);
        check_supported(*graph_, *plan_);
        place_tensors(options);
        make_step_context();
        zero_and_upload();
        stats_.resize(std::size_t(max_batch_));
        for (int64_t n = 1; n <= max_batch_; ++n) record_forward(n);
    }

    void run(int64_t n) {
        check(n >= 1 && n <= max_batch_, errc::invalid_argument, [&] {
            return "vulkan backend: run of " + std::to_string(n) + " tokens, the graph was planned for 1.." +
                   std::to_string(max_batch_);
        });
        submit_->submit(*forward_[std::size_t(n - 1)]);
    }

    // Inputs: the host copy, which each run copies to the device. Outputs: the device memory and
    // the host copy (which holds what the device does until the next run).
    void write(graph::tensor t, std::size_t offset, const void* src, std::size_t bytes) {
        if (bytes == 0) return;
        const placement& at = located(t.id);
        const std::size_t copy = host_copy_[std::size_t(t.id)];
        if (copy != none) std::memcpy(static_cast<std::byte*>(io_->mapped()) + copy + offset, src, bytes);
        if (node(t.id).op != graph::op::input) submit_->copy_to_device(*at.buf, at.offset + offset, src, bytes);
    }

    void read(graph::tensor t, std::size_t offset, void* dst, std::size_t bytes) {
        if (bytes == 0) return;
        const placement& at = located(t.id);
        const std::size_t copy = host_copy_[std::size_t(t.id)];
        if (copy != none)
            std::memcpy(dst, static_cast<const std::byte*>(io_->mapped()) + copy + offset, bytes);
        else
            submit_->copy_to_host(*at.buf, at.offset + offset, dst, bytes);
    }

    const forward_stats& stats(int64_t n) const {
        check(n >= 1 && n <= max_batch_, errc::invalid_argument,
              [&] { return "vulkan backend: no forward of " + std::to_string(n) + " tokens was recorded"; });
        return stats_[std::size_t(n - 1)];
    }
    std::size_t device_bytes() const noexcept { return device_bytes_; }

    // Device milliseconds of the forward of n tokens made of the steps `include` accepts (the
    // inputs' and outputs' copies left out), between timestamps: `replays` forwards recorded back
    // to back after one untimed, or (isolated) each submitted alone, the mean.
    double device_ms(int64_t n, const std::function<bool(const graph::step&)>& include, int replays, bool isolated) {
        check(n >= 1 && n <= max_batch_ && replays >= 1, errc::invalid_argument, [&] {
            return "vulkan backend: device_ms of " + std::to_string(n) + " tokens, " + std::to_string(replays) + " replays";
        });
        vk::raii::CommandBuffers cbs = LLMRT_VK_CHECK(
            vk::raii::CommandBuffers(ctx_->device(), vk::CommandBufferAllocateInfo(*pool_, vk::CommandBufferLevel::ePrimary, 1)));
        vk::raii::QueryPool queries = LLMRT_VK_CHECK(
            vk::raii::QueryPool(ctx_->device(), vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, 2)));
        vk::CommandBuffer cmd = *cbs.front();
        auto forwards = [&](int count, int timed_from) {
            LLMRT_VK_CHECK(cmd.reset());
            LLMRT_VK_CHECK(cmd.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit)));
            cmd.resetQueryPool(*queries, 0, 2);
            for (int i = 0; i < count; ++i) {
                ops::recorder r(cmd);
                ops::activation_cache quantized;
                r.barrier();  // after the previous forward
                if (i == timed_from) cmd.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *queries, 0);
                for (std::size_t step = 0; step < plan_->steps.size(); ++step)
                    if (include(plan_->steps[step])) record_step(r, quantized, step, n);
            }
            ops::compute_to_compute_barrier(cmd);
            cmd.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *queries, 1);
            LLMRT_VK_CHECK(cmd.end());
            submit_->submit(cmd);
            const auto [result, stamps] = queries.getResults<uint64_t>(0, 2, 2 * sizeof(uint64_t), sizeof(uint64_t),
                                                                       vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
            check(result == vk::Result::eSuccess, errc::device_error, "vulkan backend: timestamps not ready");
            return double(stamps[1] - stamps[0]) * double(ctx_->info().timestamp_period_ns) * 1e-6;
        };
        if (!isolated) return forwards(replays + 1, 1) / replays;
        double total = 0.0;
        for (int i = 0; i < replays; ++i) total += forwards(1, 0);
        return total / replays;
    }

private:
    static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

    const graph::node& node(int32_t id) const { return graph_->nodes()[std::size_t(id)]; }

    const placement& located(int32_t id) const {
        const placement& at = place_[std::size_t(id)];
        check(at.buf != nullptr, errc::invalid_argument, [&] {
            return "vulkan backend: node " + graph::graph::describe(node(id)) + " has no memory in this plan";
        });
        return at;
    }

    // ---- Preparation ----

    buffer& new_buffer(std::size_t bytes, memory kind) {
        buffers_.push_back(std::make_unique<buffer>(*ctx_, std::max<std::size_t>(bytes, 16), kind));
        if (kind == memory::device_local) device_bytes_ += buffers_.back()->size();
        return *buffers_.back();
    }

    // Packs `ids` (with their plan bytes) into device buffers of up to pool_bytes each.
    void pack(const std::vector<int32_t>& ids, std::size_t pool_bytes) {
        std::vector<std::pair<int32_t, std::size_t>> pending;  // node, offset in the current pool
        std::size_t used = 0;
        auto flush = [&] {
            if (pending.empty()) return;
            buffer& b = new_buffer(used, memory::device_local);
            for (const auto& [id, offset] : pending)
                place_[std::size_t(id)] = {&b, offset, round_up(plan_->bytes[std::size_t(id)], 16)};
            pending.clear();
            used = 0;
        };
        for (int32_t id : ids) {
            const std::size_t bytes = round_up(std::max<std::size_t>(plan_->bytes[std::size_t(id)], 1), placement_alignment);
            if (used > 0 && used + bytes > pool_bytes) flush();
            pending.emplace_back(id, used);
            used += bytes;
        }
        flush();
    }

    void place_tensors(const backend_options& options) {
        const std::size_t n = graph_->size();
        place_.assign(n, placement{});
        host_copy_.assign(n, none);
        std::vector<int32_t> weights, states;
        std::size_t largest_staged = 16;
        for (int32_t id : plan_->order) {
            const auto i = std::size_t(id);
            if (plan_->where[i] == graph::storage::weight) weights.push_back(id);
            if (plan_->where[i] == graph::storage::state) states.push_back(id);
            largest_staged = std::max(largest_staged, plan_->bytes[i]);
        }
        arena_ = &new_buffer(plan_->arena_bytes, memory::device_local);
        pack(weights, options.pool_bytes);
        pack(states, options.pool_bytes);

        // The host-visible buffer: a copy of each input, then of each output held in the arena.
        std::size_t io_bytes = 0;
        auto add_copy = [&](int32_t id, std::vector<host_copy>& list) {
            const auto i = std::size_t(id);
            if (plan_->where[i] != graph::storage::arena || host_copy_[i] != none) return;
            list.push_back({id, io_bytes});
            host_copy_[i] = io_bytes;
            io_bytes += round_up(std::max<std::size_t>(plan_->bytes[i], 1), placement_alignment);
        };
        for (int32_t id : plan_->order)
            if (node(id).op == graph::op::input) add_copy(id, inputs_);
        for (graph::tensor t : graph_->outputs()) add_copy(t.id, outputs_);
        io_ = &new_buffer(io_bytes, memory::host_visible);
        std::memset(io_->mapped(), 0, io_->size());
        for (int32_t id : plan_->order) {
            const auto i = std::size_t(id);
            if (plan_->where[i] == graph::storage::arena) place_[i] = {arena_, plan_->offset[i], round_up(plan_->bytes[i], 16)};
        }
        for (int32_t id : plan_->order)
            if (plan_->where[std::size_t(id)] == graph::storage::alias)
                place_[std::size_t(id)] = place_[std::size_t(plan_->alias_of[std::size_t(id)])];
        submit_->set_staging(new_buffer(std::min(options.staging_bytes, largest_staged), memory::host_visible));
    }

    void zero_and_upload() {
        submit_->record_transfer([&](vk::CommandBuffer cmd) {
            for (const auto& b : buffers_)
                if (b->kind() == memory::device_local) cmd.fillBuffer(b->handle(), 0, VK_WHOLE_SIZE, 0);
        });
        for (int32_t id : plan_->order)
            if (plan_->where[std::size_t(id)] == graph::storage::weight) {
                const placement& at = place_[std::size_t(id)];
                submit_->copy_to_device(*at.buf, at.offset, node(id).data, plan_->bytes[std::size_t(id)]);
            }
    }

    // ---- Recording ----

    ops::operand operand_of(int32_t id) const { return located(id).operand(); }

    ops::operand scratch_of(std::size_t step, const ops::operand& otherwise) const {
        return plan_->scratch_bytes[step]
                   ? ops::operand::of(*arena_, plan_->scratch_offset[step], plan_->scratch_bytes[step])
                   : otherwise;
    }

    void make_step_context() {
        std::size_t counter_bytes = 16;
        for (int32_t id : plan_->order)
            if (node(id).op == graph::op::attention)
                counter_bytes = std::max(counter_bytes, ops::attention_step_counter_bytes(node(id).ne1, node(id).attention.n_head));
        counters_ = &new_buffer(counter_bytes, memory::device_local);
        steps_.g = graph_;
        steps_.p = plan_;
        steps_.kernels = ops_;
        steps_.mmvq = mmvq_;
        steps_.max_batch = max_batch_;
        steps_.operand_of = [this](int32_t id) { return operand_of(id); };
        steps_.scratch_of = [this](std::size_t s) { return scratch_of(s, ops::operand{}); };
        steps_.rounded_of = [this](std::size_t s) {
            return ops::operand::of(*arena_, plan_->rounded_offset[s], plan_->rounded_bytes[s]);
        };
        steps_.counters = ops::operand::of(*counters_);
    }

    // A fused step (steps.hpp), or one node.
    void record_step(ops::recorder& r, ops::activation_cache& quantized, std::size_t step, int64_t n) {
        const graph::step& st = plan_->steps[step];
        switch (st.kind) {
            case graph::step_kind::op: break;
            case graph::step_kind::norm: steps::norm(steps_, r, step, n); return;
            case graph::step_kind::matvec: steps::matvec(steps_, r, step, n); return;
            case graph::step_kind::rope_cache: steps::rope_cache(steps_, r, step, n); return;
            case graph::step_kind::attention: steps::attention(steps_, r, step, n); return;
            case graph::step_kind::swiglu: steps::swiglu(steps_, r, step, n); return;
            case graph::step_kind::experts:  // lowering() turns them off
                throw error(errc::invalid_argument, "vulkan backend: experts steps are not taken (lowering())");
        }
        const int32_t id = st.node;
        const graph::node& nd = node(id);
        const int64_t cols = nd.batched ? n : nd.ne1;
        auto src = [&](int i) -> const graph::node& { return node(nd.src[std::size_t(i)]); };
        auto in = [&](int i) { return operand_of(nd.src[std::size_t(i)]); };
        const ops::operand out = operand_of(id);
        switch (nd.op) {
            case graph::op::input:
            case graph::op::weight:
            case graph::op::state: return;
            case graph::op::get_rows:
                ops::record_get_rows(*ops_, r, src(0).type, in(0), nd.ne0, src(0).ne1, in(1), out, cols);
                return;
            // A grouped norm is the plain norm over columns of `group` elements, and a b shorter
            // than a's columns the plain broadcast over columns of b's length (columns are dense).
            case graph::op::rms_norm: {
                const int64_t group = nd.group ? nd.group : nd.ne0;
                ops::record_rms_norm(*ops_, r, in(0), out, group, cols * (nd.ne0 / group), nd.eps);
                return;
            }
            case graph::op::mul:
            case graph::op::add: {
                const bool broadcast = !src(1).batched && src(1).ne1 == 1;
                const int64_t len = broadcast ? src(1).ne0 : nd.ne0;
                ops::record_elementwise(*ops_, r, nd.op == graph::op::mul ? ops::elementwise_op::mul : ops::elementwise_op::add,
                                        in(0), in(1), out, len, cols * (nd.ne0 / len), broadcast);
                return;
            }
            case graph::op::mul_mat: {
                const graph::node& w = src(0);
                ops::record_mul_mat(*ops_, *mmvq_, r, w.type, in(0), w.ne1, w.ne0, in(1), out, cols, scratch_of(step, out.part(0, 0)),
                                    src(1).batched ? max_batch_ : src(1).ne1, &quantized);
                return;
            }
            case graph::op::rope:
                ops::record_rope(*ops_, r, in(0), in(1), out, cols, nd.rope, nd.n_src() > 2 ? in(2) : ops::operand{});
                return;
            case graph::op::attention:
                ops::record_attention(*ops_, r, in(0), src(1).type, in(1), in(2), src(1).ne1, in(3), out, cols, nd.attention,
                                      scratch_of(step, out.part(0, 0)), nd.n_src() > 4 ? in(4) : ops::operand{});
                return;
            case graph::op::softmax: ops::record_softmax(*ops_, r, in(0), out, nd.ne0, cols); return;
            case graph::op::top_probability: ops::record_top_probability(*ops_, r, in(0), out, src(0).ne0, cols); return;
            case graph::op::silu:
                ops::record_elementwise(*ops_, r, ops::elementwise_op::silu, in(0), in(0), out, nd.ne0, cols, false);
                return;
            case graph::op::swiglu:
                ops::record_elementwise(*ops_, r, ops::elementwise_op::swiglu, in(0), in(1), out, nd.ne0, cols, false);
                return;
            case graph::op::set_rows:
                ops::record_set_rows(*ops_, r, nd.type, out, nd.ne0, nd.ne1, in(1), in(2), src(1).batched ? n : src(1).ne1);
                return;
            case graph::op::argmax:
                ops::record_argmax(*ops_, r, in(0), out, src(0).ne0, cols, scratch_of(step, out.part(0, 0)));
                return;
            case graph::op::top_k:
                ops::record_top_k(*ops_, r, in(0), out, src(0).ne0, nd.ne0, cols, scratch_of(step, out.part(0, 0)));
                return;
            case graph::op::expert_weights:
                ops::record_expert_weights(*ops_, r, in(0), in(1), out, src(0).ne0, nd.ne0, cols, nd.norm);
                return;
            case graph::op::mul_mat_id: {
                const graph::node& w = src(0);
                const int64_t n_used = src(2).ne0;
                ops::record_mul_mat_id(*mmvq_, r, w.type, in(0), w.ne1 / nd.n_expert, w.ne0, nd.n_expert, in(1),
                                       src(1).ne0 / w.ne0, in(2), n_used, out, cols, scratch_of(step, out.part(0, 0)));
                return;
            }
            case graph::op::weighted_sum:
                ops::record_weighted_sum(*ops_, r, in(0), in(1), out, nd.ne0, src(1).ne0, cols);
                return;
            case graph::op::swiglu_oai:
                ops::record_elementwise(*ops_, r, ops::elementwise_op::swiglu_oai, in(0), in(1), out, nd.ne0, cols, false,
                                        nd.alpha, nd.limit);
                return;
            case graph::op::add_id:
                ops::record_add_id(*ops_, r, in(0), in(1), in(2), out, src(1).ne0, nd.n_expert, src(2).ne0, cols);
                return;
            case graph::op::all_reduce:
            case graph::op::all_gather:
            case graph::op::shard_ids:
            case graph::op::shard_weights: break;  // refused when the program is made (check_supported)
        }
        throw error(errc::invalid_argument, std::string("vulkan backend: no kernel for op ") + graph::to_string(nd.op));
    }

    void record_forward(int64_t n) {
        vk::CommandBuffer cmd = *forward_[std::size_t(n - 1)];
        LLMRT_VK_CHECK(cmd.begin(vk::CommandBufferBeginInfo()));
        // What earlier submissions (runs, uploads) wrote is visible to this run, and what they read
        // is not overwritten before they finish.
        const auto earlier = vk::PipelineStageFlagBits::eComputeShader | vk::PipelineStageFlagBits::eTransfer;
        const vk::MemoryBarrier before(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite,
                                       vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite |
                                           vk::AccessFlagBits::eTransferRead | vk::AccessFlagBits::eTransferWrite);
        cmd.pipelineBarrier(earlier, earlier, {}, before, {}, {});
        if (!inputs_.empty()) {
            cmd.copyBuffer(io_->handle(), arena_->handle(), copy_regions(inputs_, n, true));
            const vk::MemoryBarrier copied(vk::AccessFlagBits::eTransferWrite, vk::AccessFlagBits::eShaderRead);
            cmd.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer, vk::PipelineStageFlagBits::eComputeShader, {}, copied,
                                {}, {});
        }
        ops::recorder r(cmd);
        ops::activation_cache quantized;
        for (std::size_t step = 0; step < plan_->steps.size(); ++step) record_step(r, quantized, step, n);
        if (!outputs_.empty()) {
            const vk::MemoryBarrier to_copy(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eTransferRead);
            cmd.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eTransfer, {}, to_copy,
                                {}, {});
            cmd.copyBuffer(arena_->handle(), io_->handle(), copy_regions(outputs_, n, false));
            const vk::MemoryBarrier to_host(vk::AccessFlagBits::eTransferWrite, vk::AccessFlagBits::eHostRead);
            cmd.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer, vk::PipelineStageFlagBits::eHost, {}, to_host, {}, {});
        }
        LLMRT_VK_CHECK(cmd.end());
        stats_[std::size_t(n - 1)] = {r.dispatches(), r.barriers()};
    }

    // The live columns of each tensor of `list`, host copy -> arena (to_device) or back.
    std::vector<vk::BufferCopy> copy_regions(const std::vector<host_copy>& list, int64_t n, bool to_device) const {
        std::vector<vk::BufferCopy> regions;
        for (const host_copy& c : list) {
            const graph::node& nd = node(c.node);
            const std::size_t bytes = graph::column_bytes(nd.type, nd.ne0) * std::size_t(nd.batched ? n : nd.ne1);
            const std::size_t arena_offset = plan_->offset[std::size_t(c.node)];
            regions.emplace_back(to_device ? c.offset : arena_offset, to_device ? arena_offset : c.offset, bytes);
        }
        return regions;
    }

    const context* ctx_;
    ops::kernels* ops_;
    mmvq* mmvq_;
    const graph::graph* graph_;
    const graph::plan* plan_;
    int64_t max_batch_;
    std::vector<std::unique_ptr<buffer>> buffers_;
    buffer* arena_ = nullptr;
    buffer* io_ = nullptr;
    std::size_t device_bytes_ = 0;
    std::vector<placement> place_;
    std::vector<std::size_t> host_copy_;  // per node: offset of its host copy, or none
    std::vector<host_copy> inputs_, outputs_;
    std::vector<forward_stats> stats_;
    buffer* counters_ = nullptr;  // the attention steps' (zero between dispatches)
    steps::context steps_;
    vk::raii::CommandPool pool_{nullptr};
    vk::raii::CommandBuffers forward_{nullptr};
    std::unique_ptr<submission> submit_;  // submissions and staged copies
};

}  // namespace detail

class backend {
public:
    explicit backend(const context& ctx, backend_options options = {})
        : ctx_(&ctx), options_(options), mmvq_(std::make_unique<mmvq>(ctx)), ops_(std::make_unique<ops::kernels>(ctx)) {
        check(options.staging_bytes >= 16 && options.pool_bytes >= detail::placement_alignment, errc::invalid_argument, [&] {
            return "vulkan::backend: staging_bytes " + std::to_string(options.staging_bytes) + " and pool_bytes " +
                   std::to_string(options.pool_bytes) + " must be at least 16 and 256";
        });
    }

    std::string_view name() const noexcept { return "vulkan"; }

    // Every fusion but stacked products, carried steps, grouped norms, matvec biases, the norms
    // in the rope_cache step and the experts steps (steps.hpp records each kind); the Q8_1 roundings producers write are in the layout of
    // ops/mul_mat.hpp's scratch.
    graph::lower_options lowering() const noexcept {
        graph::lower_options o;
        o.stack_products = false;
        o.carry_swiglu = false;
        o.carry_expert_weights = false;
        o.carry_norm = false;
        o.grouped_norms = false;
        o.experts = false;
        o.matvec_biases = false;
        o.rope_norms = false;
        return o;
    }
    std::size_t rounded_bytes(int64_t k, int64_t cols) const { return ops::detail::activation_scratch_bytes(k, cols); }
    const context& device() const noexcept { return *ctx_; }
    const backend_options& options() const noexcept { return options_; }
    mmvq& mmvq_kernels() noexcept { return *mmvq_; }
    ops::kernels& op_kernels() noexcept { return *ops_; }

    // mul_mat with quantized W: the Q8_1 activations; attention: the scores of every (token, head);
    // argmax over long columns: the winners of their chunks; top_k over long columns: the best k
    // keys of each slice.
    std::size_t scratch_bytes(const graph::graph& g, const graph::node& nd) const {
        if (nd.op == graph::op::mul_mat) {
            const graph::node& w = g.nodes()[std::size_t(nd.src[0])];
            check(!is_in<weight_types>(w.type) || w.ne0 % 32 == 0, errc::shape_mismatch, [&] {
                return "vulkan backend: mul_mat with " + graph::graph::describe(w) +
                       " rounds activations through Q8_1, which needs k a multiple of 32";
            });
            return ops::mul_mat_scratch_bytes(w.type, w.ne0, nd.ne1);
        }
        if (nd.op == graph::op::attention)  // as one node (ops/attention.hpp) or as a fused step (steps.hpp)
            return std::max(ops::attention_scratch_bytes(nd.ne1, nd.attention.n_head, g.nodes()[std::size_t(nd.src[1])].ne1),
                            steps::attention_scratch_bytes(g, nd));
        if (nd.op == graph::op::argmax) return ops::argmax_scratch_bytes(g.nodes()[std::size_t(nd.src[0])].ne0, nd.ne1);
        if (nd.op == graph::op::top_k) return ops::top_k_scratch_bytes(g.nodes()[std::size_t(nd.src[0])].ne0, nd.ne0, nd.ne1);
        if (nd.op == graph::op::mul_mat_id) {
            const graph::node& w = g.nodes()[std::size_t(nd.src[0])];
            check(w.ne0 % 32 == 0, errc::shape_mismatch, [&] {
                return "vulkan backend: mul_mat_id with " + graph::graph::describe(w) +
                       " rounds activations through Q8_1, which needs k a multiple of 32";
            });
            return ops::mul_mat_id_scratch_bytes(w.ne0, g.nodes()[std::size_t(nd.src[1])].ne0 / w.ne0, nd.ne1);
        }
        return 0;
    }

    class program;
    program prepare(const graph::graph& g, const graph::plan& p);

private:
    const context* ctx_;
    backend_options options_;
    std::unique_ptr<mmvq> mmvq_;
    std::unique_ptr<ops::kernels> ops_;
};

// A graph prepared on the device: its memory, pipelines and one recorded forward per batch size.
class backend::program {
public:
    void run(int64_t n_tokens) { state_->run(n_tokens); }
    void write(graph::tensor t, std::size_t offset, const void* src, std::size_t bytes) { state_->write(t, offset, src, bytes); }
    void read(graph::tensor t, std::size_t offset, void* dst, std::size_t bytes) const { state_->read(t, offset, dst, bytes); }

    // The dispatches and barriers of the forward recorded for n tokens.
    const forward_stats& stats(int64_t n_tokens) const { return state_->stats(n_tokens); }
    // Device-local bytes the program allocated (arena, weights, states).
    std::size_t device_bytes() const noexcept { return state_->device_bytes(); }
    // Device time of the forward of n tokens made of the steps `include` accepts (the values it
    // computes are garbage when steps are left out: for timing only).
    double device_ms(int64_t n_tokens, const std::function<bool(const graph::step&)>& include, int replays = 20,
                     bool isolated = false) {
        return state_->device_ms(n_tokens, include, replays, isolated);
    }

private:
    friend class backend;
    explicit program(std::unique_ptr<detail::program_state> s) : state_(std::move(s)) {}
    std::unique_ptr<detail::program_state> state_;
};

inline backend::program backend::prepare(const graph::graph& g, const graph::plan& p) {
    return program(std::make_unique<detail::program_state>(*ctx_, *ops_, *mmvq_, options_, g, p));
}

static_assert(graph::backend<backend>, "vulkan::backend must model llmrt::graph::backend");

}  // namespace llmrt::vulkan
