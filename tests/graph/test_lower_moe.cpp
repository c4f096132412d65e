// The lowering of mixture-of-experts layers (graph/lower.hpp): the experts steps and what they
// stack and round, the router's step, the steps they carry (the swiglu, the expert weights, the
// weighted sum and the norm after it), on the MoE block of moe_fixtures.hpp and on qwen3moe and
// gpt-oss layers.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <llmrt/testing/generate.hpp>

#include "lower_fixtures.hpp"
#include "moe_fixtures.hpp"

using namespace llmrt;
using graph::step_kind;
using test::cpu_sizes;
using test::small_llama;
using test::spelled;

TEST_CASE("a qwen3moe layer's products carry the norms after them, the down's through its weighted_sum, and the router joins its top_k") {
    small_llama m(qtype::q8_0, 4, 2, "qwen3moe");
    cpu::backend cpu_backend;
    const auto p = graph::make_plan(m.built.g, cpu_sizes(m.built.g, cpu_backend), {}, graph::lower_options{});
    INFO(spelled(p));
    const auto& g = m.built.g;
    auto step_of = [&](const std::string& n) { return p.step_of[std::size_t(g.find(n).id)]; };
    for (const std::string l : {"blk.0.", "blk.1."}) {
        CAPTURE(l);
        // The output projection carries the feed-forward's norm.
        const int32_t ffn_norm = step_of(l + "attn_residual");
        REQUIRE(ffn_norm > 0);
        CHECK(p.steps[std::size_t(ffn_norm)].kind == step_kind::norm);
        CHECK(p.steps[std::size_t(ffn_norm)].carried_by == ffn_norm - 1);
        CHECK(p.steps[std::size_t(ffn_norm - 1)].kind == step_kind::matvec);
        // The router's mul_mat, the softmax and the top_k: one step.
        const int32_t top_k = step_of(l + "ffn_moe_topk");
        CHECK(step_of(l + "ffn_moe_probs") == top_k);
        CHECK(p.steps[std::size_t(top_k)].nodes.size() == 3);
        // Gate/up carries the swiglu; the down carries the weighted_sum, which carries the next norm.
        const int32_t swiglu = step_of(l + "ffn_moe_swiglu");
        CHECK(p.steps[std::size_t(swiglu)].carried_by == swiglu - 1);
        const int32_t sum = step_of(l + "ffn_out"), down = step_of(l + "ffn_moe_down");
        CHECK(p.steps[std::size_t(down)].kind == step_kind::experts);
        CHECK(p.steps[std::size_t(sum)].carried_by == down);
        const int32_t next_norm = step_of(l + "ffn_residual");
        CHECK(p.steps[std::size_t(next_norm)].kind == step_kind::norm);
        CHECK(p.steps[std::size_t(next_norm)].carried_by == sum);
        CHECK(p.steps[std::size_t(sum)].carries == next_norm);
        // Written by the chain's first carrier, the down's experts step.
        CHECK(p.first_step[std::size_t(g.find(l + "ffn_residual").id)] == down);
    }
}

TEST_CASE("a gpt-oss router, the add of its bias and the top_k of the biased logits are one step, which carries the weights") {
    small_llama m(qtype::q8_0, 4, 2, "gpt-oss");
    cpu::backend cpu_backend;
    const auto p = graph::make_plan(m.built.g, cpu_sizes(m.built.g, cpu_backend), {}, graph::lower_options{});
    INFO(spelled(p));
    const auto& g = m.built.g;
    auto id = [&](const std::string& n) { return g.find(n).id; };
    for (const std::string l : {"blk.0.", "blk.1."}) {
        CAPTURE(l);
        const auto top_k = std::size_t(p.step_of[std::size_t(id(l + "ffn_moe_topk"))]);
        CHECK(p.steps[top_k].nodes ==
              std::vector<int32_t>{id(l + "ffn_moe_logits"), id(l + "ffn_moe_logits_bias"), id(l + "ffn_moe_topk")});
        CHECK(p.steps[top_k].carries == p.step_of[std::size_t(id(l + "ffn_moe_weights"))]);
        // Both logits stay written: the expert_weights reads the biased ones.
        CHECK(p.where[std::size_t(id(l + "ffn_moe_logits_bias"))] == graph::storage::arena);
    }
    graph::lower_options o;
    o.experts = false;
    const auto apart = graph::make_plan(m.built.g, cpu_sizes(m.built.g, cpu_backend), {}, o);
    CHECK(apart.steps[std::size_t(apart.step_of[std::size_t(id("blk.0.ffn_moe_topk"))])].nodes.size() == 1);
}

