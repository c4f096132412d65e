// The forward pass of a model of any architecture of arch/registry.hpp as a graph, for a batch of
// up to max_batch tokens, composed of the shared blocks arch/architecture.hpp describes:
//
//   x = token_embd[tokens]
//   per layer:  h = rms_norm(x) ⊙ attn_norm                                       norm block
//               q = Wq h [+ bq], k = Wk h [+ bk], v = Wv h [+ bv]                  attention block
//               [q = rms_norm_per_head(q) ⊙ q_norm, k likewise]
//               q = rope(q), k = rope(k)      (the architecture's pair order, freq_scale, factors,
//                                              YaRN's terms; a sliding layer's own base)
//               K[pos] = k, V[pos] = v                          (the layer's KV cache)
//               x = x + Wo · attention(q, K, V) [+ bo]          (causal, grouped-query; [sinks,
//                                                                window on sliding layers])
//               h = rms_norm(x) ⊙ ffn_norm                                         norm block
//               x = x + Wdown · (silu(Wgate h) ⊙ Wup h)                           SwiGLU block
//                 or x + Σ_j w_j · (Wdown_e_j · act(...) [+ bd_e_j])               experts block
//                    (e_j, w_j: from the router's logits, arch/architecture.hpp)
//   logits = Woutput · (rms_norm(x) ⊙ output_norm),  next = argmax(logits)
//
// A tensor-parallel rank's graph (build_llama_graph of a llama_shard, tensor_parallel.hpp) is the
// same over its slices of the weights, with its own head counts and KV cache, plus three
// collectives: attn_out and ffn_out are each an all_reduce of the rank's partial product
// ("..._partial") before the residual add (attn_out's bias after it), and the logits an all_gather
// of the rank's rows of the vocabulary ("logits_partial"). In an experts block the rank's slots
// of other ranks' experts are parked on one of its own and weighed by 0 (shard_ids,
// shard_weights: "ffn_moe_topk_held", "ffn_moe_weights_held"), and ffn_out sums the ranks' shares.
//
// Without the bracketed options (a plain llama) the graph is node for node the one the lowering
// fuses into norm, matvec, rope_cache, attention and swiglu steps. Nodes carry llama.cpp-like
// names ("blk.0.q", "blk.0.ffn_out", "logits") so that llmrt-compare can say where two backends
// part ways.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "llmrt/graph/graph.hpp"
#include "llmrt/model/tensor_parallel.hpp"
#include "llmrt/model/weights.hpp"

namespace llmrt::model {

struct llama_graph {
    graph::graph g;
    graph::tensor tokens, positions;  // inputs: one i32 per token
    graph::tensor logits, next;       // outputs: n_vocab floats and the argmax per token
    graph::tensor top;                // optional output (with_top_probability): softmax's value at the argmax
    // Optional outputs (with_top_candidates): each token's k largest logits, their ids best first
    // (graph::op::top_k's order: logit descending, id ascending) and the logits themselves.
    graph::tensor top_ids, top_logits;
    std::vector<graph::tensor> k_cache, v_cache;  // states: n_embd_kv x n_ctx per layer
};

namespace detail {

// The blocks over one graph under construction, sharing its weight table and naming.
class block_builder {
public:
    // ranks > 0: a tensor-parallel rank's blocks (see above); 0: no collectives.
    block_builder(graph::graph& g, const llama_hparams& h, int32_t ranks = 0) : g_(g), h_(h), ranks_(ranks) {}

    graph::tensor weight(const weight_ref& r) {
        const graph::tensor t = g_.find(r.name);
        return t.valid() ? t : g_.weight(r.name, r.type, r.ne0, r.ne1, r.data);
    }
    graph::tensor named(graph::tensor t, std::string name) {
        g_.set_name(t, std::move(name));
        return t;
    }

    // rms_norm(x) ⊙ w (per groups of `group` elements when group > 0).
    graph::tensor norm(graph::tensor x, const weight_ref& w, const std::string& name, int64_t group = 0) {
        return named(g_.mul(g_.rms_norm(x, h_.rms_eps, group), weight(w)), name);
    }

