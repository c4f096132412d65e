// Tensor-parallel llama on the CPU backend: N ranks on N threads (comm::local_group), each a
// llama_model of its own shard, against the single model.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <llmrt/comm/local.hpp>
#include <llmrt/cpu/backend.hpp>
#include <llmrt/model/model.hpp>

#include "model_fixtures.hpp"

using namespace llmrt;

namespace {

using test::tp_case;
using test::tp_cases;
using test::tp_shape;

// Float activations: quantized weights meet the activations as they are.
cpu::backend_options float_options(comm::communicator* c = nullptr) {
    cpu::backend_options o;
    o.quantized_activations = cpu::activation_format::f32;
    o.communicator = c;
    return o;
}

constexpr model::llama_options base_options{.n_ctx = 32, .max_batch = 8};

using test::prompt_then_tokens;

// What every rank of a tensor-parallel run of `fn` returned, rank by rank.
template <class Fn>
auto on_ranks(const std::shared_ptr<const gguf::file>& file, int32_t ranks, Fn&& fn) {
    using result = decltype(fn(std::declval<model::llama_model<cpu::backend>&>()));
    std::vector<result> out(static_cast<std::size_t>(ranks));
    comm::local_group group(ranks);
    comm::run_ranks(group, [&](comm::communicator& c) {
        cpu::backend b(float_options(&c));
        model::llama_options o = base_options;
        o.tp = {c.rank(), ranks};
        model::llama_model<cpu::backend> m(b, file, o);
        out[std::size_t(c.rank())] = fn(m);
    });
    return out;
}

double nmse(const std::vector<float>& out, const std::vector<float>& ref) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        num += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
        den += double(ref[i]) * ref[i];
    }
    return num / den;
}

}  // namespace

TEST_CASE("the tensor-parallel forward at 1, 2 and 4 ranks equals the single forward, the same bits on every rank") {
    for (const tp_case& c : tp_cases()) {
        CAPTURE(c.label);
        const auto file = test::model_file(c.shape, qtype::q8_0, 7);
        cpu::backend single_backend(float_options());
        model::llama_model<cpu::backend> single(single_backend, file, base_options);
        const auto expected = prompt_then_tokens(single);
        for (int32_t ranks : {1, 2, 4}) {
            CAPTURE(ranks);
            const auto got = on_ranks(file, ranks, [](auto& m) { return prompt_then_tokens(m); });
            for (const auto& g : got) {
                REQUIRE(g.size() == expected.size());
                CHECK(test::same_bits(g, got[0]));
            }
            const double e = nmse(got[0], expected);
            MESSAGE(c.label << ", " << ranks << " ranks: NMSE " << e);
            CHECK(e < 1e-10);
            if (ranks == 1) CHECK(test::same_bits(got[0], expected));  // collectives of one rank copy
        }
    }
}

TEST_CASE("greedy ids of 16 tokens are the same at 1, 2 and 4 ranks as on the single model") {
    for (const tp_case& c : tp_cases()) {
        CAPTURE(c.label);
        const auto file = test::model_file(c.shape, qtype::q8_0, 11);
        cpu::backend single_backend(float_options());
        model::llama_model<cpu::backend> single(single_backend, file, base_options);
        const auto expected = model::generate_greedy(single, std::span<const int32_t>(test::model_prompt), 16);
        for (int32_t ranks : {1, 2, 4}) {
            CAPTURE(ranks);
            const auto got = on_ranks(file, ranks, [](auto& m) {
                return model::generate_greedy(m, std::span<const int32_t>(test::model_prompt), 16);
            });
            for (const auto& g : got) CHECK(g == expected);
        }
    }
}

TEST_CASE("a rank's graph is the single graph over its slices, with an all_reduce after attn_out and ffn_out and an all_gather of the logits") {
    const auto file = test::model_file(tp_shape("qwen2"), qtype::q8_0, 3);
    const model::llama_weights full = model::load_llama_weights(*file);
    const model::llama_shard s = model::shard_llama_weights(full, {1, 4});
    CHECK(s.weights.hparams.n_head == 2);
    CHECK(s.weights.hparams.n_head_kv == 1);
    CHECK(s.weights.hparams.n_ff == 64);
    CHECK(s.weights.hparams.head_dim() == 16);
    CHECK(s.weights.layers[0].attn_output.ne0 == 32);
    CHECK(s.weights.layers[0].attn_k_bias.ne0 == 16);
    CHECK(s.weights.output.ne1 == 81);  // 322 rows over 4 ranks: 81, 81, 80, 80
    const model::llama_graph m = model::build_llama_graph(s, 16, 4);
    const model::llama_graph plain = model::build_llama_graph(full, 16, 4);
    int reduces = 0, gathers = 0;
    for (const graph::node& nd : m.g.nodes()) {
        reduces += nd.op == graph::op::all_reduce;
        gathers += nd.op == graph::op::all_gather;
    }
    CHECK(reduces == 2 * 2);
    CHECK(gathers == 1);
    CHECK(m.g.size() == plain.g.size() + 2 * 2 + 1);
    CHECK(m.g[m.g.find("blk.1.ffn_out")].op == graph::op::all_reduce);
    CHECK(m.g[m.g.find("logits")].ne0 == 322);
    for (const graph::node& nd : plain.g.nodes()) CHECK(nd.op != graph::op::all_reduce);
}