TEST_CASE("a top_k step carries the expert_weights of the values it ranked, and the results keep their own bytes") {
    test::moe_net net(qtype::q8_0, 64, 96, 8, 2, 3);
    cpu::backend cpu_backend;
    for (bool carry : {true, false}) {
        CAPTURE(carry);
        graph::lower_options o;
        o.carry_expert_weights = carry;
        const auto p = graph::make_plan(net.g, cpu_sizes(net.g, cpu_backend), {}, o);
        const auto top_k = std::size_t(p.step_of[std::size_t(net.ids.id)]);
        const auto weights = std::size_t(p.step_of[std::size_t(net.weights.id)]);
        CHECK(weights > top_k);
        CHECK(p.steps[top_k].carries == (carry ? int32_t(weights) : -1));
        CHECK(p.steps[weights].carried_by == (carry ? int32_t(top_k) : -1));
        // The carrier writes the weights: they are placed when the top_k step runs, apart from the
        // probabilities it reads.
        const auto w = std::size_t(net.weights.id), probs = std::size_t(net.probs.id);
        CHECK(p.first_step[w] == int32_t(carry ? top_k : weights));
        CHECK((p.offset[w] + p.bytes[w] <= p.offset[probs] || p.offset[probs] + p.bytes[probs] <= p.offset[w]));
    }
    // An expert_weights of other values than top_k ranked is not carried.
    graph::graph g(2);
    const auto x = g.input("x", qtype::f32, 8), other = g.input("other", qtype::f32, 8);
    const auto ids = g.top_k(x, 2);
    g.mark_output(g.expert_weights(other, ids, graph::expert_norm::sum));
    const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, graph::lower_options{});
    for (const auto& st : p.steps) CHECK(st.carries < 0);
}

TEST_CASE("gate and up mul_mat_ids of one x and ids are one experts step stacked for the swiglu, which rounds for the down") {
    test::moe_net net(qtype::q8_0, 64, 96, 8, 2, 3);
    cpu::backend cpu_backend;
    const auto p = graph::make_plan(net.g, cpu_sizes(net.g, cpu_backend), {}, graph::lower_options{});
    const auto gate = std::size_t(net.gate_out.id), up = std::size_t(net.up_out.id);
    const auto s = std::size_t(p.step_of[gate]);
    const graph::step& st = p.steps[s];
    CHECK(st.kind == step_kind::experts);
    CHECK(p.step_of[up] == int32_t(s));
    CHECK(st.nodes == std::vector<int32_t>{net.gate_out.id, net.up_out.id});
    CHECK(st.x == net.h.id);
    CHECK(st.rounded_by < 0);  // h is an input: the step rounds it itself
    // One block: a token's column is gate's k slots, then up's.
    CHECK(st.stacked);
    CHECK(st.rows_total == 2 * 2 * 96);
    CHECK(p.col_stride[gate] == 2 * 2 * 96);
    CHECK(p.col_stride[up] == 2 * 2 * 96);
    CHECK(p.offset[up] == p.offset[gate] + 2 * 96 * sizeof(float));
    // The swiglu rounds its result for the down's experts step and never writes it.
    const auto act = std::size_t(p.step_of[std::size_t(net.act.id)]);
    const auto down = std::size_t(p.step_of[std::size_t(net.down_out.id)]);
    CHECK(p.steps[act].kind == step_kind::swiglu);
    CHECK(p.steps[down].kind == step_kind::experts);
    CHECK(p.steps[act].rounds == net.act.id);
    CHECK(p.steps[act].rounded_for == int32_t(down));
    CHECK(p.steps[down].rounded_by == int32_t(act));
    CHECK(!p.steps[down].stacked);
    CHECK(p.where[std::size_t(net.act.id)] == graph::storage::fused);
}

