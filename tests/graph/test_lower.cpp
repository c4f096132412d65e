// The lowering (graph/lower.hpp): which steps a llama graph becomes, that fused plans keep
// live memory apart, and that the CPU backend's fused steps give the bits of the unfused nodes.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/graph/lower.hpp>
#include <llmrt/graph/plan.hpp>
#include <llmrt/model/model.hpp>

#include "lower_fixtures.hpp"

using namespace llmrt;
using graph::step_kind;
using test::cpu_sizes;
using test::kinds;
using test::small_llama;
using test::spelled;

TEST_CASE("a llama layer lowers to norm, matvec, rope_cache, attention, matvec, norm, matvec, swiglu and matvec") {
    small_llama m(qtype::q4_K, 4, 1);
    cpu::backend cpu_backend;
    const auto p = graph::make_plan(m.built.g, cpu_sizes(m.built.g, cpu_backend), {}, graph::lower_options{});
    INFO(spelled(p));
    // get_rows; the layer; the final norm, the output matvec and the argmax.
    const std::vector<step_kind> expected{step_kind::op,     step_kind::norm,      step_kind::matvec, step_kind::rope_cache,
                                          step_kind::attention, step_kind::matvec, step_kind::norm,   step_kind::matvec,
                                          step_kind::swiglu, step_kind::matvec,    step_kind::norm,   step_kind::matvec,
                                          step_kind::op};
    CHECK(kinds(p) == expected);
    const auto& g = m.built.g;
    auto named = [&](const std::string& n) { return g.find(n).id; };
    const graph::step& qkv = p.steps[2];
    CHECK(qkv.stacked);
    CHECK(qkv.nodes.size() == 3);
    CHECK(qkv.rows_total == 256 + 2 * 128);
    CHECK(qkv.rounded_by == 1);  // the norm rounded the activations for it
    CHECK(p.steps[1].rounded_for == 2);
    CHECK(p.steps[8].rounded_for == 9);  // swiglu rounds for the down projection
    CHECK(p.steps[4].rounded_for == 5);  // attention for the output projection
    // Gate/up carries the swiglu after it: a backend may finish it in the mat-vec's epilogue.
    CHECK(p.steps[7].carries == 8);
    CHECK(p.steps[8].carried_by == 7);
    CHECK(qkv.carries == -1);  // Q/K/V does not carry the rope_cache
    // A product that only the next norm's residual add reads carries that norm: the output
    // projection the feed-forward's norm, the down projection the final norm.
    CHECK(p.steps[5].carries == 6);
    CHECK(p.steps[6].carried_by == 5);
    CHECK(p.steps[9].carries == 10);
    CHECK(p.steps[10].carried_by == 9);
    // Written by the carrier: each residual sum lives from its product's step on.
    CHECK(p.first_step[std::size_t(named("blk.0.attn_residual"))] == 5);
    CHECK(p.first_step[std::size_t(named("blk.0.ffn_residual"))] == 9);
    // Written by the carrier: the swiglu's records are placed (and live) from the gate/up step on.
    CHECK(p.first_step[std::size_t(named("blk.0.ffn_swiglu"))] == 7);
    // What is never written: the norms before their products, the products only mat-vecs read,
    // k after rope (only its cache write reads it), attention's and swiglu's results.
    for (const char* n : {"blk.0.attn_norm", "blk.0.ffn_norm", "blk.0.k_rope", "blk.0.attn", "blk.0.ffn_swiglu"})
        CHECK_MESSAGE(p.where[std::size_t(named(n))] == graph::storage::fused, n);
    // Kept: the residual stream, q after rope (attention reads it), the logits.
    for (const char* n : {"blk.0.attn_residual", "blk.0.ffn_residual", "blk.0.q_rope", "logits"})
        CHECK_MESSAGE(p.where[std::size_t(named(n))] == graph::storage::arena, n);
    // q, k and v side by side, each column rows_total apart.
    CHECK(p.col_stride[std::size_t(named("blk.0.k"))] == 512);
    CHECK(p.offset[std::size_t(named("blk.0.k"))] == p.offset[std::size_t(named("blk.0.q"))] + 256 * 4);
}

TEST_CASE("without carrying no matvec step carries another, and the steps are the same") {
    small_llama m(qtype::q4_K, 4, 1);
    cpu::backend cpu_backend;
    graph::lower_options o;
    o.carry_swiglu = false;
    o.carry_norm = false;
    const auto with = graph::make_plan(m.built.g, cpu_sizes(m.built.g, cpu_backend), {}, graph::lower_options{});
    const auto without = graph::make_plan(m.built.g, cpu_sizes(m.built.g, cpu_backend), {}, o);
    CHECK(kinds(with) == kinds(without));
    for (const auto& s : without.steps) {
        CHECK(s.carries == -1);
        CHECK(s.carried_by == -1);
    }
}

