// gpt-oss on the CPU backend, and YaRN for every architecture: the loaded options and the graph
// they build, the sliding window and YaRN changing the logits as the naive forward
// (model_fixtures.hpp) says, and the keys and tensors llmrt cannot honour refused, naming them.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "arch_fixtures.hpp"
#include "float_forward.hpp"
#include "loader_edits.hpp"

using namespace llmrt;

namespace {

using test::load_error;
using test::mentions;
using test::rebuilt;

const std::vector<int32_t> tokens(test::model_prompt.begin(), test::model_prompt.begin() + 8);

using test::file_of;

// The logits of `tokens` with float activations, and the naive forward's.
test::logits_and_reference run(const gguf::writer& w) { return test::float_forward(file_of(w), tokens); }

model::llama_shape oss_shape() { return test::gpt_oss_variant().shape; }

gguf::writer oss_file(const model::llama_shape& s = oss_shape()) { return model::make_random_llama(s, qtype::q8_0); }

}  // namespace

TEST_CASE("gpt-oss loads its biases, sinks, post-attention norm and YaRN, and builds its layers from them") {
    const auto w = model::load_llama_weights(*file_of(oss_file()));
    const model::llama_hparams& h = w.hparams;
    CHECK(h.arch == &model::arch::gpt_oss);
    CHECK(h.n_swa == 3);
    CHECK(h.sliding(0));
    CHECK_FALSE(h.sliding(1));
    CHECK(h.rope_ext_factor == 1.0f);
    CHECK(h.rope_freq_scale == 0.25f);
    CHECK(h.n_ctx_orig_yarn == 64);
    // llama.cpp's float order: (0.1·ln 4 + 1) · (1 / (1 + 0.1·ln 4)), which rounds to about 1.
    CHECK(h.rope_attn_factor == (0.1f * 1.0f * std::log(4.0f) + 1.0f) * (1.0f / (1.0f + 0.1f * std::log(4.0f))));
    const auto& l0 = w.layers[0];
    CHECK(l0.ffn_norm.name == "blk.0.post_attention_norm.weight");
    for (const auto* r : {&l0.attn_output_bias, &l0.attn_sinks, &l0.ffn_gate_inp_bias, &l0.ffn_gate_exps_bias,
                          &l0.ffn_up_exps_bias, &l0.ffn_down_exps_bias})
        CHECK(r->data != nullptr);
    CHECK(l0.ffn_down_exps_bias.ne0 == 64);
    CHECK(l0.ffn_down_exps_bias.ne1 == 4);

    const model::llama_graph g = model::build_llama_graph(w, 16, 4);
    auto node = [&](const std::string& name) -> const graph::node& { return g.g[g.g.find(name)]; };
    CHECK(node("blk.0.attn").attention.window == 3);
    CHECK(node("blk.1.attn").attention.window == 0);
    CHECK(g.g[graph::tensor{node("blk.0.attn").src[4]}].name == "blk.0.attn_sinks.weight");
    CHECK(node("blk.0.attn_out_bias").op == graph::op::add);
    const graph::rope_params& r = node("blk.1.q_rope").rope;
    CHECK(r.ext_factor == 1.0f);
    CHECK(r.corr_low == 0.0f);
    CHECK(r.corr_high == 3.0f);
    // The k largest logits (with the router's bias), weighed by their softmax.
    CHECK(g.g[graph::tensor{node("blk.0.ffn_moe_topk").src[0]}].name == "blk.0.ffn_moe_logits_bias");
    CHECK(node("blk.0.ffn_moe_weights").norm == graph::expert_norm::softmax);
    CHECK(node("blk.0.ffn_moe_swiglu_oai").alpha == 1.702f);
    CHECK(node("blk.0.ffn_moe_swiglu_oai").limit == 7.0f);
    CHECK(node("blk.0.ffn_moe_down_biased").op == graph::op::add_id);
    CHECK_FALSE(g.g.find("blk.0.ffn_moe_probs").valid());
}

TEST_CASE("gpt-oss's window changes a sliding layer's logits only once the positions pass it, as the naive forward says") {
    model::llama_shape s = oss_shape();
    const auto windowed = run(oss_file(s));
    CHECK(test::nmse(windowed.logits.data(), windowed.reference.data(), windowed.reference.size()) < 1e-10);
    s.sliding_window = 64;  // wider than any position here
    const auto wide = run(oss_file(s));
    CHECK(test::nmse(wide.logits.data(), wide.reference.data(), wide.reference.size()) < 1e-10);
    const std::size_t n_vocab = windowed.logits.size() / tokens.size();
    // Positions 0..2 see every key either way; from 3 on the window drops the first ones.
    CHECK(test::same_bits(std::span(windowed.logits).first(3 * n_vocab), std::span(wide.logits).first(3 * n_vocab)));
    CHECK(!test::same_bits(std::span(windowed.logits).subspan(3 * n_vocab, n_vocab),
                           std::span(wide.logits).subspan(3 * n_vocab, n_vocab)));
}