TEST_CASE("a stacked gate/up experts step carries the swiglu right after it, whose records keep bytes of their own") {
    test::moe_net net(qtype::q8_0, 64, 96, 8, 2, 3);
    cpu::backend cpu_backend;
    for (bool carry : {true, false}) {
        CAPTURE(carry);
        graph::lower_options o;
        o.carry_swiglu = carry;
        const auto p = graph::make_plan(net.g, cpu_sizes(net.g, cpu_backend), {}, o);
        const auto s = std::size_t(p.step_of[std::size_t(net.gate_out.id)]);
        const auto act = std::size_t(p.step_of[std::size_t(net.act.id)]);
        REQUIRE(p.steps[s].kind == step_kind::experts);
        CHECK(act == s + 1);
        CHECK(p.steps[s].carries == (carry ? int32_t(act) : -1));
        CHECK(p.steps[act].carried_by == (carry ? int32_t(s) : -1));
        // The swiglu still rounds for the down, from wherever it runs.
        CHECK(p.steps[act].rounds == net.act.id);
        CHECK(p.steps[act].rounded_for == p.step_of[std::size_t(net.down_out.id)]);
        // Its records share no bytes with the stack they are made from; carried, they are written by
        // the launch that reads x's records (the step's scratch, h being an input): none with those
        // either. (Not carried, the swiglu runs after the experts step, whose scratch is then dead.)
        auto apart = [](std::size_t a, std::size_t an, std::size_t b, std::size_t bn) { return a + an <= b || b + bn <= a; };
        const std::size_t records = p.rounded_offset[act], records_bytes = p.rounded_bytes[act];
        REQUIRE(records_bytes > 0);
        const auto gate = std::size_t(net.gate_out.id), up = std::size_t(net.up_out.id);
        CHECK(apart(records, records_bytes, p.offset[gate], p.bytes[gate] + p.bytes[up]));
        if (carry) CHECK(apart(records, records_bytes, p.scratch_offset[s], p.scratch_bytes[s]));
    }
}

TEST_CASE("an experts step adds each product's bias, never writing the mul_mat_id before it, and takes swiglu_oai's stack") {
    const int64_t n_embd = 64, n_ff = 32, n_expert = 4, k = 2;
    std::vector<float> router = testing::gaussian(n_embd * n_expert, 3, 0.3f), bias_g = testing::gaussian(n_ff * n_expert, 4, 0.1f),
                       bias_u = testing::gaussian(n_ff * n_expert, 5, 0.1f);
    const auto wg = test::moe_net::matrix(qtype::q8_0, n_ff * n_expert, n_embd, 6);
    const auto wu = test::moe_net::matrix(qtype::q8_0, n_ff * n_expert, n_embd, 7);
    graph::graph g(2);
    const auto h = g.input("h", qtype::f32, n_embd);
    const auto normed = g.rms_norm(h, 1e-6f);
    const auto ids = g.top_k(g.mul_mat(g.weight("router", qtype::f32, n_embd, n_expert, router.data()), normed), k);
    const auto gate_mm = g.mul_mat_id(g.weight("gate", qtype::q8_0, n_embd, n_ff * n_expert, wg.data()), normed, ids, n_expert);
    const auto gate = g.add_id(gate_mm, g.weight("gate_b", qtype::f32, n_ff, n_expert, bias_g.data()), ids);
    const auto up_mm = g.mul_mat_id(g.weight("up", qtype::q8_0, n_embd, n_ff * n_expert, wu.data()), normed, ids, n_expert);
    const auto up = g.add_id(up_mm, g.weight("up_b", qtype::f32, n_ff, n_expert, bias_u.data()), ids);
    g.mark_output(g.swiglu_oai(gate, up, 1.702f, 7.0f));
    cpu::backend cpu_backend;
    const auto p = graph::make_plan(g, cpu_sizes(g, cpu_backend), {}, graph::lower_options{});
    const auto s = std::size_t(p.step_of[std::size_t(gate.id)]);
    const graph::step& st = p.steps[s];
    CHECK(st.kind == step_kind::experts);
    CHECK(st.nodes == std::vector<int32_t>{gate_mm.id, gate.id, up_mm.id, up.id});
    CHECK(st.stacked);
    CHECK(p.where[std::size_t(gate_mm.id)] == graph::storage::fused);
    CHECK(p.where[std::size_t(up_mm.id)] == graph::storage::fused);
    CHECK(p.col_stride[std::size_t(up.id)] == 2 * k * n_ff);
    // The norm rounds for the experts step and keeps its result for the float router.
    const graph::step& norm = p.steps[std::size_t(p.step_of[std::size_t(normed.id)])];
    CHECK(norm.kind == step_kind::norm);
    CHECK(norm.rounded_for == int32_t(s));
    CHECK(st.rounded_by == p.step_of[std::size_t(normed.id)]);
    CHECK(p.where[std::size_t(normed.id)] == graph::storage::arena);
    const auto act = std::size_t(p.step_of[std::size_t(g.outputs()[0].id)]);
    CHECK(p.steps[act].kind == step_kind::swiglu);
    // The bias adds are the stack's products: the step carries the swiglu_oai that reads them.
    CHECK(p.steps[s].carries == int32_t(act));
    CHECK(p.steps[act].carried_by == int32_t(s));
}

