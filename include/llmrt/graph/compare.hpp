// Node-by-node comparison of one graph run on two executors (two backends, or two
// configurations of one), to find the op where results part ways.
//
//   graph::executor<cpu::backend> ref(cpu, g, {.reuse_memory = false});
//   graph::executor<cuda::backend> gpu(cuda, g, {.reuse_memory = false});
//   ... write the same inputs to both, run both ...
//   for (const auto& d : graph::compare_nodes(ref, gpu, n_tokens)) print(d.name, d.nmse);
//
// Both executors must hold the same graph, planned without memory reuse (so that every node's
// result is still there after the run). f32 and f16 results are compared by
//   nmse = Σ (b − a)² / Σ a²   (0 when both are all zero, inf when only a is),
// i32 results (argmax, ids) by the fraction of elements that differ. Weights are skipped, and so
// are nodes that either plan computes inside a fused step without keeping them (plan both with
// plan_options::fuse = false to see every node).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/graph/executor.hpp"

namespace llmrt::graph {

struct node_difference {
    int32_t id = -1;
    std::string name;
    llmrt::graph::op op = llmrt::graph::op::input;
    qtype type = qtype::f32;
    int64_t ne0 = 0, ne1 = 0;  // the compared shape (live columns of batched nodes)
    double nmse = 0.0;         // f32 / f16 results
    double max_abs = 0.0;      // f32 / f16 results: largest |b − a|
    double mismatch = 0.0;     // i32 results: fraction of differing elements
};

namespace detail {

inline std::vector<float> read_as_floats(const auto& ex, tensor t, qtype type, std::size_t count) {
    std::vector<float> out(count);
    if (type == qtype::f32) {
        ex.read(t, std::span<float>(out));
    } else {
        std::vector<uint16_t> half(count);
        ex.read(t, std::span<uint16_t>(half));
        for (std::size_t i = 0; i < count; ++i) out[i] = fp16_to_fp32(half[i]);
    }
    return out;
}

}  // namespace detail

// Every planned non-weight node of `a`'s graph in execution order, with how far b's result is
// from a's after both ran the same n_tokens batch.
template <class BackendA, class BackendB>
std::vector<node_difference> compare_nodes(const executor<BackendA>& a, const executor<BackendB>& b, int64_t n_tokens) {
    const graph& ga = a.get_graph();
    const graph& gb = b.get_graph();
    check(ga.size() == gb.size() && !a.get_plan().reuses_memory && !b.get_plan().reuses_memory, errc::invalid_argument,
          "compare_nodes: both executors must hold the same graph, planned with reuse_memory = false");
    std::vector<node_difference> out;
    for (int32_t id : a.get_plan().order) {
        const node& nd = ga.nodes()[std::size_t(id)];
        const node& other = gb.nodes()[std::size_t(id)];
        check(nd.op == other.op && nd.ne0 == other.ne0 && nd.ne1 == other.ne1 && nd.type == other.type,
              errc::invalid_argument, [&] {
                  return "compare_nodes: node " + std::to_string(id) + " is " + graph::describe(nd) + " in one graph and " +
                         graph::describe(other) + " in the other";
              });
        if (nd.op == op::weight) continue;
        // A node one backend computes inside a fused step (and never writes) has nothing to compare.
        auto kept = [&](const plan& p) { return p.where[std::size_t(id)] != storage::fused && p.dense(id, ga); };
        if (!kept(a.get_plan()) || !kept(b.get_plan())) continue;
        node_difference d;
        d.id = id;
        d.name = nd.name;
        d.op = nd.op;
        d.type = nd.type;
        d.ne0 = nd.ne0;
        d.ne1 = nd.batched ? n_tokens : nd.ne1;
        const auto count = std::size_t(d.ne0 * d.ne1);
        const tensor t{id};
        if (nd.type == i32_type) {
            std::vector<int32_t> va(count), vb(count);
            a.read(t, std::span<int32_t>(va));
            b.read(t, std::span<int32_t>(vb));
            std::size_t differ = 0;
            for (std::size_t i = 0; i < count; ++i) differ += va[i] != vb[i];
            d.mismatch = count ? double(differ) / double(count) : 0.0;
        } else if (nd.type == qtype::f32 || nd.type == qtype::f16) {
            const auto va = detail::read_as_floats(a, t, nd.type, count);
            const auto vb = detail::read_as_floats(b, t, nd.type, count);
            double num = 0.0, den = 0.0;
            for (std::size_t i = 0; i < count; ++i) {
                const double diff = double(vb[i]) - double(va[i]);
                num += diff * diff;
                den += double(va[i]) * double(va[i]);
                d.max_abs = std::max(d.max_abs, std::fabs(diff));
                if (std::isnan(diff)) d.max_abs = std::numeric_limits<double>::infinity();
            }
            d.nmse = den > 0.0 ? num / den : (num > 0.0 ? std::numeric_limits<double>::infinity() : 0.0);
            if (std::isnan(d.nmse)) d.nmse = std::numeric_limits<double>::infinity();
        } else {
            continue;  // quantized non-weights do not occur in llmrt graphs
        }
        out.push_back(std::move(d));
    }
    return out;
}

}  // namespace llmrt::graph