TEST_CASE("a fusion the plan options do not allow is lowered as the backend would without it, named in fusions_by_name") {
    small_llama m(qtype::q4_K, 4, 2);
    cpu::backend cpu_backend;
    const auto& g = m.built.g;
    for (const auto& fusion : graph::fusions_by_name) {
        const std::string name(fusion.first);
        const auto field = fusion.second;
        CAPTURE(name);
        graph::plan_options o;
        o.allow.*field = false;
        graph::lower_options without = cpu_backend.lowering();
        without.*field = false;
        const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), o, cpu_backend.lowering());
        const auto q = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, without);
        CHECK(spelled(p) == spelled(q));
        std::vector<int32_t> pc, qc;
        for (const auto& st : p.steps) pc.push_back(st.carries);
        for (const auto& st : q.steps) qc.push_back(st.carries);
        CHECK(pc == qc);
    }
    // Names are unique.
    for (std::size_t i = 0; i < graph::fusions_by_name.size(); ++i)
        for (std::size_t j = i + 1; j < graph::fusions_by_name.size(); ++j)
            CHECK(graph::fusions_by_name[i].first != graph::fusions_by_name[j].first);
}

TEST_CASE("with every fusion off each planned node is a step of its own") {
    small_llama m(qtype::q8_0, 2, 2);
    cpu::backend cpu_backend;
    const auto& g = m.built.g;
    const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, graph::lower_options::unfused());
    std::size_t computed = 0;
    for (int32_t id : p.order) {
        const auto op = g.nodes()[std::size_t(id)].op;
        computed += op != graph::op::input && op != graph::op::weight && op != graph::op::state;
    }
    CHECK(p.steps.size() == computed);
    for (const auto& s : p.steps) {
        CHECK(s.kind == step_kind::op);
        CHECK(s.nodes.size() == 1);
    }
    for (std::size_t i = 0; i < p.where.size(); ++i) CHECK(p.where[i] != graph::storage::fused);
}

TEST_CASE("fused plans never let live tensors, stacks, roundings or scratch share bytes") {
    for (int32_t batch : {1, 3, 8}) {
        CAPTURE(batch);
        small_llama m(qtype::q4_K, batch, 2);
        cpu::backend cpu_backend;
        const auto& g = m.built.g;
        const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, graph::lower_options{});
        struct span_of_life {
            int32_t first, last;
            std::size_t offset, bytes;
        };
        std::vector<span_of_life> spans;
        for (std::size_t i = 0; i < p.where.size(); ++i)
            if (p.where[i] == graph::storage::arena && (p.step_of[i] < 0 || !p.steps[std::size_t(p.step_of[i])].stacked))
                spans.push_back({p.first_step[i], p.last_step[i], p.offset[i], p.bytes[i]});
        for (std::size_t s = 0; s < p.steps.size(); ++s) {
            const graph::step& st = p.steps[s];
            if (st.stacked) {
                span_of_life block{int32_t(s), int32_t(s), p.offset[std::size_t(st.nodes[0])], 0};
                for (int32_t id : st.nodes) {
                    block.last = std::max(block.last, p.last_step[std::size_t(id)]);
                    block.bytes += p.bytes[std::size_t(id)];
                }
                spans.push_back(block);
            }
            if (p.scratch_bytes[s]) spans.push_back({int32_t(s), int32_t(s), p.scratch_offset[s], p.scratch_bytes[s]});
            const int32_t written = st.carried_by >= 0 ? st.carried_by : int32_t(s);  // by the carrier
            if (p.rounded_bytes[s]) spans.push_back({written, st.rounded_for, p.rounded_offset[s], p.rounded_bytes[s]});
        }
        int overlaps = 0;
        for (std::size_t a = 0; a < spans.size(); ++a)
            for (std::size_t b = a + 1; b < spans.size(); ++b) {
                const bool live = spans[a].first <= spans[b].last && spans[b].first <= spans[a].last;
                const bool bytes = spans[a].offset < spans[b].offset + spans[b].bytes &&
                                   spans[b].offset < spans[a].offset + spans[a].bytes;
                overlaps += live && bytes;
            }
        CHECK(overlaps == 0);
    }
}

