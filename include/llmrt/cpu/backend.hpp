// cpu::backend: the reference backend of the graph executor. Single-threaded, every op in a fixed
// order, so a run gives the same bits every time; a column's results do not depend on the batch.
//
// Quantized weights meet activations rounded through Q8_1 by default, as the GPU mmvq kernels
// compute them, which makes this backend the ground truth for those kernels; f32/f16/bf16 weights
// meet float activations. Both are options, so that llmrt-compare can set two CPU configurations
// against each other.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "llmrt/cpu/matvec.hpp"
#include "llmrt/cpu/mul_mat.hpp"
#include "llmrt/cpu/ops.hpp"
#include "llmrt/graph/backend.hpp"

namespace llmrt::cpu {

struct backend_options {
    activation_format quantized_activations = activation_format::q8_1;  // for block-quantized weights
    activation_format float_activations = activation_format::f32;       // for f32, f16 and bf16 weights
};

inline const char* to_string(activation_format a) noexcept {
    switch (a) {
        case activation_format::f32: return "f32";
        case activation_format::q8_1: return "q8_1";
        case activation_format::ggml: return "ggml";
    }
    return "unknown";
}

class backend {
public:
    explicit backend(backend_options options = {}) : options_(options) {}

    std::string_view name() const noexcept { return "cpu"; }
    const backend_options& options() const noexcept { return options_; }

    activation_format activations_for(qtype weight_type) const noexcept {
        const bool plain = weight_type == qtype::f32 || weight_type == qtype::f16 || weight_type == qtype::bf16;
        return plain ? options_.float_activations : options_.quantized_activations;
    }

    // mul_mat: the rounded activations and a dequantized row; attention: one score per position.
    std::size_t scratch_bytes(const graph::graph& g, const graph::node& nd) const {
        if (nd.op == graph::op::mul_mat) {
            const graph::node& w = g.nodes()[std::size_t(nd.src[0])];
            check(activations_for(w.type) != activation_format::q8_1 || w.ne0 % 32 == 0, errc::shape_mismatch, [&] {
                return "cpu backend: mul_mat with " + graph::graph::describe(w) +
                       " rounds activations through Q8_1, which needs k a multiple of 32";
            });
            return mul_mat_scratch_bytes(w.type, w.ne0, nd.ne1, activations_for(w.type));
        }
        if (nd.op == graph::op::attention) return std::size_t(g.nodes()[std::size_t(nd.src[1])].ne1) * sizeof(float);
        return 0;
    }

    class program;
    program prepare(const graph::graph& g, const graph::plan& p) const;

private:
    backend_options options_;
};

// A graph prepared on the CPU: the arena, the states and every step's resolved pointers.
class backend::program {
public:
    void run(int64_t n_tokens) {
        for (const step& s : steps_) run_step(s, n_tokens);
    }

    void write(graph::tensor t, std::size_t offset, const void* src, std::size_t bytes) {
        if (bytes) std::memcpy(static_cast<std::byte*>(address(t.id)) + offset, src, bytes);
    }
    void read(graph::tensor t, std::size_t offset, void* dst, std::size_t bytes) const {
        if (bytes) std::memcpy(dst, static_cast<const std::byte*>(address(t.id)) + offset, bytes);
    }

private:
    friend class backend;

    struct step {
        const graph::node* nd;
        const graph::node* src_nd[4];
        void* dst;
        const void* src[4];
        void* scratch;
        std::size_t scratch_bytes;
        activation_format act;
    };

    void* address(int32_t id) const {
        const auto i = std::size_t(id);
        switch (plan_->where[i]) {
            case graph::storage::arena: return arena_.data() + plan_->offset[i];
            case graph::storage::weight: return const_cast<void*>(graph_->nodes()[i].data);
            case graph::storage::state:
            case graph::storage::alias: return states_[state_index_[std::size_t(plan_->state_of(id))]].data();
            case graph::storage::none: break;
        }
        throw error(errc::invalid_argument, "cpu backend: node " + graph::graph::describe(graph_->nodes()[i]) +
                                                " has no memory in this plan");
    }