TEST_CASE("an integer sliding_window_pattern picks the sliding layers as llama.cpp's set_swa_pattern does") {
    auto sliding_layers = [](uint32_t pattern) {
        const auto w = model::load_llama_weights(*file_of(rebuilt(oss_file(), "", [&](gguf::writer& out) {
            out.set("gpt-oss.attention.sliding_window_pattern", pattern);
        })));
        return std::vector<bool>{w.hparams.sliding(0), w.hparams.sliding(1), w.hparams.sliding(2), w.hparams.sliding(3)};
    };
    CHECK(sliding_layers(2) == std::vector<bool>{true, false, true, false});
    CHECK(sliding_layers(1) == std::vector<bool>{false, false, false, false});
    CHECK(sliding_layers(0) == std::vector<bool>{true, true, true, true});
    CHECK(sliding_layers(3) == std::vector<bool>{true, true, false, true});
}

TEST_CASE("rope.freq_base_swa gives gpt-oss's sliding layers their own base, as the naive forward says") {
    const auto r = run(rebuilt(oss_file(), "", [](gguf::writer& w) { w.set("gpt-oss.rope.freq_base_swa", 500.0f); }));
    CHECK(test::nmse(r.logits.data(), r.reference.data(), r.reference.size()) < 1e-10);
    CHECK(!test::same_bits(r.logits, run(oss_file()).logits));
}

TEST_CASE("YaRN and rope.scaling.attn_factor work for every architecture, and type none ignores the factor") {
    model::llama_shape s = test::small_shape(qtype::q8_0);
    s.vocabulary = false;
    const auto plain = run(model::make_random_llama(s, qtype::q8_0));
    s.rope_scaling_type = "yarn";
    s.rope_scaling_factor = 8.0f;
    s.rope_original_context = 32;
    const auto yarn = run(model::make_random_llama(s, qtype::q8_0));
    CHECK(test::nmse(yarn.logits.data(), yarn.reference.data(), yarn.reference.size()) < 1e-10);
    CHECK(!test::same_bits(yarn.logits, plain.logits));
    s.rope_scaling_type = "linear";
    const auto scaled = run(rebuilt(model::make_random_llama(s, qtype::q8_0), "",
                                    [](gguf::writer& w) { w.set("llama.rope.scaling.attn_factor", 1.5f); }));
    CHECK(test::nmse(scaled.logits.data(), scaled.reference.data(), scaled.reference.size()) < 1e-10);
    s.rope_scaling_type = "none";  // llama.cpp: "never scale if scaling type is none"
    CHECK(test::same_bits(run(model::make_random_llama(s, qtype::q8_0)).logits, plain.logits));
}

TEST_CASE("gpt-oss files missing a tensor or key it needs, or with ones it cannot honour, are refused, naming them") {
    const gguf::writer base = oss_file();
    for (const char* t : {"blk.0.attn_sinks.weight", "blk.1.attn_output.bias", "blk.0.ffn_gate_inp.bias",
                          "blk.1.ffn_down_exps.bias", "blk.0.post_attention_norm.weight", "output.weight"}) {
        CAPTURE(t);
        CHECK(mentions(load_error(rebuilt(base, t)), t));
    }
    CHECK(mentions(load_error(rebuilt(base, "", [](gguf::writer& w) {
                       w.add_tensor("blk.0.ffn_norm.weight", qtype::f32, {64}, std::vector<std::byte>(256));
                   })),
                   "blk.0.ffn_norm.weight"));
    auto with = [&](const char* key, const gguf::value& v) {
        return load_error(rebuilt(base, "", [&](gguf::writer& w) { w.set(key, v); }));
    };
    CHECK(mentions(with("gpt-oss.attention.sliding_window", uint32_t(0)), "gpt-oss.attention.sliding_window"));
    CHECK(mentions(with("gpt-oss.attention.sliding_window_pattern", gguf::array(std::vector<bool>{true, false})),
                   "gpt-oss.attention.sliding_window_pattern"));
    CHECK(mentions(with("gpt-oss.expert_weights_scale", 2.5f), "gpt-oss.expert_weights_scale"));
    CHECK(with("gpt-oss.expert_weights_scale", 1.0f) == "");
    CHECK(mentions(with("gpt-oss.rope.scaling.type", std::string("longrope")), "gpt-oss.rope.scaling.type"));
    CHECK(mentions(with("gpt-oss.rope.freq_base_swa", -1.0f), "gpt-oss.rope.freq_base_swa"));
    gguf::writer no_window;
    for (const auto& [key, value] : base.metadata())
        if (key != "gpt-oss.attention.sliding_window") no_window.set(key, value);
    for (const auto& t : base.tensors()) no_window.add_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims), t.bytes());
    CHECK(mentions(load_error(no_window), "gpt-oss.attention.sliding_window"));
    model::llama_shape tied = oss_shape();
    tied.tied_output = true;
    CHECK_THROWS_AS(model::make_random_llama(tied, qtype::q8_0), llmrt::error);
}
