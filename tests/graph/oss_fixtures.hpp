// Small graphs that each use one of gpt-oss's ops or options (rope with YaRN, attention with a
// window or sinks, swiglu_oai, add_id, expert_norm::softmax), for the GPU backends' tests: a
// backend without the feature must refuse the graph when it prepares it, naming the feature; one
// with it must agree with the CPU backend. And gpt-oss-20b's rope parameters (oss_rope).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <llmrt/graph/graph.hpp>

namespace llmrt::test {

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

}  // namespace llmrt::test
