// The planner: execution order and memory layout of a graph, fixed before anything runs.
//
//   order     the nodes the outputs (and every KV write) depend on, inputs first, then a
//             depth-first post-order from the outputs: each node after everything it reads
//   liveness  a tensor lives from the step that writes it to the last step that reads it;
//             inputs live through the whole run (the host writes them before it, and what it
//             wrote stays for the next run), outputs until the end
//   memory    one arena per plan; a tensor takes the first free block that fits (first fit,
//             adjacent free blocks merged) and returns it after its last reader has run, so two
//             tensors share bytes only when their lifetimes do not overlap. An op's scratch lives
//             for its own step. Sizes are those of the largest batch, so any batch fits.
//
// Weights stay where the backend uploads them, states get persistent buffers of their own, and
// a set_rows result is its cache: none of these take arena memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "llmrt/graph/graph.hpp"

namespace llmrt::graph {

enum class storage : uint8_t {
    none,    // not part of the plan (nothing the outputs need reads it)
    arena,   // at plan::offset[i] in the arena
    weight,  // the weight's bytes, as the backend uploaded them
    state,   // the state's own persistent buffer
    alias,   // the memory of state node plan::alias_of[i] (a set_rows result)
};

struct plan_options {
    bool reuse_memory = true;     // false: every tensor keeps its own bytes (for inspecting all nodes)
    std::size_t alignment = 256;  // every arena offset is a multiple of this (a power of two)
};

struct plan {
    std::vector<int32_t> order;            // node ids in execution order
    std::vector<storage> where;            // per node
    std::vector<std::size_t> offset;       // per node: arena byte offset (storage::arena)
    std::vector<std::size_t> bytes;        // per node: bytes at the largest batch
    std::vector<int32_t> alias_of;         // per node: the state a set_rows result is (storage::alias)
    std::vector<std::size_t> scratch_offset;  // per node: arena offset of its scratch
    std::vector<std::size_t> scratch_bytes;   // per node: 0 when it needs none
    std::vector<int32_t> first_step;       // per node: step that writes it (-1 if unplanned)
    std::vector<int32_t> last_step;        // per node: last step that reads it (order.size() for inputs, outputs)
    std::size_t arena_bytes = 0;
    bool reuses_memory = true;             // plan_options::reuse_memory

    // The state node whose memory tensor t occupies (t itself for a state), or -1.
    int32_t state_of(int32_t t) const {
        if (where[std::size_t(t)] == storage::state) return t;
        if (where[std::size_t(t)] == storage::alias) return alias_of[std::size_t(t)];
        return -1;
    }
};

namespace detail {

// First-fit allocator over [0, end) with a sorted list of free blocks.
class first_fit {
public:
    explicit first_fit(std::size_t alignment) : alignment_(alignment) {}

    std::size_t allocate(std::size_t bytes) {
        bytes = round_up(std::max<std::size_t>(bytes, 1));
        for (std::size_t i = 0; i < free_.size(); ++i) {
            if (free_[i].size < bytes) continue;
            const std::size_t at = free_[i].offset;
            free_[i].offset += bytes;
            free_[i].size -= bytes;
            if (free_[i].size == 0) free_.erase(free_.begin() + std::ptrdiff_t(i));
            return at;
        }
        // Grow the arena, starting inside a free block that touches its end.
        std::size_t at = end_;
        if (!free_.empty() && free_.back().offset + free_.back().size == end_) {
            at = free_.back().offset;
            free_.pop_back();
        }
        end_ = at + bytes;
        return at;
    }

    void release(std::size_t offset, std::size_t bytes) {
        bytes = round_up(std::max<std::size_t>(bytes, 1));
        auto it = std::lower_bound(free_.begin(), free_.end(), offset,
                                   [](const block& b, std::size_t o) { return b.offset < o; });
        it = free_.insert(it, block{offset, bytes});
        // Merge with the following, then the preceding neighbour.
        if (auto next = it + 1; next != free_.end() && it->offset + it->size == next->offset) {
            it->size += next->size;
            free_.erase(next);
        }
        if (it != free_.begin()) {
            auto prev = it - 1;
            if (prev->offset + prev->size == it->offset) {
                prev->size += it->size;
                free_.erase(it);
            }
        }
    }

    std::size_t end() const noexcept { return end_; }

private:
    struct block {
        std::size_t offset, size;
    };
    std::size_t round_up(std::size_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }

