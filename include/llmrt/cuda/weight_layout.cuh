// Where the CUDA backend puts every weight in its one weight buffer (backend.cuh uploads them
// there): policy of the program, apart from the kernels that read them.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

#include "llmrt/graph/plan.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda {

// offset: per node, the byte offset of a weight in the buffer; bytes: the buffer's size;
// concatenated, concatenated_bias: per step (see lay_out_weights).
struct weight_layout {
    std::vector<std::size_t> offset;
    std::size_t bytes = 0;
    std::vector<int32_t> concatenated, concatenated_bias;
};

// Where every weight goes in the one weight buffer. The weights of a stacked matvec step's
// products, when they share a type and k and appear nowhere else, go side by side with nothing
// between them: one matrix of rows_total rows that one mmvq launch reads (concatenated[step] is
// the first product's weight node, else -1), and their biases where every product has one
// (concatenated_bias[step]: the first bias node, else -1). The same for a stacked experts step's
// two sets of experts of one type and shape (one batch of 2 · n_expert matrices).
template <class Types>
weight_layout lay_out_weights(const graph::graph& g, const graph::plan& p) {
    weight_layout layout;
    layout.offset.assign(g.size(), 0);
    std::vector<std::size_t>& offset = layout.offset;
    std::size_t& bytes = layout.bytes;
    std::vector<int32_t>& concatenated = layout.concatenated;
    std::vector<int32_t>& concatenated_bias = layout.concatenated_bias;
    const auto& nodes = g.nodes();
    constexpr std::size_t align = 256;
    auto round_up = [](std::size_t b) { return (b + align - 1) / align * align; };
    std::vector<uint8_t> placed(nodes.size(), 0);
    std::vector<int32_t> uses(nodes.size(), 0);
    for (int32_t id : p.order)
        for (int k = 0; k < nodes[std::size_t(id)].n_src(); ++k) ++uses[std::size_t(nodes[std::size_t(id)].src[std::size_t(k)])];
    concatenated.assign(p.steps.size(), -1);
    concatenated_bias.assign(p.steps.size(), -1);
    auto put_side_by_side = [&](const std::vector<int32_t>& ws) {
        bytes = round_up(bytes);
        for (int32_t w : ws) {
            offset[std::size_t(w)] = bytes;
            bytes += p.bytes[std::size_t(w)];
            placed[std::size_t(w)] = 1;
        }
    };
    // Two weight nodes of one type and shape, each read once, not placed yet.
    auto twins = [&](const std::vector<int32_t>& ws) {
        if (ws.size() != 2 || ws[0] == ws[1]) return false;
        const graph::node& a = nodes[std::size_t(ws[0])];
        const graph::node& b = nodes[std::size_t(ws[1])];
        return a.op == graph::op::weight && b.op == graph::op::weight && a.type == b.type && a.ne0 == b.ne0 &&
               a.ne1 == b.ne1 && !placed[std::size_t(ws[0])] && !placed[std::size_t(ws[1])] &&
               uses[std::size_t(ws[0])] == 1 && uses[std::size_t(ws[1])] == 1;
    };
    for (std::size_t si = 0; si < p.steps.size(); ++si) {
        const graph::step& st = p.steps[si];
        if (!st.stacked) continue;
        std::vector<int32_t> weights, biases;  // of the products, in order (an add's or add_id's bias)
        for (int32_t id : st.nodes) {
            const graph::node& nd = nodes[std::size_t(id)];
            if (nd.op == graph::op::mul_mat || nd.op == graph::op::mul_mat_id) weights.push_back(nd.src[0]);
            else biases.push_back(nd.src[1]);
        }
        if (st.kind == graph::step_kind::matvec) {
            // Products of one type and k, each weight read once; their biases, where every
            // product has one, side by side too.
            const graph::node& w0 = nodes[std::size_t(weights[0])];
            bool side_by_side = biases.empty() || biases.size() == weights.size();
            for (int32_t w : weights) {
                const graph::node& wn = nodes[std::size_t(w)];
                side_by_side = side_by_side && wn.type == w0.type && wn.ne0 == w0.ne0 && !placed[std::size_t(w)] &&
                               uses[std::size_t(w)] == 1 && is_in<Types>(wn.type);
            }
            for (int32_t b : biases) side_by_side = side_by_side && !placed[std::size_t(b)] && uses[std::size_t(b)] == 1;
            for (std::size_t a = 0; a < weights.size() && side_by_side; ++a)
                for (std::size_t b = a + 1; b < weights.size(); ++b) side_by_side = side_by_side && weights[a] != weights[b];
            for (std::size_t a = 0; a < biases.size() && side_by_side; ++a)
                for (std::size_t b = a + 1; b < biases.size(); ++b) side_by_side = side_by_side && biases[a] != biases[b];
            if (!side_by_side) continue;
            put_side_by_side(weights);
            concatenated[si] = weights[0];
            if (!biases.empty()) {
                put_side_by_side(biases);
                concatenated_bias[si] = biases[0];
            }
            continue;
        }
        if (st.kind == graph::step_kind::experts) {  // two sets of experts of one type and shape
            if (!twins(weights) || !is_in<Types>(nodes[std::size_t(weights[0])].type) || (!biases.empty() && !twins(biases)))
                continue;
            put_side_by_side(weights);
            concatenated[si] = weights[0];
            if (!biases.empty()) {
                put_side_by_side(biases);
                concatenated_bias[si] = biases[0];
            }
        }
    }
    for (int32_t id : p.order) {
        const auto i = std::size_t(id);
        if (p.where[i] != graph::storage::weight || placed[i]) continue;
        bytes = round_up(bytes);
        offset[i] = bytes;
        bytes += p.bytes[i];
        placed[i] = 1;
    }
    return layout;
}

}  // namespace llmrt::cuda