TEST_CASE("the CPU backend's fused steps give the bits of the unfused nodes, batched and token by token") {
    for (qtype type : {qtype::q4_K, qtype::q8_0}) {
        CAPTURE(name(type));
        small_llama m(type, 4, 2);
        cpu::backend cpu_backend;
        graph::executor fused(cpu_backend, m.built.g);
        graph::executor unfused(cpu_backend, m.built.g, {.fuse = false});
        CHECK(fused.get_plan().steps.size() < unfused.get_plan().steps.size());
        const std::vector<int32_t> tokens{3, 141, 59, 26, 5, 35, 89};
        std::vector<int32_t> position(tokens.size());
        for (std::size_t i = 0; i < tokens.size(); ++i) position[i] = int32_t(i);
        // A batch of 4, then three tokens one by one.
        auto feed = [&](auto& ex, std::size_t from, std::size_t n, std::vector<float>& logits) {
            ex.write(m.built.tokens, std::span<const int32_t>(tokens).subspan(from, n));
            ex.write(m.built.positions, std::span<const int32_t>(position).subspan(from, n));
            ex.run(int64_t(n));
            logits.resize(n * 300);
            ex.read(m.built.logits, std::span<float>(logits));
        };
        for (auto [from, n] : {std::pair<std::size_t, std::size_t>{0, 4}, {4, 1}, {5, 1}, {6, 1}}) {
            std::vector<float> a, b;
            feed(fused, from, n, a);
            feed(unfused, from, n, b);
            CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("an id or position out of range is an llmrt::error before the run, naming the op and the value") {
    small_llama m(qtype::q8_0, 2, 1);
    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, m.built.g);
    const std::vector<int32_t> bad_token{300}, ok_token{1}, bad_position{64}, ok_position{0};
    ex.write(m.built.tokens, std::span<const int32_t>(bad_token));
    ex.write(m.built.positions, std::span<const int32_t>(ok_position));
    try {
        ex.run(1);
        FAIL("token 300 of a 300-token vocabulary ran");
    } catch (const llmrt::error& e) {
        CHECK(e.code() == errc::invalid_argument);
        CHECK(std::string(e.what()).find("get_rows: id 300 of token 0 is outside [0, 300)") != std::string::npos);
    }
    ex.write(m.built.tokens, std::span<const int32_t>(ok_token));
    ex.write(m.built.positions, std::span<const int32_t>(bad_position));
    try {
        ex.run(1);
        FAIL("position 64 of a 64-position cache ran");
    } catch (const llmrt::error& e) {
        CHECK(std::string(e.what()).find("position 64 of token 0 is outside [0, 64)") != std::string::npos);
    }
    ex.write(m.built.positions, std::span<const int32_t>(ok_position));
    ex.run(1);
}

TEST_CASE("reading a node that a fused step never writes raises llmrt::error that says how to see it") {
    small_llama m(qtype::q8_0, 1, 1);
    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, m.built.g, {.reuse_memory = false});
    std::vector<float> v(256);
    try {
        ex.read(m.built.g.find("blk.0.attn_norm"), std::span<float>(v));
        FAIL("read a fused node");
    } catch (const llmrt::error& e) {
        CHECK(std::string(e.what()).find("fuse = false") != std::string::npos);
    }
    graph::executor all(cpu_backend, m.built.g, {.reuse_memory = false, .fuse = false});
    all.read(m.built.g.find("blk.0.attn_norm"), std::span<float>(v));
}

TEST_CASE("a grouped rms_norm and its product with a group-long weight are one norm step where the backend takes them") {
    graph::graph g(2);
    const std::vector<float> w(16, 1.5f);
    const auto x = g.input("x", qtype::f32, 64);
    const auto normed = g.rms_norm(x, 1e-6f, 16);
    const auto product = g.mul(normed, g.weight("w", qtype::f32, 16, 1, w.data()));
    g.mark_output(product);
    cpu::backend cpu_backend;
    for (bool grouped : {true, false}) {
        CAPTURE(grouped);
        graph::lower_options o;
        o.grouped_norms = grouped;
        const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, o);
        REQUIRE(p.steps.size() == (grouped ? 1u : 2u));
        CHECK(p.steps[0].kind == (grouped ? step_kind::norm : step_kind::op));
        if (grouped) {
            CHECK(p.steps[0].product == product.id);
            CHECK(p.steps[0].rounds < 0);
        }
    }
}

