// The planner: execution order, steps and memory layout of a graph, fixed before anything runs.
//
//   order     the nodes the outputs (and every KV write) depend on: a depth-first post-order from
//             the outputs, each node after everything it reads
//   steps     the lowering (lower.hpp) of that order for the backend's fusions: the units a backend
//             runs, in the order it runs them
//   liveness  a tensor lives from the step that writes it (a carried step's results: from its
//             carrier, lower.hpp) to the last step that reads it; inputs
//             live through the whole run (the host writes them before it, and what it wrote stays
//             for the next run), outputs until the end
//   memory    one arena per plan; a tensor takes the first free block that fits (first fit,
//             adjacent free blocks merged) and returns it after its last reader has run, so two
//             tensors share bytes only when their lifetimes do not overlap. A step's outputs are
//             placed while its inputs are held, so no step writes over what it reads. A step's
//             scratch lives for the step; the Q8_1 rounding a step writes for a matvec step lives
//             until that step; a stacked matvec step's products are one block. Sizes are those of
//             the largest batch, so any batch fits.
//
// Weights stay where the backend uploads them, states get persistent buffers of their own, and
// a set_rows result is its cache: none of these take arena memory.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "llmrt/graph/graph.hpp"
#include "llmrt/graph/lower.hpp"

namespace llmrt::graph {

enum class storage : uint8_t {
    none,    // not part of the plan (nothing the outputs need reads it)
    arena,   // at plan::offset[i] in the arena
    weight,  // the weight's bytes, as the backend uploaded them
    state,   // the state's own persistent buffer
    alias,   // the memory of state node plan::alias_of[i] (a set_rows result)
    fused,   // computed inside a fused step and never written (lower.hpp: internal)
};

struct plan_options {
    bool reuse_memory = true;     // false: every tensor keeps its own bytes (for inspecting all nodes)
    std::size_t alignment = 256;  // every arena offset is a multiple of this (a power of two)
    bool fuse = true;             // false: one step per node, whatever fusions the backend runs
    // Of the fusions the backend runs, those that may (all by default): one set false here runs
    // its nodes as the lowering does without it (for measuring what a fusion is worth).
    lower_options allow{};
};

// What a backend needs besides the tensors: scratch for a node's kernel, and the bytes of the
// Q8_1 rounding of `cols` columns of k floats that a step hands to a matvec step.
struct plan_sizes {
    std::function<std::size_t(const node&)> scratch = [](const node&) { return std::size_t(0); };
    std::function<std::size_t(int64_t k, int64_t cols)> rounded = [](int64_t, int64_t) { return std::size_t(0); };
};

struct plan {
    std::vector<int32_t> order;            // node ids, every node after the nodes it reads
    std::vector<step> steps;               // what runs, in order
    std::vector<int32_t> step_of;          // per node: its step (-1: a leaf or unplanned)
    std::vector<index_check> checks;       // ids and positions to check before a run
    std::vector<storage> where;            // per node
    std::vector<std::size_t> offset;       // per node: arena byte offset (storage::arena)
    std::vector<std::size_t> bytes;        // per node: bytes at the largest batch
    std::vector<int64_t> col_stride;       // per node: elements from one column to the next (ne0, or a stack's rows)
    std::vector<int32_t> alias_of;         // per node: the state a set_rows result is (storage::alias)
    std::vector<int32_t> first_step;       // per node: step that writes it (0 for inputs, -1 if unplanned)
    std::vector<int32_t> last_step;        // per node: last step that reads it (steps.size() for inputs, outputs)
    // per step: its scratch, and the Q8_1 rounding it writes (step::rounds), arena offsets and bytes
    std::vector<std::size_t> scratch_offset, scratch_bytes, rounded_offset, rounded_bytes;
    std::size_t arena_bytes = 0;
    bool reuses_memory = true;             // plan_options::reuse_memory

