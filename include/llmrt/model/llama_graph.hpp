// The forward pass of a llama model as a graph, for a batch of up to max_batch tokens:
//
//   x = token_embd[tokens]
//   per layer:  h = rms_norm(x) ⊙ attn_norm
//               q = rope(Wq h), k = rope(Wk h), v = Wv h       (normal pair order, as GGUF's llama)
//               K[pos] = k, V[pos] = v                          (the layer's KV cache)
//               x = x + Wo · attention(q, K, V)                 (causal, grouped-query)
//               h = rms_norm(x) ⊙ ffn_norm
//               x = x + Wdown · (silu(Wgate h) ⊙ Wup h)
//   logits = Woutput · (rms_norm(x) ⊙ output_norm),  next = argmax(logits)
//
// Nodes carry llama.cpp-like names ("blk.0.q", "blk.0.ffn_out", "logits") so that llmrt-compare
// can say where two backends part ways.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "llmrt/graph/graph.hpp"
#include "llmrt/model/weights.hpp"

namespace llmrt::model {

struct llama_graph {
    graph::graph g;
    graph::tensor tokens, positions;  // inputs: one i32 per token
    graph::tensor logits, next;       // outputs: n_vocab floats and the argmax per token
    std::vector<graph::tensor> k_cache, v_cache;  // states: n_embd_kv x n_ctx per layer
};

// `w` must outlive the graph (the graph points at its bytes). kv_type: f32 or f16.
inline llama_graph build_llama_graph(const llama_weights& w, int32_t n_ctx, int32_t max_batch,
                                     qtype kv_type = qtype::f32) {
    const llama_hparams& h = w.hparams;
    check(n_ctx >= 1, errc::invalid_argument,
          [&] { return "llama graph: n_ctx = " + std::to_string(n_ctx) + " must be at least 1"; });
    llama_graph m{graph::graph(max_batch), {}, {}, {}, {}, {}, {}};
    graph::graph& g = m.g;
    auto weight = [&](const weight_ref& r) {
        const graph::tensor t = g.find(r.name);
        return t.valid() ? t : g.weight(r.name, r.type, r.ne0, r.ne1, r.data);
    };
    auto named = [&](graph::tensor t, std::string name) {
        g.set_name(t, std::move(name));
        return t;
    };

    m.tokens = g.input("tokens", graph::i32_type, 1);
    m.positions = g.input("positions", graph::i32_type, 1);
    const graph::rope_params q_rope{h.n_head, h.head_dim(), h.n_rot, h.rope_freq_base, graph::rope_order::normal};
    graph::rope_params k_rope = q_rope;
    k_rope.n_head = h.n_head_kv;
    const graph::attention_params attn{h.n_head, h.n_head_kv, h.head_dim(), 1.0f / std::sqrt(float(h.head_dim()))};

    graph::tensor x = named(g.get_rows(weight(w.token_embd), m.tokens), "embd");
    for (int32_t l = 0; l < h.n_layer; ++l) {
        const llama_layer_weights& lw = w.layers[std::size_t(l)];
        const std::string p = "blk." + std::to_string(l) + ".";
        graph::tensor hn = named(g.mul(g.rms_norm(x, h.rms_eps), weight(lw.attn_norm)), p + "attn_norm");
        graph::tensor q = named(g.rope(named(g.mul_mat(weight(lw.attn_q), hn), p + "q"), m.positions, q_rope), p + "q_rope");
        graph::tensor k = named(g.rope(named(g.mul_mat(weight(lw.attn_k), hn), p + "k"), m.positions, k_rope), p + "k_rope");
        graph::tensor v = named(g.mul_mat(weight(lw.attn_v), hn), p + "v");
        m.k_cache.push_back(g.state(p + "k_cache", kv_type, h.n_embd_kv(), n_ctx));
        m.v_cache.push_back(g.state(p + "v_cache", kv_type, h.n_embd_kv(), n_ctx));
        graph::tensor kc = g.set_rows(m.k_cache.back(), k, m.positions);
        graph::tensor vc = g.set_rows(m.v_cache.back(), v, m.positions);
        graph::tensor a = named(g.attention(q, kc, vc, m.positions, attn), p + "attn");
        x = named(g.add(x, named(g.mul_mat(weight(lw.attn_output), a), p + "attn_out")), p + "attn_residual");
        hn = named(g.mul(g.rms_norm(x, h.rms_eps), weight(lw.ffn_norm)), p + "ffn_norm");
        graph::tensor gate = named(g.mul_mat(weight(lw.ffn_gate), hn), p + "ffn_gate");
        graph::tensor up = named(g.mul_mat(weight(lw.ffn_up), hn), p + "ffn_up");
        graph::tensor act = named(g.swiglu(gate, up), p + "ffn_swiglu");
        x = named(g.add(x, named(g.mul_mat(weight(lw.ffn_down), act), p + "ffn_out")), p + "ffn_residual");
    }
    graph::tensor out = named(g.mul(g.rms_norm(x, h.rms_eps), weight(w.output_norm)), "output_norm");
    m.logits = named(g.mul_mat(weight(w.output), out), "logits");
    m.next = named(g.argmax(m.logits), "next");
    g.mark_output(m.logits);
    g.mark_output(m.next);
    return m;
}

}  // namespace llmrt::model