TEST_CASE("without the experts fusion every mul_mat_id and swiglu_oai is an op step, as backends that opt out get") {
    test::moe_net net(qtype::q8_0, 64, 96, 8, 2, 3);
    cpu::backend cpu_backend;
    graph::lower_options o;
    o.experts = false;
    const auto p = graph::make_plan(net.g, cpu_sizes(net.g, cpu_backend), {}, o);
    for (const auto& st : p.steps) CHECK(st.kind != step_kind::experts);
    CHECK(p.steps[std::size_t(p.step_of[std::size_t(net.gate_out.id)])].kind == step_kind::op);
    CHECK(p.steps[std::size_t(p.step_of[std::size_t(net.down_out.id)])].kind == step_kind::op);
    CHECK(p.steps[std::size_t(p.step_of[std::size_t(net.act.id)])].rounds < 0);
}

TEST_CASE("the router's float mul_mat, its softmax and its top_k are one step, and the down's experts step carries the weighted_sum") {
    test::moe_net net(qtype::q8_0, 64, 96, 8, 2, 3);
    cpu::backend cpu_backend;
    for (bool experts : {true, false}) {
        CAPTURE(experts);
        graph::lower_options o;
        o.experts = experts;
        const auto p = graph::make_plan(net.g, cpu_sizes(net.g, cpu_backend), {}, o);
        const auto top_k = std::size_t(p.step_of[std::size_t(net.ids.id)]);
        CHECK((p.step_of[std::size_t(net.probs.id)] == int32_t(top_k)) == experts);
        const int32_t logits = net.g.nodes()[std::size_t(net.probs.id)].src[0];
        if (experts) CHECK(p.steps[top_k].nodes == std::vector<int32_t>{logits, net.probs.id, net.ids.id});
        CHECK(p.where[std::size_t(logits)] == graph::storage::arena);  // the router's logits stay written
        CHECK(p.where[std::size_t(net.probs.id)] == graph::storage::arena);  // expert_weights reads them
        const auto down = std::size_t(p.step_of[std::size_t(net.down_out.id)]);
        const auto sum = std::size_t(p.step_of[std::size_t(net.out.id)]);
        CHECK(p.steps[down].carries == (experts ? int32_t(sum) : -1));
        CHECK(p.steps[sum].carried_by == (experts ? int32_t(down) : -1));
        // The carried sum is placed apart from what the down reads and from its products.
        const auto o_ = std::size_t(net.out.id), d = std::size_t(net.down_out.id);
        CHECK((p.offset[o_] + p.bytes[o_] <= p.offset[d] || p.offset[d] + p.bytes[d] <= p.offset[o_]));
    }
}

