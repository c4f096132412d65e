// What the Vulkan backend runs: the ops (and weight types) a program may hold, checked when it
// is made so that a graph the backend cannot run is refused before anything is allocated.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/graph/graph.hpp"
#include "llmrt/graph/plan.hpp"
#include "llmrt/vulkan/ops/moe.hpp"
#include "llmrt/vulkan/ops/mul_mat.hpp"
#include "llmrt/vulkan/ops/rows.hpp"

namespace llmrt::vulkan {

// Every planned op of p is one the Vulkan backend can run, with types it handles; else an
// llmrt::error naming the node.
inline void check_supported(const graph::graph& g, const graph::plan& p) {
    for (int32_t id : p.order) {
        const graph::node& nd = g.nodes()[std::size_t(id)];
        auto src = [&](int i) -> const graph::node& { return g.nodes()[std::size_t(nd.src[std::size_t(i)])]; };
        switch (nd.op) {
            case graph::op::get_rows:
                check(ops::has_get_rows(src(0).type), errc::unsupported_type, [&] {
                    return "vulkan backend: get_rows " + graph::graph::describe(nd) + " reads table " +
                           graph::graph::describe(src(0)) + ", whose type has no get_rows shader";
                });
                break;
            case graph::op::mul_mat:
                check(ops::has_mul_mat(src(0).type), errc::unsupported_type, [&] {
                    return "vulkan backend: mul_mat " + graph::graph::describe(nd) + " has W " +
                           graph::graph::describe(src(0)) + "; W must be f32, f16, bf16 or a weight type";
                });
                break;
            case graph::op::mul_mat_id:
                check(ops::has_mul_mat_id(src(0).type), errc::unsupported_type, [&] {
                    return "vulkan backend: mul_mat_id " + graph::graph::describe(nd) + " has experts " +
                           graph::graph::describe(src(0)) + "; the Vulkan backend takes experts of a weight type";
                });
                break;
            default: break;
        }
        check(nd.op != graph::op::all_reduce && nd.op != graph::op::all_gather && nd.op != graph::op::shard_ids &&
                  nd.op != graph::op::shard_weights,
              errc::unsupported_type, [&] {
                  return "vulkan backend: " + graph::graph::describe(nd) +
                         " (tensor or expert parallelism) is not supported on this backend yet";
              });
    }
}

}  // namespace llmrt::vulkan
