// The planner: execution order, liveness and memory reuse.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include <llmrt/graph/plan.hpp>

using namespace llmrt;
using graph::storage;

namespace {

std::size_t no_scratch(const graph::node&) { return 0; }

// Every pair of arena blocks (tensors, a stacked step's block of products, scratch and the
// roundings steps hand on) whose lifetimes overlap occupies disjoint bytes.
void check_no_live_overlap(const graph::plan& p) {
    struct span_of_life {
        int32_t first, last;
        std::size_t offset, bytes;
    };
    std::vector<span_of_life> spans;
    for (std::size_t i = 0; i < p.where.size(); ++i)
        if (p.where[i] == storage::arena && (p.step_of[i] < 0 || !p.steps[std::size_t(p.step_of[i])].stacked))
            spans.push_back({p.first_step[i], p.last_step[i], p.offset[i], p.bytes[i]});
    for (std::size_t s = 0; s < p.steps.size(); ++s) {
        const auto at = int32_t(s);
        const graph::step& st = p.steps[s];
        if (st.stacked) {  // the first product's offset is the block's start
            span_of_life block{at, at, p.offset[std::size_t(st.nodes[0])], 0};
            for (int32_t id : st.nodes) {
                block.last = std::max(block.last, p.last_step[std::size_t(id)]);
                block.bytes += p.bytes[std::size_t(id)];
            }
            spans.push_back(block);
        }
        if (p.scratch_bytes[s] > 0) spans.push_back({at, at, p.scratch_offset[s], p.scratch_bytes[s]});
        if (p.rounded_bytes[s] > 0) spans.push_back({at, st.rounded_for, p.rounded_offset[s], p.rounded_bytes[s]});
    }
    for (std::size_t a = 0; a < spans.size(); ++a) {
        CHECK(spans[a].offset + spans[a].bytes <= p.arena_bytes);
        for (std::size_t b = a + 1; b < spans.size(); ++b) {
            const bool live_together = spans[a].first <= spans[b].last && spans[b].first <= spans[a].last;
            const bool bytes_overlap = spans[a].offset < spans[b].offset + spans[b].bytes &&
                                       spans[b].offset < spans[a].offset + spans[a].bytes;
            CHECK_FALSE((live_together && bytes_overlap));
        }
    }
}

// A random DAG of elementwise ops over a few inputs, with a few outputs.
graph::graph random_graph(uint32_t seed) {
    std::mt19937 rng(seed);
    graph::graph g(4);
    std::vector<graph::tensor> pool{g.input("a", qtype::f32, 40), g.input("b", qtype::f32, 40)};
    for (int i = 0; i < 60; ++i) {
        auto pick = [&] { return pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)]; };
        switch (rng() % 4) {
            case 0: pool.push_back(g.add(pick(), pick())); break;
            case 1: pool.push_back(g.mul(pick(), pick())); break;
            case 2: pool.push_back(g.silu(pick())); break;
            default: pool.push_back(g.rms_norm(pick(), 1e-5f)); break;
        }
    }
    for (int i = 0; i < 3; ++i) g.mark_output(pool[pool.size() - 1 - std::size_t(i) * 7]);
    return g;
}

}  // namespace

TEST_CASE("tensors whose lifetimes do not overlap share memory") {
    graph::graph g(2);
    auto x = g.input("x", qtype::f32, 64);
    auto a = g.silu(x);
    auto b = g.silu(a);
    auto c = g.silu(b);
    auto d = g.silu(c);
    g.mark_output(d);
    const auto p = graph::make_plan(g, no_scratch);
    // a dies when c is made, b when d is made; the input x lives through the run.
    CHECK(p.offset[std::size_t(c.id)] == p.offset[std::size_t(a.id)]);
    CHECK(p.offset[std::size_t(d.id)] == p.offset[std::size_t(b.id)]);
    CHECK(p.arena_bytes == 3 * p.bytes[std::size_t(x.id)]);
    check_no_live_overlap(p);
}

TEST_CASE("inputs live through the whole run, so what the host wrote survives it") {
    const auto g = random_graph(11);
    const auto p = graph::make_plan(g, no_scratch);
    for (int32_t id : p.order)
        if (g.nodes()[std::size_t(id)].op == graph::op::input) CHECK(p.last_step[std::size_t(id)] == int32_t(p.steps.size()));
}

TEST_CASE("tensors whose lifetimes overlap never share memory, in random graphs") {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        CAPTURE(seed);
        const auto g = random_graph(seed);
        check_no_live_overlap(graph::make_plan(g, [](const graph::node& n) { return n.op == graph::op::rms_norm ? 100u : 0u; }));
    }
}