    // W h [+ b], named `name` (the product) and `name`_bias (the sum).
    graph::tensor projection(const weight_ref& w, const weight_ref& b, graph::tensor h, const std::string& name) {
        graph::tensor y = named(g_.mul_mat(weight(w), h), name);
        return b.data ? named(g_.add(y, weight(b)), name + "_bias") : y;
    }

    // W h summed over the ranks [+ b] for W split along k: named `name` (the sum), `name`_partial
    // (the rank's product) and `name`_bias; without ranks, projection().
    graph::tensor reduced_projection(const weight_ref& w, const weight_ref& b, graph::tensor h, const std::string& name) {
        if (ranks_ == 0) return projection(w, b, h, name);
        graph::tensor y = named(g_.mul_mat(weight(w), h), name + "_partial");
        y = named(g_.all_reduce(y, ranks_), name);
        return b.data ? named(g_.add(y, weight(b)), name + "_bias") : y;
    }

    // The attention block of layer `l` on the normed h; appends the layer's caches to m.
    graph::tensor attention(const llama_layer_weights& lw, graph::tensor h, int32_t layer, const std::string& p,
                            llama_graph& m, int32_t n_ctx, qtype kv_type, graph::tensor rope_factors) {
        const attention_block& opt = h_.arch->attention;
        const int32_t hd = h_.head_dim();
        graph::tensor q = projection(lw.attn_q, lw.attn_q_bias, h, p + "q");
        graph::tensor k = projection(lw.attn_k, lw.attn_k_bias, h, p + "k");
        graph::tensor v = projection(lw.attn_v, lw.attn_v_bias, h, p + "v");
        if (lw.attn_q_norm.data) q = norm(q, lw.attn_q_norm, p + "q_norm", hd);
        if (lw.attn_k_norm.data) k = norm(k, lw.attn_k_norm, p + "k_norm", hd);
        const bool sliding = h_.sliding(layer);
        graph::rope_params q_rope{h_.n_head, hd, h_.n_rot, sliding ? h_.rope_freq_base_swa : h_.rope_freq_base,
                                  opt.rope_order, sliding ? h_.rope_freq_scale_swa : h_.rope_freq_scale};
        if (h_.rope_ext_factor != 0.0f || h_.rope_attn_factor != 1.0f) {
            const graph::yarn_dims d = graph::yarn_corr_dims(h_.n_rot, h_.n_ctx_orig_yarn, q_rope.freq_base);
            q_rope.ext_factor = h_.rope_ext_factor;
            q_rope.attn_factor = h_.rope_attn_factor;
            q_rope.corr_low = d.low;
            q_rope.corr_high = d.high;
        }
        graph::rope_params k_rope = q_rope;
        k_rope.n_head = h_.n_head_kv;
        q = named(g_.rope(q, m.positions, q_rope, rope_factors), p + "q_rope");
        k = named(g_.rope(k, m.positions, k_rope, rope_factors), p + "k_rope");
        m.k_cache.push_back(g_.state(p + "k_cache", kv_type, h_.n_embd_kv(), n_ctx));
        m.v_cache.push_back(g_.state(p + "v_cache", kv_type, h_.n_embd_kv(), n_ctx));
        graph::tensor kc = g_.set_rows(m.k_cache.back(), k, m.positions);
        graph::tensor vc = g_.set_rows(m.v_cache.back(), v, m.positions);
        graph::attention_params attn{h_.n_head, h_.n_head_kv, hd, 1.0f / std::sqrt(float(hd))};
        if (sliding) attn.window = h_.n_swa;
        const graph::tensor sinks = lw.attn_sinks.data ? weight(lw.attn_sinks) : graph::tensor{};
        graph::tensor a = named(g_.attention(q, kc, vc, m.positions, attn, sinks), p + "attn");
        return reduced_projection(lw.attn_output, lw.attn_output_bias, a, p + "attn_out");
    }