    // The state node whose memory tensor t occupies (t itself for a state), or -1.
    int32_t state_of(int32_t t) const {
        if (where[std::size_t(t)] == storage::state) return t;
        if (where[std::size_t(t)] == storage::alias) return alias_of[std::size_t(t)];
        return -1;
    }
    // Whether node t's bytes hold its columns densely, ne0 elements apart (what read and write see).
    bool dense(int32_t t, const graph& g) const { return col_stride[std::size_t(t)] == g.nodes()[std::size_t(t)].ne0; }
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

// Depth-first post-order from the roots: the outputs, then every KV write (a side effect the
// outputs may not read); inputs first. An explicit stack keeps deep graphs off the call stack.
inline std::vector<int32_t> execution_order(const graph& g) {
    const auto& nodes = g.nodes();
    const std::size_t n = nodes.size();
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
    std::vector<int32_t> order;
    for (int32_t id : post)
        if (nodes[std::size_t(id)].op == op::input) order.push_back(id);
    for (int32_t id : post)
        if (nodes[std::size_t(id)].op != op::input) order.push_back(id);
    return order;
}

}  // namespace detail

// Plans g with the given fusions (lower_options::unfused(): one step per node).
inline plan make_plan(const graph& g, const plan_sizes& sizes, plan_options options, const lower_options& fusions) {
    check(options.alignment > 0 && (options.alignment & (options.alignment - 1)) == 0, errc::invalid_argument,
          [&] { return "make_plan: alignment " + std::to_string(options.alignment) + " is not a power of two"; });
    check(!g.outputs().empty(), errc::invalid_argument, "make_plan: the graph has no outputs");
    const auto& nodes = g.nodes();
    const std::size_t n = nodes.size();
    plan p;
    p.reuses_memory = options.reuse_memory;
    const std::vector<int32_t> dfs = detail::execution_order(g);
    lowered low = lower(g, dfs, options.fuse ? fusions & options.allow : lower_options::unfused());
    p.steps = std::move(low.steps);
    p.step_of = std::move(low.step_of);
    p.checks = std::move(low.checks);
    const auto steps = int32_t(p.steps.size());

    // The order: leaves as the depth-first order has them (inputs first), then each step's nodes.
    for (int32_t id : dfs)
        if (p.step_of[std::size_t(id)] < 0) p.order.push_back(id);
    for (const step& s : p.steps) p.order.insert(p.order.end(), s.nodes.begin(), s.nodes.end());

    p.where.assign(n, storage::none);
    p.offset.assign(n, 0);
    p.bytes.assign(n, 0);
    p.col_stride.assign(n, 0);
    p.alias_of.assign(n, -1);
    p.first_step.assign(n, -1);
    p.last_step.assign(n, -1);
    p.scratch_offset.assign(std::size_t(steps), 0);
    p.scratch_bytes.assign(std::size_t(steps), 0);
    p.rounded_offset.assign(std::size_t(steps), 0);
    p.rounded_bytes.assign(std::size_t(steps), 0);

    for (int32_t id : p.order) {
        const auto i = std::size_t(id);
        const node& nd = nodes[i];
        p.bytes[i] = tensor_bytes(nd);
        p.col_stride[i] = nd.ne0;
        const int32_t s = nd.op == op::input ? 0 : std::max(p.step_of[i], 0);
        p.first_step[i] = s;
        p.last_step[i] = std::max(p.last_step[i], s);
        for (int k = 0; k < nd.n_src(); ++k) {
            const auto src = std::size_t(nd.src[std::size_t(k)]);
            p.last_step[src] = std::max(p.last_step[src], s);
        }
        switch (nd.op) {
            case op::weight: p.where[i] = storage::weight; break;
            case op::state: p.where[i] = storage::state; break;
            case op::set_rows:
                p.where[i] = storage::alias;
                p.alias_of[i] = p.state_of(nd.src[0]);
                break;
            default: p.where[i] = low.internal[i] ? storage::fused : storage::arena; break;
        }
    }
    // A carried step's results are written by its carrier (the first of a chain: a carried step
    // may carry another, as an experts step's weighted_sum the norm after it).
    auto writer = [&](int32_t si) {
        while (p.steps[std::size_t(si)].carried_by >= 0) si = p.steps[std::size_t(si)].carried_by;
        return si;
    };
    for (std::size_t si = 0; si < p.steps.size(); ++si)
        if (p.steps[si].carried_by >= 0)
            for (int32_t id : p.steps[si].nodes) p.first_step[std::size_t(id)] = writer(int32_t(si));
    for (tensor t : g.outputs()) p.last_step[std::size_t(t.id)] = steps;
    for (int32_t id : p.order)
        if (nodes[std::size_t(id)].op == op::input) p.last_step[std::size_t(id)] = steps;

    // A stacked matvec step's products: one block, live until the last reader of any of them.
    // Blocks handed from one step to a later one (stacks, roundings) are returned after it.
    struct block {
        std::size_t offset = 0, bytes = 0;
    };
    const auto step_count = static_cast<std::size_t>(steps);
    std::vector<block> stack(step_count);
    std::vector<std::vector<block*>> release_after(step_count);
    for (int32_t si = 0; si < steps; ++si) {
        const step& s = p.steps[std::size_t(si)];
        if (!s.stacked) continue;
        int64_t row = 0;
        int32_t last = si;
        for (int32_t id : s.nodes) {
            const auto i = std::size_t(id);
            if (p.where[i] == storage::fused) continue;  // an experts step's product whose bias it adds
            p.col_stride[i] = s.rows_total;
            p.offset[i] = std::size_t(row) * sizeof(float);  // from the block's start, placed below
            row += nodes[i].ne0;
            stack[std::size_t(si)].bytes += p.bytes[i];
            last = std::max(last, p.last_step[i]);
        }
        if (last < steps) release_after[std::size_t(last)].push_back(&stack[std::size_t(si)]);
    }
    std::vector<block> rounded(step_count);

    detail::first_fit arena(options.alignment);
    auto place = [&](std::size_t bytes) { return arena.allocate(bytes); };
    auto free_at = [&](std::size_t offset, std::size_t bytes) {
        if (options.reuse_memory) arena.release(offset, bytes);
    };
    for (int32_t id : p.order)
        if (nodes[std::size_t(id)].op == op::input) p.offset[std::size_t(id)] = place(p.bytes[std::size_t(id)]);
    // Outputs (and what the step hands on) are placed while the step's inputs are still held; a
    // carried step's with its carrier's, which writes them.
    auto place_outputs = [&](int32_t si) {
        const step& s = p.steps[std::size_t(si)];
        const auto ss = std::size_t(si);
        if (s.stacked) {
            stack[ss].offset = place(stack[ss].bytes);
            for (int32_t id : s.nodes) p.offset[std::size_t(id)] += stack[ss].offset;
        } else {
            for (int32_t id : s.nodes)
                if (p.where[std::size_t(id)] == storage::arena) p.offset[std::size_t(id)] = place(p.bytes[std::size_t(id)]);
        }
        if (s.rounds >= 0) {
            const node& r = nodes[std::size_t(s.rounds)];
            rounded[ss].bytes = p.rounded_bytes[ss] = std::max<std::size_t>(sizes.rounded(r.ne0, r.ne1), 1);
            rounded[ss].offset = p.rounded_offset[ss] = place(p.rounded_bytes[ss]);
            if (s.rounded_for >= 0) release_after[std::size_t(s.rounded_for)].push_back(&rounded[ss]);
        }
    };
    for (int32_t si = 0; si < steps; ++si) {
        const step& s = p.steps[std::size_t(si)];
        const auto ss = std::size_t(si);
        if (s.carried_by < 0) {
            place_outputs(si);
            for (int32_t c = s.carries; c >= 0; c = p.steps[std::size_t(c)].carries) place_outputs(c);
        }
        std::size_t scratch = 0;
        for (int32_t id : s.nodes) scratch = std::max(scratch, sizes.scratch(nodes[std::size_t(id)]));
        if (scratch > 0) {
            p.scratch_bytes[ss] = scratch;
            p.scratch_offset[ss] = place(scratch);
            free_at(p.scratch_offset[ss], scratch);
        }
        // Return every arena tensor whose last reader is this step (once, however often it is
        // read), and a result nobody reads; stacked products go back as their block.
        std::vector<int32_t> done;
        for (int32_t id : s.nodes) {
            const node& nd = nodes[std::size_t(id)];
            done.push_back(id);
            for (int k = 0; k < nd.n_src(); ++k) done.push_back(nd.src[std::size_t(k)]);
        }
        std::sort(done.begin(), done.end());
        done.erase(std::unique(done.begin(), done.end()), done.end());
        for (int32_t t : done) {
            const auto i = std::size_t(t);
            const int32_t producer = p.step_of[i];
            const bool stacked = producer >= 0 && p.steps[std::size_t(producer)].stacked;
            if (p.where[i] == storage::arena && !stacked && p.last_step[i] == si) free_at(p.offset[i], p.bytes[i]);
        }
        for (const block* b : release_after[ss]) free_at(b->offset, b->bytes);
    }
    p.arena_bytes = arena.end();
    return p;
}

// Plans g unfused (one step per node); scratch_bytes(node) says how much scratch memory the
// backend needs for a node at the largest batch (0 for none).
inline plan make_plan(const graph& g, const std::function<std::size_t(const node&)>& scratch_bytes,
                      plan_options options = {}) {
    plan_sizes sizes;
    sizes.scratch = scratch_bytes;
    return make_plan(g, sizes, options, lower_options::unfused());
}

}  // namespace llmrt::graph