TEST_CASE("an op's output never shares memory with its own inputs") {
    for (uint32_t seed = 1; seed <= 10; ++seed) {
        const auto g = random_graph(seed);
        const auto p = graph::make_plan(g, no_scratch);
        for (int32_t id : p.order) {
            const auto& nd = g.nodes()[std::size_t(id)];
            for (int i = 0; i < nd.n_src(); ++i) {
                const auto s = std::size_t(nd.src[std::size_t(i)]);
                const bool overlap = p.offset[s] < p.offset[std::size_t(id)] + p.bytes[std::size_t(id)] &&
                                     p.offset[std::size_t(id)] < p.offset[s] + p.bytes[s];
                CHECK_FALSE(overlap);
            }
        }
    }
}

TEST_CASE("the order puts inputs first and every node after the nodes it reads") {
    const auto g = random_graph(7);
    const auto p = graph::make_plan(g, no_scratch);
    std::vector<int> step(g.size(), -1);
    bool inputs_done = false;
    for (std::size_t s = 0; s < p.order.size(); ++s) {
        const auto& nd = g.nodes()[std::size_t(p.order[s])];
        if (nd.op != graph::op::input) inputs_done = true;
        CHECK((nd.op != graph::op::input || !inputs_done));
        for (int i = 0; i < nd.n_src(); ++i) CHECK(step[std::size_t(nd.src[std::size_t(i)])] >= 0);
        step[std::size_t(p.order[s])] = int(s);
    }
}

TEST_CASE("nodes that no output depends on are left out of the plan") {
    graph::graph g(1);
    auto x = g.input("x", qtype::f32, 8);
    auto unused = g.silu(x);
    g.mark_output(g.softmax(x));
    const auto p = graph::make_plan(g, no_scratch);
    CHECK(p.where[std::size_t(unused.id)] == storage::none);
    CHECK(p.order.size() == 2);
}

TEST_CASE("outputs keep their memory until the end of the run") {
    graph::graph g(1);
    auto x = g.input("x", qtype::f32, 64);
    auto early = g.silu(x);
    auto y = g.silu(g.silu(g.silu(early)));
    g.mark_output(early);
    g.mark_output(y);
    const auto p = graph::make_plan(g, no_scratch);
    CHECK(p.last_step[std::size_t(early.id)] == int32_t(p.steps.size()));
    check_no_live_overlap(p);
}

TEST_CASE("KV writes are planned even when no output reads them, and take no arena memory") {
    graph::graph g(2);
    auto x = g.input("x", qtype::f32, 16);
    auto pos = g.input("pos", graph::i32_type, 1);
    auto cache = g.state("cache", qtype::f16, 16, 10);
    auto written = g.set_rows(cache, x, pos);
    g.mark_output(g.silu(x));
    const auto p = graph::make_plan(g, no_scratch);
    CHECK(p.where[std::size_t(written.id)] == storage::alias);
    CHECK(p.alias_of[std::size_t(written.id)] == cache.id);
    CHECK(p.where[std::size_t(cache.id)] == storage::state);
}

TEST_CASE("without memory reuse every arena tensor has bytes of its own") {
    const auto g = random_graph(3);
    const auto reused = graph::make_plan(g, no_scratch);
    const auto separate = graph::make_plan(g, no_scratch, {.reuse_memory = false});
    std::size_t total = 0;
    for (std::size_t i = 0; i < separate.where.size(); ++i)
        if (separate.where[i] == storage::arena) total += separate.bytes[i];
    CHECK(separate.arena_bytes >= total);
    CHECK(reused.arena_bytes < separate.arena_bytes);
    for (std::size_t a = 0; a < separate.where.size(); ++a)
        for (std::size_t b = a + 1; b < separate.where.size(); ++b)
            if (separate.where[a] == storage::arena && separate.where[b] == storage::arena)
                CHECK((separate.offset[a] + separate.bytes[a] <= separate.offset[b] ||
                       separate.offset[b] + separate.bytes[b] <= separate.offset[a]));
}

TEST_CASE("arena offsets are multiples of the alignment") {
    const auto g = random_graph(5);
    const auto p = graph::make_plan(g, [](const graph::node&) { return std::size_t(13); }, {.alignment = 128});
    for (std::size_t i = 0; i < p.where.size(); ++i)
        if (p.where[i] == storage::arena) CHECK(p.offset[i] % 128 == 0);
    CHECK_THROWS_AS(graph::make_plan(g, no_scratch, {.alignment = 100}), llmrt::error);
}