    // Wdown · (silu(Wgate h) ⊙ Wup h).
    graph::tensor swiglu_ffn(const llama_layer_weights& lw, graph::tensor h, const std::string& p) {
        graph::tensor gate = named(g_.mul_mat(weight(lw.ffn_gate), h), p + "ffn_gate");
        graph::tensor up = named(g_.mul_mat(weight(lw.ffn_up), h), p + "ffn_up");
        graph::tensor act = named(g_.swiglu(gate, up), p + "ffn_swiglu");
        return reduced_projection(lw.ffn_down, weight_ref{}, act, p + "ffn_out");
    }

    // The experts block: router, top k, their weights, the chosen experts' activations, the
    // weighted sum (node names as llama.cpp's build_moe_ffn calls its tensors).
    graph::tensor experts_ffn(const llama_layer_weights& lw, graph::tensor h, const std::string& p) {
        const ffn_block& opt = h_.arch->ffn;
        const int64_t n = h_.n_expert;
        graph::tensor logits = projection(lw.ffn_gate_inp, lw.ffn_gate_inp_bias, h, p + "ffn_moe_logits");
        // SOFTMAX_WEIGHT gating picks and weighs by the logits themselves.
        const bool softmax_weight = opt.expert_norm == graph::expert_norm::softmax;
        graph::tensor probs = softmax_weight ? logits : named(g_.softmax(logits), p + "ffn_moe_probs");
        graph::tensor ids = named(g_.top_k(probs, h_.n_expert_used), p + "ffn_moe_topk");
        graph::tensor w = named(g_.expert_weights(probs, ids, opt.expert_norm), p + "ffn_moe_weights");
        // Expert parallel: the rank's own experts' slots (tensor_parallel.hpp); the others weigh 0.
        const int64_t held = h_.experts_held > 0 ? h_.experts_held : n;
        if (held < n) {
            graph::tensor all = ids;
            ids = named(g_.shard_ids(all, h_.expert_first, held), p + "ffn_moe_topk_held");
            w = named(g_.shard_weights(w, all, h_.expert_first, held), p + "ffn_moe_weights_held");
        }
        // W_e x [+ b_e] for each slot's expert e.
        auto experts = [&](const weight_ref& wr, const weight_ref& b, graph::tensor x, const std::string& name) {
            graph::tensor y = named(g_.mul_mat_id(weight(wr), x, ids, held), name);
            return b.data ? named(g_.add_id(y, weight(b), ids), name + "_biased") : y;
        };
        graph::tensor gate = experts(lw.ffn_gate_exps, lw.ffn_gate_exps_bias, h, p + "ffn_moe_gate");
        graph::tensor up = experts(lw.ffn_up_exps, lw.ffn_up_exps_bias, h, p + "ffn_moe_up");
        graph::tensor act = opt.activation == expert_activation::swiglu_oai
                                ? named(g_.swiglu_oai(gate, up, swiglu_oai_alpha, swiglu_oai_limit), p + "ffn_moe_swiglu_oai")
                                : named(g_.swiglu(gate, up), p + "ffn_moe_swiglu");
        graph::tensor down = experts(lw.ffn_down_exps, lw.ffn_down_exps_bias, act, p + "ffn_moe_down");
        if (ranks_ == 0) return named(g_.weighted_sum(down, w), p + "ffn_out");
        graph::tensor part = named(g_.weighted_sum(down, w), p + "ffn_out_partial");
        return named(g_.all_reduce(part, ranks_), p + "ffn_out");
    }