TEST_CASE("a matvec step adds each product's bias, never writing the mul_mat, and stacks the sums for the rope_cache") {
    small_llama m(qtype::q8_0, 2, 1, "qwen2");
    const auto& g = m.built.g;
    auto named = [&](const char* n) { return std::size_t(g.find(n).id); };
    cpu::backend cpu_backend;
    for (bool biases : {true, false}) {
        CAPTURE(biases);
        graph::lower_options o;
        o.matvec_biases = biases;
        const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, o);
        const auto qkv = std::size_t(p.step_of[named("blk.0.q")]);
        CHECK(p.steps[qkv].kind == step_kind::matvec);
        CHECK((p.step_of[named("blk.0.q_bias")] == int32_t(qkv)) == biases);
        CHECK(p.steps[qkv].stacked == biases);  // the adds, not the rope_cache, read the products otherwise
        CHECK((p.where[named("blk.0.q")] == graph::storage::fused) == biases);
        if (biases) CHECK(p.col_stride[named("blk.0.k_bias")] == 256 + 2 * 64 + 2 * 64);
    }
}

TEST_CASE("q, k and v are stacked for per-head q/k norms as for the rope_cache, and the norms read the stack") {
    small_llama m(qtype::q8_0, 3, 1, "qwen3");
    const auto& g = m.built.g;
    const auto& built = m.built;
    auto named = [&](const char* n) { return std::size_t(g.find(n).id); };
    cpu::backend cpu_backend;
    for (bool grouped : {true, false}) {
        CAPTURE(grouped);
        graph::lower_options o;
        o.grouped_norms = grouped;
        o.rope_norms = false;
        const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, o);
        const auto qkv = std::size_t(p.step_of[named("blk.0.q")]);
        CHECK(p.steps[qkv].stacked == grouped);  // op steps read dense columns only
        CHECK(p.col_stride[named("blk.0.k")] == (grouped ? 256 + 2 * 64 + 2 * 64 : 2 * 64));
    }
    // Batches and single tokens give the same bits (the norms read columns rows_total apart).
    graph::executor<cpu::backend> ex(cpu_backend, g);
    std::vector<float> batch(std::size_t(300 * 3)), one(300);
    const std::vector<int32_t> tokens{5, 17, 250}, positions{0, 1, 2};
    ex.write(built.tokens, std::span<const int32_t>(tokens));
    ex.write(built.positions, std::span<const int32_t>(positions));
    ex.run(3);
    ex.read(built.logits, std::span<float>(batch));
    graph::executor<cpu::backend> single(cpu_backend, g);
    for (int t = 0; t < 3; ++t) {
        single.write(built.tokens, std::span<const int32_t>(&tokens[std::size_t(t)], 1));
        single.write(built.positions, std::span<const int32_t>(&positions[std::size_t(t)], 1));
        single.run(1);
        single.read(built.logits, std::span<float>(one));
        CHECK(std::memcmp(one.data(), batch.data() + t * 300, 300 * sizeof(float)) == 0);
    }
}

TEST_CASE("the per-head q and k norms are computed in the rope_cache step, never written, with the bits of their own steps") {
    small_llama m(qtype::q8_0, 3, 2, "qwen3");
    const auto& g = m.built.g;
    const auto& built = m.built;
    auto named = [&](const char* n) { return int32_t(g.find(n).id); };
    cpu::backend cpu_backend;
    const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, graph::lower_options{});
    const graph::step& rc = p.steps[std::size_t(p.step_of[std::size_t(named("blk.0.q_rope"))])];
    REQUIRE(rc.kind == step_kind::rope_cache);
    CHECK(rc.q_norm >= 0);
    CHECK(rc.k_norm >= 0);
    CHECK(rc.nodes.size() == 8);
    CHECK(p.step_of[std::size_t(named("blk.0.q_norm"))] == p.step_of[std::size_t(named("blk.0.q_rope"))]);
    for (const char* n : {"blk.0.q_norm", "blk.0.k_norm"}) CHECK_MESSAGE(p.where[std::size_t(named(n))] == graph::storage::fused, n);
    CHECK(p.steps[std::size_t(p.step_of[std::size_t(named("blk.0.q"))])].stacked);
    graph::lower_options off;
    off.rope_norms = false;
    const auto q = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, off);
    CHECK(q.steps[std::size_t(q.step_of[std::size_t(named("blk.0.q_norm"))])].kind == step_kind::norm);
    CHECK(q.steps.size() == p.steps.size() + 2 * 2);  // two norm steps a layer
    // The bits: a batch of three against the unfused plan.
    const std::vector<int32_t> tokens{5, 17, 250}, positions{0, 1, 2};
    std::vector<std::vector<float>> logits;
    for (bool fuse : {true, false}) {
        graph::executor<cpu::backend> ex(cpu_backend, g, {.fuse = fuse});
        ex.write(built.tokens, std::span<const int32_t>(tokens));
        ex.write(built.positions, std::span<const int32_t>(positions));
        ex.run(3);
        logits.emplace_back(std::size_t(300 * 3));
        ex.read(built.logits, std::span<float>(logits.back()));
    }
    CHECK(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)) == 0);
}
