// What a backend provides to run planned graphs. A backend turns a (graph, plan) pair into a
// program: at that point it allocates everything the graph will ever use (the arena, the state
// buffers, the uploaded weights); running the program afterwards allocates nothing.
//
//   B::scratch_bytes(graph, node) extra memory the backend's kernel for `node` needs, at the
//                                graph's largest batch (the planner gives it arena bytes)
//   B::lowering()                the fusions the backend runs (graph/lower.hpp): the planner
//                                lowers the graph into steps with them
//   B::rounded_bytes(k, cols)    bytes of the Q8_1 rounding of cols columns of k floats that a
//                                step hands to a matvec step (the backend's own layout)
//   B::prepare(graph, plan)      -> B::program: allocate the arena and the states (zeroed), upload
//                                the weights; may keep references to graph and plan, which the
//                                caller keeps alive and unchanged as long as the program
//   program.run(n_tokens)        run every step of the plan (plan.steps) for a batch of n_tokens columns
//                                (CPU: a loop over the ops; CUDA: one stream, the forward captured
//                                once per batch size in a CUDA graph and replayed; Vulkan: one
//                                command buffer per forward with the barriers it needs)
//   program.write(t, offset, src, bytes)   host -> tensor t's memory, at byte `offset`
//   program.read(t, offset, dst, bytes)    tensor t's memory -> host, after the last run finished
//
// write and read reach inputs, outputs, states (and, in a plan without memory reuse, every
// node); they are the only host <-> device traffic.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "llmrt/graph/graph.hpp"
#include "llmrt/graph/plan.hpp"

namespace llmrt::graph {

template <class P>
concept backend_program = std::movable<P> && requires(P& p, const P& cp, tensor t, std::size_t offset,
                                                     const void* src, void* dst, std::size_t bytes, int64_t n) {
    p.run(n);
    p.write(t, offset, src, bytes);
    cp.read(t, offset, dst, bytes);
};

template <class B>
concept backend = requires(B& b, const B& cb, const graph& g, const plan& p, const node& nd, int64_t n) {
    { cb.name() } -> std::convertible_to<std::string_view>;
    { cb.scratch_bytes(g, nd) } -> std::convertible_to<std::size_t>;
    { cb.lowering() } -> std::convertible_to<lower_options>;
    { cb.rounded_bytes(n, n) } -> std::convertible_to<std::size_t>;
    { b.prepare(g, p) } -> backend_program;
};

}  // namespace llmrt::graph
