// Small graphs that each use one of gpt-oss's ops or options (rope with YaRN, attention with a
// window or sinks, swiglu_oai, add_id, expert_norm::softmax), for the GPU backends' tests: a
// backend without the feature must refuse the graph when it prepares it, naming the feature; a
// backend with it must agree with the CPU backend. Then gpt-oss's rope and a gpt-oss-shaped block.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/graph/graph.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/reference.hpp>

namespace llmrt::test {

struct oss_feature {
    std::string name;  // the words the backend's refusal names
    std::function<graph::graph()> build;
};

inline std::vector<oss_feature> oss_features() {
    static const std::vector<float> ones(256, 1.0f);
    auto attention = [](int32_t window, bool sinks) {
        graph::graph g(2);
        const auto q = g.input("q", qtype::f32, 32);
        const auto pos = g.input("pos", graph::i32_type, 1);
        const auto kc = g.state("k", qtype::f16, 16, 8);
        const auto vc = g.state("v", qtype::f16, 16, 8);
        graph::attention_params p{4, 2, 8, 0.3f};
        p.window = window;
        const auto s = sinks ? g.weight("sinks", qtype::f32, 4, 1, ones.data()) : graph::tensor{};
        g.mark_output(g.attention(q, g.set_rows(kc, g.input("kx", qtype::f32, 16), pos),
                                  g.set_rows(vc, g.input("vx", qtype::f32, 16), pos), pos, p, s));
        return g;
    };
    return {
        {"rope with YaRN",
         [] {
             graph::graph g(2);
             graph::rope_params p{4, 8, 8, 150000.0f, graph::rope_order::neox, 1.0f / 32.0f};
             p.ext_factor = 1.0f;
             p.corr_high = 3.0f;
             g.mark_output(g.rope(g.input("x", qtype::f32, 32), g.input("pos", graph::i32_type, 1), p));
             return g;
         }},
        {"attention with a sliding window", [=] { return attention(3, false); }},
        {"attention with sinks", [=] { return attention(0, true); }},
        {"swiglu_oai",
         [] {
             graph::graph g(2);
             const auto x = g.input("x", qtype::f32, 32);
             g.mark_output(g.swiglu_oai(x, x, 1.702f, 7.0f));
             return g;
         }},
        {"add_id",
         [] {
             graph::graph g(2);
             const auto x = g.input("x", qtype::f32, 32);
             // ids from 4 logits: within the bias's 4 experts whatever the inputs.
             const auto ids = g.top_k(g.input("logits", qtype::f32, 4), 2);
             g.mark_output(g.add_id(x, g.weight("b", qtype::f32, 16, 4, ones.data()), ids));
             return g;
         }},
        {"expert_norm::softmax",
         [] {
             graph::graph g(2);
             const auto x = g.input("x", qtype::f32, 32);
             g.mark_output(g.expert_weights(x, g.top_k(x, 2), graph::expert_norm::softmax));
             return g;
         }},
    };
}

// gpt-oss-20b's rope: NeoX, base 150000, YaRN factor 32 over an original context of 4096.
inline graph::rope_params oss_rope(int32_t n_head, int32_t head_dim) {
    graph::rope_params p{n_head, head_dim, head_dim, 150000.0f, graph::rope_order::neox, 1.0f / 32.0f};
    const graph::yarn_dims d = graph::yarn_corr_dims(head_dim, 4096, p.freq_base);
    p.ext_factor = 1.0f;
    p.attn_factor = 1.3465736f;  // 0.1·ln(32) + 1
    p.corr_low = d.low;
    p.corr_high = d.high;
    return p;
}

// One gpt-oss-shaped block: biased q/k/v, YaRN rope, a windowed attention with sinks into f16
// caches, then a router with a bias, top_k of the logits, softmax weights, experts (f32, or of a
// weight type for the GPU backends' mul_mat_id) with biases and swiglu_oai.
struct oss_block {
    static constexpr int64_t n_embd = 64, n_head = 4, n_head_kv = 2, head_dim = 16, n_ctx = 16;
    static constexpr int64_t n_expert = 4, k = 2, n_ff = 32;
    std::vector<std::vector<float>> data;
    std::vector<std::vector<uint8_t>> quantized;
    qtype experts = qtype::f32;
    graph::graph g;
    graph::tensor h, pos, out, weights;
    std::size_t rope_cache_steps = 0;

