// The architectures of model/arch/ on the CPU backend: each against a naive double-precision
// forward of its formulas; linear rope scaling and rope_freqs changing the logits as that forward
// says; fused and unfused plans and batches agreeing bit for bit; and every key or tensor llmrt
// cannot honour refused with an error naming it (gpt-oss's own cases: test_model_gpt_oss.cpp).
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "arch_fixtures.hpp"
#include "float_forward.hpp"
#include "loader_edits.hpp"

using namespace llmrt;
using cpu_model = model::llama_model<cpu::backend>;

namespace {

using test::load_error;
using test::mentions;
using test::rebuilt;

const std::vector<int32_t> tokens(test::model_prompt.begin(), test::model_prompt.begin() + 6);

using test::file_of;

// The logits of `tokens` on the CPU with float activations, and the reference's.
test::logits_and_reference run(const std::shared_ptr<const gguf::file>& file) { return test::float_forward(file, tokens); }

double nmse_between(const std::vector<float>& a, const std::vector<float>& b) {
    std::vector<double> bd(b.begin(), b.end());
    return test::nmse(a.data(), bd.data(), bd.size());
}

model::llama_shape shape_of(const std::string& arch) {
    model::llama_shape s = test::small_shape(qtype::q8_0);
    s.vocabulary = false;
    s.n_layer = 1;
    s.architecture = arch;
    return s;
}

}  // namespace

TEST_CASE("every architecture's logits match a naive double-precision forward of its formulas") {
    for (const auto& v : test::every_arch_variant()) {
        CAPTURE(v.label);
        const auto r = run(file_of(model::make_random_llama(v.shape, qtype::q8_0)));
        CHECK(test::nmse(r.logits.data(), r.reference.data(), r.reference.size()) < 1e-10);
    }
}

TEST_CASE("the architecture's options reach the weights and the graph") {
    const auto variants = test::arch_variants();
    const auto llama = model::load_llama_weights(*file_of(model::make_random_llama(variants[0].shape, qtype::q8_0)));
    CHECK(llama.hparams.arch == &model::arch::llama);
    CHECK(llama.hparams.rope_freq_scale == 0.25f);
    CHECK(llama.rope_freqs.data != nullptr);
    CHECK(llama.layers[0].attn_q_bias.data != nullptr);
    const auto qwen3 = model::load_llama_weights(*file_of(model::make_random_llama(variants[3].shape, qtype::q8_0)));
    CHECK(qwen3.hparams.head_dim() == 32);
    CHECK(qwen3.hparams.n_embd_q() == 128);
    CHECK(qwen3.layers[0].attn_q_norm.data != nullptr);
    const model::llama_graph g = model::build_llama_graph(qwen3, 16, 4);
    const graph::node& q_rope = g.g[g.g.find("blk.0.q_rope")];
    CHECK(q_rope.rope.order == graph::rope_order::neox);
    CHECK(q_rope.rope.head_dim == 32);
    CHECK(g.g[graph::tensor{q_rope.src[0]}].name == "blk.0.q_norm");
    const auto qwen2 = model::load_llama_weights(*file_of(model::make_random_llama(variants[1].shape, qtype::q8_0)));
    CHECK(qwen2.layers[0].attn_k_bias.data != nullptr);
    CHECK(!qwen2.tied_output);
    const model::llama_graph g2 = model::build_llama_graph(qwen2, 16, 4);
    const graph::node& k_rope = g2.g[g2.g.find("blk.0.k_rope")];
    CHECK(k_rope.rope.order == graph::rope_order::neox);
    CHECK(g2.g[graph::tensor{k_rope.src[0]}].name == "blk.0.k_bias");
}