    static void run_step(const step& s, int64_t n) {
        const graph::node& nd = *s.nd;
        const int64_t cols = nd.batched ? n : nd.ne1;
        const auto* a = static_cast<const float*>(s.src[0]);
        const auto* b = static_cast<const float*>(s.src[1]);
        float* y = static_cast<float*>(s.dst);
        switch (nd.op) {
            case graph::op::input:
            case graph::op::weight:
            case graph::op::state: return;
            case graph::op::get_rows:
                get_rows(s.src_nd[0]->type, s.src[0], nd.ne0, s.src_nd[0]->ne1, static_cast<const int32_t*>(s.src[1]),
                         y, cols);
                return;
            case graph::op::rms_norm: rms_norm(a, y, nd.ne0, cols, nd.eps); return;
            case graph::op::mul: mul(a, b, y, nd.ne0, cols, !s.src_nd[1]->batched && s.src_nd[1]->ne1 == 1); return;
            case graph::op::add: add(a, b, y, nd.ne0, cols, !s.src_nd[1]->batched && s.src_nd[1]->ne1 == 1); return;
            case graph::op::mul_mat: {
                const graph::node& w = *s.src_nd[0];
                mul_mat(w.type, s.src[0], b, y, matvec_shape{w.ne1, w.ne0, cols, 0, 0}, s.act, s.scratch,
                        s.scratch_bytes);
                return;
            }
            case graph::op::rope: rope(a, y, static_cast<const int32_t*>(s.src[1]), cols, nd.rope); return;
            case graph::op::attention:
                attention(a, s.src_nd[1]->type, s.src[1], s.src[2], s.src_nd[1]->ne1,
                          static_cast<const int32_t*>(s.src[3]), y, cols, nd.attention, static_cast<float*>(s.scratch));
                return;
            case graph::op::softmax: softmax(a, y, nd.ne0, cols); return;
            case graph::op::silu: silu(a, y, nd.ne0 * cols); return;
            case graph::op::swiglu: swiglu(a, b, y, nd.ne0 * cols); return;
            case graph::op::set_rows:
                set_rows(nd.type, s.dst, nd.ne0, nd.ne1, b, static_cast<const int32_t*>(s.src[2]), n);
                return;
            case graph::op::argmax: argmax(a, static_cast<int32_t*>(s.dst), s.src_nd[0]->ne0, cols); return;
        }
        throw error(errc::invalid_argument, std::string("cpu backend: no kernel for op ") + graph::to_string(nd.op));
    }

    const graph::graph* graph_ = nullptr;
    const graph::plan* plan_ = nullptr;
    mutable std::vector<std::byte> arena_;
    mutable std::vector<std::vector<std::byte>> states_;
    std::vector<std::size_t> state_index_;  // per node: index into states_ for state nodes
    std::vector<step> steps_;
};

inline backend::program backend::prepare(const graph::graph& g, const graph::plan& p) const {
    program prog;
    prog.graph_ = &g;
    prog.plan_ = &p;
    prog.arena_.assign(p.arena_bytes, std::byte{0});
    const auto& nodes = g.nodes();
    prog.state_index_.assign(nodes.size(), 0);
    for (int32_t id : p.order)
        if (p.where[std::size_t(id)] == graph::storage::state) {
            prog.state_index_[std::size_t(id)] = prog.states_.size();
            prog.states_.emplace_back(p.bytes[std::size_t(id)], std::byte{0});
        }
    for (int32_t id : p.order) {
        const graph::node& nd = nodes[std::size_t(id)];
        if (nd.op == graph::op::input || nd.op == graph::op::weight || nd.op == graph::op::state) continue;
        program::step s{};
        s.nd = &nd;
        s.dst = prog.address(id);
        for (int i = 0; i < nd.n_src(); ++i) {
            s.src_nd[i] = &nodes[std::size_t(nd.src[std::size_t(i)])];
            s.src[i] = prog.address(nd.src[std::size_t(i)]);
        }
        s.scratch = p.scratch_bytes[std::size_t(id)] ? prog.arena_.data() + p.scratch_offset[std::size_t(id)] : nullptr;
        s.scratch_bytes = p.scratch_bytes[std::size_t(id)];
        if (nd.op == graph::op::mul_mat) s.act = activations_for(s.src_nd[0]->type);
        prog.steps_.push_back(s);
    }
    return prog;
}

}  // namespace llmrt::cpu