    std::size_t alignment_;
    std::size_t end_ = 0;
    std::vector<block> free_;
};

}  // namespace detail

// Plans g; scratch_bytes(node) says how much scratch memory the backend needs for a node at the
// largest batch (0 for none).
inline plan make_plan(const graph& g, const std::function<std::size_t(const node&)>& scratch_bytes,
                      plan_options options = {}) {
    check(options.alignment > 0 && (options.alignment & (options.alignment - 1)) == 0, errc::invalid_argument,
          [&] { return "make_plan: alignment " + std::to_string(options.alignment) + " is not a power of two"; });
    check(!g.outputs().empty(), errc::invalid_argument, "make_plan: the graph has no outputs");
    const auto& nodes = g.nodes();
    const std::size_t n = nodes.size();
    plan p;
    p.reuses_memory = options.reuse_memory;
    p.where.assign(n, storage::none);
    p.offset.assign(n, 0);
    p.bytes.assign(n, 0);
    p.alias_of.assign(n, -1);
    p.scratch_offset.assign(n, 0);
    p.scratch_bytes.assign(n, 0);
    p.first_step.assign(n, -1);
    p.last_step.assign(n, -1);

    // Depth-first post-order from the roots: the outputs, then every KV write (a side effect the
    // outputs may not read). An explicit stack keeps deep graphs off the call stack.
    std::vector<int32_t> roots;
    for (tensor t : g.outputs()) roots.push_back(t.id);
    for (std::size_t i = 0; i < n; ++i)
        if (nodes[i].op == op::set_rows) roots.push_back(int32_t(i));
    std::vector<uint8_t> seen(n, 0);
    std::vector<int32_t> post;
    for (int32_t root : roots) {
        if (seen[std::size_t(root)]) continue;
        std::vector<std::pair<int32_t, int>> stack{{root, 0}};
        seen[std::size_t(root)] = 1;
        while (!stack.empty()) {
            auto& [id, next_src] = stack.back();
            const node& nd = nodes[std::size_t(id)];
            if (next_src < nd.n_src()) {
                const int32_t s = nd.src[std::size_t(next_src++)];
                if (!seen[std::size_t(s)]) {
                    seen[std::size_t(s)] = 1;
                    stack.push_back({s, 0});
                }
                continue;
            }
            post.push_back(id);
            stack.pop_back();
        }
    }
    // Inputs first: the host writes them before step 0, so nothing earlier may reuse their bytes.
    for (int32_t id : post)
        if (nodes[std::size_t(id)].op == op::input) p.order.push_back(id);
    for (int32_t id : post)
        if (nodes[std::size_t(id)].op != op::input) p.order.push_back(id);

    const int32_t steps = int32_t(p.order.size());
    for (int32_t s = 0; s < steps; ++s) {
        const int32_t id = p.order[std::size_t(s)];
        const node& nd = nodes[std::size_t(id)];
        p.first_step[std::size_t(id)] = s;
        p.last_step[std::size_t(id)] = std::max(p.last_step[std::size_t(id)], s);
        for (int i = 0; i < nd.n_src(); ++i) {
            const auto src = std::size_t(nd.src[std::size_t(i)]);
            p.last_step[src] = std::max(p.last_step[src], s);
        }
        p.bytes[std::size_t(id)] = tensor_bytes(nd);
        switch (nd.op) {
            case op::weight: p.where[std::size_t(id)] = storage::weight; break;
            case op::state: p.where[std::size_t(id)] = storage::state; break;
            case op::set_rows:
                p.where[std::size_t(id)] = storage::alias;
                p.alias_of[std::size_t(id)] = p.state_of(nd.src[0]);
                break;
            default: p.where[std::size_t(id)] = storage::arena; break;
        }
    }
    for (tensor t : g.outputs()) p.last_step[std::size_t(t.id)] = steps;
    for (int32_t id : p.order)
        if (nodes[std::size_t(id)].op == op::input) p.last_step[std::size_t(id)] = steps;

    detail::first_fit arena(options.alignment);
    for (int32_t s = 0; s < steps; ++s) {
        const int32_t id = p.order[std::size_t(s)];
        const node& nd = nodes[std::size_t(id)];
        // The output is placed while the inputs are still held, so no op writes over what it reads.
        if (p.where[std::size_t(id)] == storage::arena) p.offset[std::size_t(id)] = arena.allocate(p.bytes[std::size_t(id)]);
        if (const std::size_t sb = scratch_bytes(nd); sb > 0) {
            p.scratch_bytes[std::size_t(id)] = sb;
            p.scratch_offset[std::size_t(id)] = arena.allocate(sb);
            if (options.reuse_memory) arena.release(p.scratch_offset[std::size_t(id)], sb);
        }
        if (!options.reuse_memory) continue;
        // Return every arena tensor whose last reader is this step (once, however often it is read);
        // a result nobody reads is returned at once.
        auto release_if_done = [&](int32_t t) {
            if (p.where[std::size_t(t)] == storage::arena && p.last_step[std::size_t(t)] == s)
                arena.release(p.offset[std::size_t(t)], p.bytes[std::size_t(t)]);
        };
        for (int i = 0; i < nd.n_src(); ++i) {
            const int32_t src = nd.src[std::size_t(i)];
            bool repeated = false;
            for (int j = 0; j < i; ++j) repeated = repeated || nd.src[std::size_t(j)] == src;
            if (!repeated) release_if_done(src);
        }
        release_if_done(id);
    }
    p.arena_bytes = arena.end();
    return p;
}

}  // namespace llmrt::graph