TEST_CASE("linear rope scaling changes the logits as the reference forward says") {
    model::llama_shape s = shape_of("llama");
    const auto plain = run(file_of(model::make_random_llama(s, qtype::q8_0)));
    s.rope_scaling_type = "linear";
    s.rope_scaling_factor = 8.0f;
    const auto scaled = run(file_of(model::make_random_llama(s, qtype::q8_0)));
    CHECK(test::nmse(scaled.logits.data(), scaled.reference.data(), scaled.reference.size()) < 1e-10);
    CHECK(nmse_between(plain.logits, scaled.logits) > 1e-6);
    // Scaling by 1 is no scaling, bit for bit; so is type "none" without a factor.
    s.rope_scaling_factor = 1.0f;
    CHECK(test::same_bits(run(file_of(model::make_random_llama(s, qtype::q8_0))).logits, plain.logits));
    s.rope_scaling_type = "none";
    s.rope_scaling_factor = 0.0f;
    CHECK(test::same_bits(run(file_of(model::make_random_llama(s, qtype::q8_0))).logits, plain.logits));
}

TEST_CASE("rope_freqs divides each pair's angle by its factor as the reference forward says") {
    model::llama_shape s = shape_of("llama");
    const auto plain = run(file_of(model::make_random_llama(s, qtype::q8_0)));
    s.rope_freqs = true;
    const auto factored = run(file_of(model::make_random_llama(s, qtype::q8_0)));
    CHECK(test::nmse(factored.logits.data(), factored.reference.data(), factored.reference.size()) < 1e-10);
    CHECK(nmse_between(plain.logits, factored.logits) > 1e-6);
}

TEST_CASE("fused and unfused plans, and batches and single tokens, give every architecture the same bits") {
    for (const auto& v : test::every_arch_variant()) {
        CAPTURE(v.label);
        const auto file = file_of(model::make_random_llama(v.shape, qtype::q8_0));
        const model::llama_weights w = model::load_llama_weights(*file);
        const model::llama_graph built = model::build_llama_graph(w, 16, 8);
        cpu::backend b;
        graph::executor<cpu::backend> fused(b, built.g), unfused(b, built.g, {.fuse = false});
        const auto positions = test::iota_positions(0, tokens.size());
        std::vector<float> a(tokens.size() * std::size_t(w.hparams.n_vocab)), c(a.size());
        for (auto* e : {&fused, &unfused}) {
            e->write(built.tokens, std::span<const int32_t>(tokens));
            e->write(built.positions, std::span<const int32_t>(positions));
            e->run(int64_t(tokens.size()));
        }
        fused.read(built.logits, std::span<float>(a));
        unfused.read(built.logits, std::span<float>(c));
        CHECK(test::same_bits(a, c));
        cpu_model batched(b, file, {.n_ctx = 16, .max_batch = 8}), single(b, file, {.n_ctx = 16, .max_batch = 8});
        const auto l = batched.forward(tokens, positions);
        CHECK(test::same_bits(std::vector<float>(l.begin(), l.end()), test::one_by_one(single, tokens)));
    }
}

TEST_CASE("an unknown architecture is refused, naming general.architecture and the known ones") {
    const gguf::writer w = rebuilt(model::make_random_llama(shape_of("llama"), qtype::q8_0), "",
                                   [](gguf::writer& out) { out.set("general.architecture", std::string("gemma3")); });
    const std::string e = load_error(w);
    CHECK(mentions(e, "general.architecture"));
    CHECK(mentions(e, "\"gemma3\""));
    CHECK(mentions(e, "\"qwen3\""));
}

TEST_CASE("rope scaling other than none, linear and yarn is refused, naming the key") {
    const gguf::writer base = model::make_random_llama(shape_of("qwen2"), qtype::q8_0);
    for (const char* type : {"longrope", "dynamic"}) {
        CAPTURE(type);
        const std::string e = load_error(rebuilt(base, "", [&](gguf::writer& w) {
            w.set("qwen2.rope.scaling.type", std::string(type));
            w.set("qwen2.rope.scaling.factor", 4.0f);
        }));
        CHECK(mentions(e, "qwen2.rope.scaling.type"));
        CHECK(mentions(e, type));
    }
    CHECK(mentions(load_error(rebuilt(base, "", [](gguf::writer& w) { w.set("qwen2.rope.scaling.factor", -2.0f); })),
                   "qwen2.rope.scaling.factor"));
}