TEST_CASE("splits that do not divide are an llmrt::error naming the heads or the tensor") {
    const auto four_kv = test::model_file(tp_shape("llama"), qtype::q8_0);
    const model::llama_weights w = model::load_llama_weights(*four_kv);
    CHECK_THROWS_WITH_AS(model::shard_llama_weights(w, {0, 8}), doctest::Contains("n_head_kv = 4"), llmrt::error);
    CHECK_THROWS_WITH_AS(model::shard_llama_weights(w, {0, 3}), doctest::Contains("n_head = 8"), llmrt::error);
    CHECK_THROWS_WITH_AS(model::shard_llama_weights(w, {2, 2}), doctest::Contains("rank 2 of 2"), llmrt::error);
    // n_embd 64, 4 heads of 16 over 4 ranks: attn_output's k slices of 16 are half a q8_0 block.
    model::llama_shape narrow = tp_shape("llama");
    narrow.n_embd = 64;
    narrow.n_head = 4;
    const auto narrow_file = test::model_file(narrow, qtype::q8_0);
    const model::llama_weights nw = model::load_llama_weights(*narrow_file);
    CHECK_THROWS_WITH_AS(model::shard_llama_weights(nw, {0, 4}),
                         doctest::Contains("'blk.0.attn_output.weight' (q8_0) splits along k = 64 into slices of 16"),
                         llmrt::error);
    // n_ff 96 over 2 ranks: ffn_down's slices of 48 are not whole blocks.
    model::llama_shape ff = tp_shape("llama");
    ff.n_ff = 96;
    const auto ff_file = test::model_file(ff, qtype::q8_0);
    CHECK_THROWS_WITH_AS(model::shard_llama_weights(model::load_llama_weights(*ff_file), {0, 2}),
                         doctest::Contains("'blk.0.ffn_down.weight'"), llmrt::error);
    // 6 experts over 4 ranks.
    model::llama_shape moe = tp_shape("qwen3moe");
    moe.n_expert = 6;
    const auto moe_file = test::model_file(moe, qtype::q8_0);
    CHECK_THROWS_WITH_AS(model::shard_llama_weights(model::load_llama_weights(*moe_file), {0, 4}),
                         doctest::Contains("expert_count = 6 is not a multiple of the 4 ranks"), llmrt::error);
}

TEST_CASE("an expert-parallel rank holds whole experts, keeps its slots with shard_ids and shard_weights, and all-reduces ffn_out") {
    const auto file = test::model_file(tp_shape("qwen3moe"), qtype::q8_0, 3);
    const model::llama_weights full = model::load_llama_weights(*file);
    const model::llama_shard s = model::shard_llama_weights(full, {1, 2});
    const model::llama_hparams& h = s.weights.hparams;
    CHECK(h.n_expert == 8);  // the router still picks among all of them
    CHECK(h.experts_held == 4);
    CHECK(h.expert_first == 4);
    const model::llama_layer_weights& l = s.weights.layers[0];
    CHECK(l.ffn_gate_exps.ne1 == 4 * 64);
    CHECK(l.ffn_down_exps.ne1 == 4 * 128);
    // Expert 4's rows are the shard's first.
    const auto* full_gate = static_cast<const std::byte*>(full.layers[0].ffn_gate_exps.data);
    CHECK(l.ffn_gate_exps.data == full_gate + 4 * 64 * row_size(l.ffn_gate_exps.type, l.ffn_gate_exps.ne0));
    CHECK(l.ffn_gate_inp.ne1 == 8);
    const model::llama_graph m = model::build_llama_graph(s, 16, 4);
    const graph::graph& g = m.g;
    const graph::node& ids = g[g.find("blk.0.ffn_moe_topk_held")];
    CHECK(ids.op == graph::op::shard_ids);
    CHECK(ids.expert0 == 4);
    CHECK(ids.n_expert == 4);
    CHECK(g[g.find("blk.0.ffn_moe_weights_held")].op == graph::op::shard_weights);
    CHECK(g[g.find("blk.0.ffn_moe_gate")].n_expert == 4);
    CHECK(g[g.find("blk.1.ffn_out")].op == graph::op::all_reduce);
    CHECK(g[g.find("blk.1.ffn_out_partial")].op == graph::op::weighted_sum);
}

TEST_CASE("a tensor-parallel model on a backend of another rank or group size is refused, naming both") {
    const auto file = test::model_file(tp_shape("llama"), qtype::q8_0);
    comm::local_group group(2);
    cpu::backend b(float_options(&group.rank(1)));
    model::llama_options o = base_options;
    o.tp = {0, 2};
    CHECK_THROWS_WITH_AS(model::llama_model<cpu::backend>(b, file, o), doctest::Contains("rank 0 of 2 on a cpu backend"),
                         llmrt::error);
    cpu::backend alone(float_options());
    CHECK_THROWS_WITH_AS(model::llama_model<cpu::backend>(alone, file, o), doctest::Contains("is rank 0 of 1"), llmrt::error);
}