    const float* values(int64_t n, uint64_t seed, float scale = 0.2f) {
        data.push_back(testing::gaussian(std::size_t(n), seed, scale));
        return data.back().data();
    }
    graph::tensor w(const char* name, int64_t ne0, int64_t ne1, uint64_t seed) {
        return g.weight(name, qtype::f32, ne0, ne1, values(ne0 * ne1, seed));
    }
    // A stack of experts of `experts`' type.
    graph::tensor w_experts(const char* name, int64_t ne0, int64_t ne1, uint64_t seed) {
        if (experts == qtype::f32) return w(name, ne0, ne1, seed);
        quantized.push_back(testing::quantize_matrix(experts, values(ne0 * ne1, seed), ne1, ne0));
        return g.weight(name, experts, ne0, ne1, quantized.back().data());
    }

    explicit oss_block(int64_t max_batch, qtype expert_type = qtype::f32) : experts(expert_type), g(max_batch) {
        h = g.input("h", qtype::f32, n_embd);
        pos = g.input("pos", graph::i32_type, 1);
        const auto kc = g.state("k", qtype::f16, n_head_kv * head_dim, n_ctx);
        const auto vc = g.state("v", qtype::f16, n_head_kv * head_dim, n_ctx);
        auto biased = [&](const char* name, int64_t rows, uint64_t seed) {
            return g.add(g.mul_mat(w(name, n_embd, rows, seed), h), w((std::string(name) + ".b").c_str(), rows, 1, seed + 50));
        };
        const graph::rope_params rp = oss_rope(n_head, head_dim);
        graph::rope_params rk = rp;
        rk.n_head = n_head_kv;
        const auto q = g.rope(biased("q", n_head * head_dim, 1), pos, rp);
        const auto kr = g.rope(biased("k", n_head_kv * head_dim, 2), pos, rk);
        const auto v = biased("v", n_head_kv * head_dim, 3);
        graph::attention_params ap{n_head, n_head_kv, head_dim, 0.25f};
        ap.window = 3;
        const auto att = g.attention(q, g.set_rows(kc, kr, pos), g.set_rows(vc, v, pos), pos, ap,
                                     g.weight("sinks", qtype::f32, n_head, 1, values(n_head, 4, 1.0f)));
        const auto logits = g.add(g.mul_mat(w("router", n_head * head_dim, n_expert, 5), att), w("router.b", n_expert, 1, 6));
        const auto ids = g.top_k(logits, k);
        weights = g.expert_weights(logits, ids, graph::expert_norm::softmax);
        auto expert = [&](const char* name, graph::tensor x, int64_t in, int64_t rows, uint64_t seed) {
            const auto y = g.mul_mat_id(w_experts(name, in, rows * n_expert, seed), x, ids, n_expert);
            return g.add_id(y, w((std::string(name) + ".b").c_str(), rows, n_expert, seed + 50), ids);
        };
        const auto act = g.swiglu_oai(expert("gate", att, n_embd, n_ff, 7), expert("up", att, n_embd, n_ff, 8), 1.702f, 7.0f);
        out = g.weighted_sum(expert("down", act, n_ff, n_embd, 9), weights);
        g.mark_output(out);
        g.mark_output(weights);
    }

    // Runs positions 0..n-1 one batch of n, or one token at a time; the outputs of every token.
    std::vector<float> run(int64_t n, bool fuse, bool one_at_a_time) {
        cpu::backend b;
        graph::executor ex(b, g, {.fuse = fuse});
        for (const auto& s : ex.get_plan().steps) rope_cache_steps += s.kind == graph::step_kind::rope_cache;
        const auto x = testing::gaussian(std::size_t(n_embd * n), 90, 1.0f);
        std::vector<float> all;
        for (int64_t t = 0; t < n;) {
            const int64_t batch = one_at_a_time ? 1 : n;
            std::vector<int32_t> p(static_cast<std::size_t>(batch));
            for (int64_t i = 0; i < batch; ++i) p[std::size_t(i)] = int32_t(t + i);
            ex.write(h, std::span<const float>(x.data() + t * n_embd, std::size_t(batch * n_embd)));
            ex.write(pos, std::span<const int32_t>(p));
            ex.run(batch);
            std::vector<float> y(std::size_t(batch * n_embd));
            ex.read(out, std::span<float>(y));
            all.insert(all.end(), y.begin(), y.end());
            t += batch;
        }
        return all;
    }
};

}  // namespace llmrt::test