TEST_CASE("keys that change the math in ways llmrt does not compute are refused, naming the key") {
    const gguf::writer base = model::make_random_llama(shape_of("llama"), qtype::q8_0);
    CHECK(mentions(load_error(rebuilt(base, "", [](gguf::writer& w) { w.set("llama.expert_count", uint32_t(8)); })),
                   "llama.expert_count"));
    CHECK(load_error(rebuilt(base, "", [](gguf::writer& w) { w.set("llama.expert_count", uint32_t(0)); })) == "");
    CHECK(mentions(load_error(rebuilt(base, "", [](gguf::writer& w) { w.set("llama.attention.value_length", uint32_t(32)); })),
                   "llama.attention.value_length"));
    // A key length the tensors do not have: the first projection says so.
    CHECK(mentions(load_error(rebuilt(base, "", [](gguf::writer& w) { w.set("llama.attention.key_length", uint32_t(32)); })),
                   "blk.0.attn_q.weight"));
}

TEST_CASE("tensors the architecture does not have, or of the wrong size, are refused, naming them") {
    const gguf::writer llama = model::make_random_llama(shape_of("llama"), qtype::q8_0);
    const gguf::writer qwen2 = model::make_random_llama(shape_of("qwen2"), qtype::q8_0);
    const gguf::writer qwen3 = model::make_random_llama(shape_of("qwen3"), qtype::q8_0);
    auto with_tensor = [](const gguf::writer& w, const std::string& name, int64_t n) {
        return rebuilt(w, "", [&](gguf::writer& out) {
            out.add_tensor(name, qtype::f32, {n}, std::vector<std::byte>(std::size_t(n) * 4));
        });
    };
    CHECK(mentions(load_error(with_tensor(llama, "rope_freqs.weight", 5)), "rope_freqs.weight"));  // head_dim 16: 8 factors
    CHECK(mentions(load_error(with_tensor(qwen2, "rope_freqs.weight", 8)), "rope_freqs.weight"));
    CHECK(mentions(load_error(with_tensor(llama, "blk.0.attn_output.bias", 64)), "blk.0.attn_output.bias"));
    CHECK(mentions(load_error(with_tensor(llama, "blk.0.ffn_up.bias", 128)), "blk.0.ffn_up.bias"));
    CHECK(mentions(load_error(with_tensor(llama, "blk.0.ffn_gate_inp.weight", 64)), "blk.0.ffn_gate_inp.weight"));
    CHECK(mentions(load_error(with_tensor(llama, "output.bias", 320)), "output.bias"));
    CHECK(mentions(load_error(with_tensor(qwen3, "blk.0.attn_q.bias", 64)), "blk.0.attn_q.bias"));
    CHECK(mentions(load_error(with_tensor(qwen2, "blk.0.attn_q_norm.weight", 16)), "blk.0.attn_q_norm.weight"));
    CHECK(mentions(load_error(rebuilt(qwen2, "blk.0.attn_k.bias")), "blk.0.attn_k.bias"));
    CHECK(mentions(load_error(rebuilt(qwen3, "blk.0.attn_k_norm.weight")), "blk.0.attn_k_norm.weight"));
}

TEST_CASE("qwen3moe loads its experts as n_expert matrices and builds the router, top-k and weighted sum") {
    const auto variants = test::arch_variants();
    const auto& moe = variants.back().shape;
    REQUIRE(moe.architecture == "qwen3moe");
    const auto w = model::load_llama_weights(*file_of(model::make_random_llama(moe, qtype::q8_0)));
    CHECK(w.hparams.n_expert == 8);
    CHECK(w.hparams.n_expert_used == 2);
    CHECK(w.hparams.n_ff_exp == 96);
    CHECK(w.layers[0].ffn_gate_inp.type == qtype::f32);
    CHECK(w.layers[0].ffn_gate_exps.ne0 == 64);
    CHECK(w.layers[0].ffn_gate_exps.ne1 == 96 * 8);
    CHECK(w.layers[0].ffn_down_exps.ne0 == 96);
    CHECK(w.layers[0].ffn_down_exps.ne1 == 64 * 8);
    CHECK(w.layers[0].ffn_gate.data == nullptr);
    const model::llama_graph g = model::build_llama_graph(w, 16, 4);
    const graph::node& topk = g.g[g.g.find("blk.0.ffn_moe_topk")];
    CHECK(topk.op == graph::op::top_k);
    CHECK(topk.ne0 == 2);
    const graph::node& weights = g.g[g.g.find("blk.0.ffn_moe_weights")];
    CHECK(weights.norm == graph::expert_norm::sum);
    const graph::node& down = g.g[g.g.find("blk.0.ffn_moe_down")];
    CHECK(down.op == graph::op::mul_mat_id);
    CHECK(down.n_expert == 8);
    CHECK(down.ne0 == 64 * 2);
    CHECK(g.g[g.g.find("blk.0.ffn_out")].op == graph::op::weighted_sum);
}