    // The logits of the rank's rows of the vocabulary, put together over the ranks.
    graph::tensor logits(const weight_ref& output, graph::tensor h) {
        if (ranks_ == 0) return named(g_.mul_mat(weight(output), h), "logits");
        graph::tensor part = named(g_.mul_mat(weight(output), h), "logits_partial");
        return named(g_.all_gather(part, h_.n_vocab, ranks_), "logits");
    }

private:
    graph::graph& g_;
    const llama_hparams& h_;
    int32_t ranks_ = 0;
};

// ranks: see block_builder.
inline llama_graph build_llama_graph(const llama_weights& w, int32_t n_ctx, int32_t max_batch, qtype kv_type,
                                     int32_t ranks) {
    const llama_hparams& h = w.hparams;
    check(n_ctx >= 1, errc::invalid_argument,
          [&] { return "llama graph: n_ctx = " + std::to_string(n_ctx) + " must be at least 1"; });
    llama_graph m{graph::graph(max_batch), {}, {}, {}, {}, {}, {}, {}, {}, {}};
    graph::graph& g = m.g;
    detail::block_builder b(g, h, ranks);

    m.tokens = g.input("tokens", graph::i32_type, 1);
    m.positions = g.input("positions", graph::i32_type, 1);
    graph::tensor x = b.named(g.get_rows(b.weight(w.token_embd), m.tokens), "embd");
    const graph::tensor rope_factors = w.rope_freqs.data ? b.weight(w.rope_freqs) : graph::tensor{};
    for (int32_t l = 0; l < h.n_layer; ++l) {
        const llama_layer_weights& lw = w.layers[std::size_t(l)];
        const std::string p = "blk." + std::to_string(l) + ".";
        graph::tensor hn = b.norm(x, lw.attn_norm, p + "attn_norm");
        x = b.named(g.add(x, b.attention(lw, hn, l, p, m, n_ctx, kv_type, rope_factors)), p + "attn_residual");
        hn = b.norm(x, lw.ffn_norm, p + "ffn_norm");
        x = b.named(g.add(x, h.experts() ? b.experts_ffn(lw, hn, p) : b.swiglu_ffn(lw, hn, p)), p + "ffn_residual");
    }
    graph::tensor out = b.norm(x, w.output_norm, "output_norm");
    m.logits = b.logits(w.output, out);
    m.next = b.named(g.argmax(m.logits), "next");
    g.mark_output(m.logits);
    g.mark_output(m.next);
    return m;
}

}  // namespace detail

// `w` must outlive the graph (the graph points at its bytes). kv_type: f32 or f16.
inline llama_graph build_llama_graph(const llama_weights& w, int32_t n_ctx, int32_t max_batch,
                                     qtype kv_type = qtype::f32) {
    return detail::build_llama_graph(w, n_ctx, max_batch, kv_type, 0);
}

// A tensor-parallel rank's graph, whose collectives span s.tp.ranks ranks; the shard (and the full
// weights it points into) must outlive the graph.
inline llama_graph build_llama_graph(const llama_shard& s, int32_t n_ctx, int32_t max_batch, qtype kv_type = qtype::f32) {
    return detail::build_llama_graph(s.weights, n_ctx, max_batch, kv_type, s.tp.ranks);
}

// Adds each token's top probability (softmax of its logits at the argmax) as an output, for a
// drafter's confidence threshold without reading the logits back.
inline llama_graph with_top_probability(llama_graph m) {
    m.top = m.g.top_probability(m.logits);
    m.g.set_name(m.top, "top_probability");
    m.g.mark_output(m.top);
    return m;
}

// Adds each token's k best candidates (min(k, n_vocab)) as outputs: what a sampler chain that
// starts with top-k reads, so that k ids and logits travel instead of n_vocab logits.
inline llama_graph with_top_candidates(llama_graph m, int64_t k) {
    const int64_t n_vocab = m.g.nodes()[std::size_t(m.logits.id)].ne0;
    m.top_ids = m.g.top_k(m.logits, std::min(k, n_vocab));
    m.g.set_name(m.top_ids, "top_ids");
    m.g.mark_output(m.top_ids);
    m.top_logits = m.g.expert_weights(m.logits, m.top_ids, graph::expert_norm::none);  // logits[top_ids[j]]
    m.g.set_name(m.top_logits, "top_logits");
    m.g.mark_output(m.top_logits);
    return m;
}

}  // namespace llmrt::model