TEST_CASE("qwen3moe without expert_feed_forward_length takes feed_forward_length / expert_used_count, as llama.cpp does") {
    const gguf::writer base = model::make_random_llama(test::arch_variants().back().shape, qtype::q8_0);
    gguf::writer w;
    for (const auto& [key, value] : base.metadata())
        if (key != "qwen3moe.expert_feed_forward_length") w.set(key, value);
    w.set("qwen3moe.feed_forward_length", uint32_t(192));
    for (const auto& t : base.tensors()) w.add_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims), t.bytes());
    CHECK(model::load_llama_weights(*file_of(w)).hparams.n_ff_exp == 96);
}

TEST_CASE("qwen3moe files with missing or wrong expert keys or tensors are refused, naming them") {
    const gguf::writer base = model::make_random_llama(test::arch_variants().back().shape, qtype::q8_0);
    auto with_key = [&](const char* key, uint32_t v) {
        return load_error(rebuilt(base, "", [&](gguf::writer& w) { w.set(key, v); }));
    };
    CHECK(mentions(with_key("qwen3moe.expert_used_count", 9), "qwen3moe.expert_used_count"));
    CHECK(mentions(with_key("qwen3moe.expert_used_count", 0), "qwen3moe.expert_used_count"));
    CHECK(mentions(with_key("qwen3moe.expert_count", 0), "qwen3moe.expert_count"));
    // Experts the tensors do not hold: the first expert tensor says so.
    CHECK(mentions(with_key("qwen3moe.expert_count", 4), "blk.0.ffn_gate_inp.weight"));
    CHECK(mentions(with_key("qwen3moe.expert_feed_forward_length", 64), "blk.0.ffn_gate_exps.weight"));
    CHECK(mentions(load_error(rebuilt(base, "blk.0.ffn_up_exps.weight")), "blk.0.ffn_up_exps.weight"));
    CHECK(mentions(load_error(rebuilt(base, "blk.0.ffn_gate_inp.weight")), "blk.0.ffn_gate_inp.weight"));
    // An expert tensor of two dimensions, and a dense feed-forward beside the experts.
    const std::string flat = load_error(rebuilt(base, "blk.0.ffn_down_exps.weight", [&](gguf::writer& w) {
        for (const auto& t : base.tensors())
            if (t.name == "blk.0.ffn_down_exps.weight") w.add_tensor(t.name, t.type, {96, 64 * 8}, t.bytes());
    }));
    CHECK(mentions(flat, "blk.0.ffn_down_exps.weight"));
    CHECK(mentions(flat, "[96, 64, 8]"));
    const std::string dense = load_error(rebuilt(base, "", [&](gguf::writer& w) {
        for (const auto& t : base.tensors())
            if (t.name == "blk.0.ffn_gate_inp.weight") w.add_tensor("blk.0.ffn_gate.weight", t.type, {64, 8}, t.bytes());
    }));
    CHECK(mentions(dense, "blk.0.ffn_gate.weight"));
    gguf::writer no_count;
    for (const auto& [key, value] : base.metadata())
        if (key != "qwen3moe.expert_count") no_count.set(key, value);
    for (const auto& t : base.tensors()) no_count.add_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims), t.bytes());
    CHECK(mentions(load_error(no_count), "qwen3moe.expert_count"));
}
