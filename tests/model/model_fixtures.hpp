// Small random llama models for the model tests, and a naive double-precision reference forward.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/model/model.hpp>

namespace llmrt::test {

// The prompt the model tests feed (ids below every test vocabulary).
inline const std::vector<int32_t> model_prompt{1, 17, 260, 300, 5, 42, 259, 318, 77, 2, 199};

// Positions from, from + 1, ..., n of them.
inline std::vector<int32_t> iota_positions(int32_t from, std::size_t n) {
    std::vector<int32_t> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = from + int32_t(i);
    return p;
}

// Logits of `tokens` fed one at a time from the model's current cache length.
template <class Model>
std::vector<float> one_by_one(Model& m, const std::vector<int32_t>& tokens) {
    std::vector<float> all;
    for (int32_t t : tokens) {
        const int32_t p = m.cache_length();
        const auto l = m.forward(std::span<const int32_t>(&t, 1), std::span<const int32_t>(&p, 1));
        all.insert(all.end(), l.begin(), l.end());
    }
    return all;
}

inline bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// q8_0 and f16 fit n_embd 64; k-quants need every k (n_embd, n_ff) a multiple of 256.
inline model::llama_shape small_shape(qtype t) {
    model::llama_shape s;
    const bool k_quant = block_size(t) == 256;
    s.n_vocab = 320;
    s.n_embd = k_quant ? 256 : 64;
    s.n_ff = k_quant ? 512 : 128;
    s.n_layer = 2;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ctx = 64;
    return s;
}

inline std::shared_ptr<const gguf::file> model_file(const model::llama_shape& s, qtype t, uint64_t seed = 1) {
    return std::make_shared<const gguf::file>(gguf::file::from_bytes(model::make_random_llama(s, t, seed).to_bytes()));
}

inline std::shared_ptr<const gguf::file> small_model_file(qtype t, uint64_t seed = 1) {
    return model_file(small_shape(t), t, seed);
}

// The whole sequence `tokens` (positions 0..n−1) through the formulas of the model's architecture
// in double, from the dequantized weights, with float activations; returns n rows of n_vocab
// logits (a mixture-of-experts feed-forward where the architecture has one). Written from the
// architectures' descriptions, not from the graph builder: q/k/v and output biases, per-head q/k
// norms, the rope pair order, linear scaling, YaRN and frequency factors, attention sinks and
// sliding windows, gpt-oss's gating, expert biases and clamped SwiGLU where the model has them.
inline std::vector<double> reference_logits(const model::llama_weights& w, const std::vector<int32_t>& tokens) {
    const auto& h = w.hparams;
    const int n = int(tokens.size()), d = h.n_embd, hd = h.head_dim(), kv = h.n_embd_kv(), nq = h.n_embd_q();
    const bool neox = h.arch->attention.rope_order == graph::rope_order::neox;
    auto deq = [](const model::weight_ref& r) {
        std::vector<float> f(static_cast<std::size_t>(r.ne0 * r.ne1));
        dequantize(r.type, r.data, f.data(), r.ne0 * r.ne1);
        return std::vector<double>(f.begin(), f.end());
    };
    auto matmul = [](const std::vector<double>& W, int64_t k, int64_t rows, const std::vector<double>& x) {
        std::vector<double> y(static_cast<std::size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
            double s = 0;
            for (int64_t i = 0; i < k; ++i) s += W[std::size_t(r * k + i)] * x[std::size_t(i)];
            y[std::size_t(r)] = s;
        }
        return y;
    };
    auto rmsnorm = [&](const std::vector<double>& x, const std::vector<double>& g) {
        double ss = 0;
        for (double v : x) ss += v * v;
        const double scale = 1.0 / std::sqrt(ss / double(x.size()) + h.rms_eps);
        std::vector<double> y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * g[i];
        return y;
    };
    std::vector<double> factors(std::size_t(h.n_rot / 2), 1.0);
    if (w.rope_freqs.data) factors = deq(w.rope_freqs);
    // Pairs (2i, 2i+1), or (i, i + n_rot/2) for NeoX; a sliding layer's own base and scale; YaRN's
    // ramp between the interpolated and extrapolated angle, and its magnitude.
    auto rope = [&](std::vector<double>& x, int heads, int pos, int layer) {
        const bool sliding = h.sliding(layer);
        const double base = sliding ? h.rope_freq_base_swa : h.rope_freq_base;
        const double scale = sliding ? h.rope_freq_scale_swa : h.rope_freq_scale;
        auto corr = [&](double beta) { return h.n_rot * std::log(h.n_ctx_orig_yarn / (beta * 2 * 3.14159265358979323846)) / (2 * std::log(base)); };
        const double low = std::max(0.0, std::floor(corr(32))), high = std::min(h.n_rot - 1.0, std::ceil(corr(1)));
        for (int hh = 0; hh < heads; ++hh)
            for (int i = 0; i < h.n_rot / 2; ++i) {
                const double extrap = pos * std::pow(base, -2.0 * i / h.n_rot) / factors[std::size_t(i)];
                double theta = extrap * scale, m = h.rope_attn_factor;
                if (h.rope_ext_factor != 0.0f) {
                    const double ramp = (1 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0)) * h.rope_ext_factor;
                    theta = theta * (1 - ramp) + extrap * ramp;
                    m *= 1 + 0.1 * std::log(1 / scale);
                }
                double& a = x[std::size_t(hh * hd + (neox ? i : 2 * i))];
                double& b = x[std::size_t(hh * hd + (neox ? i + h.n_rot / 2 : 2 * i + 1))];
                const double a0 = a, b0 = b;
                a = (a0 * std::cos(theta) - b0 * std::sin(theta)) * m;
                b = (a0 * std::sin(theta) + b0 * std::cos(theta)) * m;
            }
    };
    const auto slice = [&](const std::vector<double>& m, int64_t size, int e) {
        return std::vector<double>(m.begin() + std::ptrdiff_t(e * size), m.begin() + std::ptrdiff_t((e + 1) * size));
    };
    // Expert e's bias column (rows values) added to y, when the model has those biases.
    const auto bias_of = [&](std::vector<double> y, const model::weight_ref& b, int e) {
        if (!b.data) return y;
        const auto column = slice(deq(b), int64_t(y.size()), e);
        for (std::size_t i = 0; i < y.size(); ++i) y[i] += column[i];
        return y;
    };
    const bool oai = h.arch->ffn.activation == model::expert_activation::swiglu_oai;
    // Wdown_e · act(Wgate_e h, Wup_e h) (+ biases) for the matrices of expert e (rows ff; e = 0 dense).
    auto swiglu = [&](const std::vector<double>& wg, const std::vector<double>& wu, const std::vector<double>& wd, int e,
                      int ff, const std::vector<double>& hn, const model::llama_layer_weights* lw = nullptr) {
        const int64_t size = int64_t(d) * ff;
        auto gate = matmul(slice(wg, size, e), d, ff, hn), up = matmul(slice(wu, size, e), d, ff, hn);
        if (lw) gate = bias_of(gate, lw->ffn_gate_exps_bias, e), up = bias_of(up, lw->ffn_up_exps_bias, e);
        std::vector<double> act(static_cast<std::size_t>(ff));
        for (std::size_t i = 0; i < act.size(); ++i) {
            if (!oai) {
                act[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
                continue;
            }
            const double g = std::min(gate[i], 7.0), u = std::clamp(up[i], -7.0, 7.0);
            act[i] = g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
        }
        const auto down = matmul(slice(wd, size, e), ff, d, act);
        return lw ? bias_of(down, lw->ffn_down_exps_bias, e) : down;
    };
    // probs = softmax(router · h [+ b]); the k most probable experts (ties: lower index); their
    // probabilities over their sum weigh their outputs. gpt-oss: the k largest logits, weighed by
    // the softmax of those k.
    auto experts = [&](const model::llama_layer_weights& lw, const std::vector<double>& hn) {
        auto logits = matmul(deq(lw.ffn_gate_inp), d, h.n_expert, hn);
        if (lw.ffn_gate_inp_bias.data) logits = bias_of(logits, lw.ffn_gate_inp_bias, 0);
        const bool softmax_weight = h.arch->ffn.expert_norm == graph::expert_norm::softmax;
        const double max = *std::max_element(logits.begin(), logits.end());
        std::vector<double> probs(logits.size());
        double sum = 0;
        for (std::size_t e = 0; e < probs.size(); ++e) sum += (probs[e] = std::exp(logits[e] - max));
        for (double& p : probs) p /= sum;
        std::vector<int> order(probs.size());
        for (std::size_t e = 0; e < order.size(); ++e) order[e] = int(e);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[std::size_t(a)] > probs[std::size_t(b)]; });
        double chosen = 0, chosen_exp = 0;
        for (int j = 0; j < h.n_expert_used; ++j) chosen += probs[std::size_t(order[std::size_t(j)])];
        for (int j = 0; j < h.n_expert_used; ++j) chosen_exp += std::exp(logits[std::size_t(order[std::size_t(j)])] - max);
        const auto wg = deq(lw.ffn_gate_exps), wu = deq(lw.ffn_up_exps), wd = deq(lw.ffn_down_exps);
        std::vector<double> out(std::size_t(d), 0.0);
        for (int j = 0; j < h.n_expert_used; ++j) {
            const int e = order[std::size_t(j)];
            const double weight = softmax_weight ? std::exp(logits[std::size_t(e)] - max) / chosen_exp : probs[std::size_t(e)] / chosen;
            const auto y = swiglu(wg, wu, wd, e, h.n_ff_exp, hn, &lw);
            for (int i = 0; i < d; ++i) out[std::size_t(i)] += weight * y[std::size_t(i)];
        }
        return out;
    };
    const auto embd = deq(w.token_embd), out_w = deq(w.output), out_norm = deq(w.output_norm);
    std::vector<std::vector<double>> x(static_cast<std::size_t>(n));
    for (int t = 0; t < n; ++t)
        x[std::size_t(t)].assign(embd.begin() + std::ptrdiff_t(tokens[std::size_t(t)]) * d,
                                 embd.begin() + std::ptrdiff_t(tokens[std::size_t(t)] + 1) * d);
    for (int layer = 0; layer < h.n_layer; ++layer) {
        const auto& lw = w.layers[std::size_t(layer)];
        const auto an = deq(lw.attn_norm), wq = deq(lw.attn_q), wk = deq(lw.attn_k), wv = deq(lw.attn_v),
                   wo = deq(lw.attn_output), fn = deq(lw.ffn_norm);
        const auto wg = h.experts() ? std::vector<double>{} : deq(lw.ffn_gate),
                   wu = h.experts() ? std::vector<double>{} : deq(lw.ffn_up),
                   wd = h.experts() ? std::vector<double>{} : deq(lw.ffn_down);
        auto plus = [&](std::vector<double> y, const model::weight_ref& b) {
            if (b.data) {
                const auto bias = deq(b);
                for (std::size_t i = 0; i < y.size(); ++i) y[i] += bias[i];
            }
            return y;
        };
        auto head_norms = [&](std::vector<double>& y, const model::weight_ref& g) {  // each head on its own
            if (!g.data) return;
            const auto gain = deq(g);
            for (std::size_t at = 0; at < y.size(); at += std::size_t(hd)) {
                double ss = 0;
                for (int i = 0; i < hd; ++i) ss += y[at + std::size_t(i)] * y[at + std::size_t(i)];
                const double scale = 1.0 / std::sqrt(ss / double(hd) + h.rms_eps);
                for (int i = 0; i < hd; ++i) y[at + std::size_t(i)] *= scale * gain[std::size_t(i)];
            }
        };
        std::vector<std::vector<double>> q(static_cast<std::size_t>(n)), k(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n));
        for (int t = 0; t < n; ++t) {
            const auto hn = rmsnorm(x[std::size_t(t)], an);
            q[std::size_t(t)] = plus(matmul(wq, d, nq, hn), lw.attn_q_bias);
            k[std::size_t(t)] = plus(matmul(wk, d, kv, hn), lw.attn_k_bias);
            v[std::size_t(t)] = plus(matmul(wv, d, kv, hn), lw.attn_v_bias);
            head_norms(q[std::size_t(t)], lw.attn_q_norm);
            head_norms(k[std::size_t(t)], lw.attn_k_norm);
            rope(q[std::size_t(t)], h.n_head, t, layer);
            rope(k[std::size_t(t)], h.n_head_kv, t, layer);
        }
        const auto sinks = lw.attn_sinks.data ? deq(lw.attn_sinks) : std::vector<double>{};
        for (int t = 0; t < n; ++t) {
            std::vector<double> attn(std::size_t(nq), 0.0);
            // Keys first..t: all of them, or the last n_swa on a sliding layer.
            const int first = h.sliding(layer) ? std::max(0, t - h.n_swa + 1) : 0;
            for (int hh = 0; hh < h.n_head; ++hh) {
                const int g = hh / (h.n_head / h.n_head_kv);
                std::vector<double> s(static_cast<std::size_t>(t + 1 - first));
                double max = sinks.empty() ? -INFINITY : sinks[std::size_t(hh)], sum = 0;
                for (int j = first; j <= t; ++j) {
                    double dot = 0;
                    for (int i = 0; i < hd; ++i) dot += q[std::size_t(t)][std::size_t(hh * hd + i)] * k[std::size_t(j)][std::size_t(g * hd + i)];
                    s[std::size_t(j - first)] = dot / std::sqrt(double(hd));
                    max = std::max(max, s[std::size_t(j - first)]);
                }
                for (auto& e : s) sum += (e = std::exp(e - max));
                if (!sinks.empty()) sum += std::exp(sinks[std::size_t(hh)] - max);
                for (int j = first; j <= t; ++j)
                    for (int i = 0; i < hd; ++i)
                        attn[std::size_t(hh * hd + i)] += s[std::size_t(j - first)] / sum * v[std::size_t(j)][std::size_t(g * hd + i)];
            }
            const auto o = plus(matmul(wo, nq, d, attn), lw.attn_output_bias);
            for (int i = 0; i < d; ++i) x[std::size_t(t)][std::size_t(i)] += o[std::size_t(i)];
            const auto hn = rmsnorm(x[std::size_t(t)], fn);
            if (h.experts()) {  // mixture of experts
                const auto moe = experts(lw, hn);
                for (int i = 0; i < d; ++i) x[std::size_t(t)][std::size_t(i)] += moe[std::size_t(i)];
                continue;
            }
            const auto down = swiglu(wg, wu, wd, 0, h.n_ff, hn);
            for (int i = 0; i < d; ++i) x[std::size_t(t)][std::size_t(i)] += down[std::size_t(i)];
        }
    }
    std::vector<double> logits;
    for (int t = 0; t < n; ++t) {
        const auto l = matmul(out_w, d, h.n_vocab, rmsnorm(x[std::size_t(t)], out_norm));
        logits.insert(logits.end(), l.begin(), l.end());
    }
    return logits;
}

inline double nmse(const float* out, const double* ref, std::size_t n) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n; ++i) {
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return num / den;
}

// Shapes that split over 4 ranks with q8_0: 8 query and 4 kv heads of 16 (attn_output's k slices
// of 32), n_ff 256 (ffn_down's k slices of 64); vocabulary 322, slices of 81 and 80 rows.
inline model::llama_shape tp_shape(const std::string& architecture) {
    model::llama_shape s = small_shape(qtype::q8_0);
    s.architecture = architecture;
    s.vocabulary = false;
    s.n_vocab = 322;
    s.n_embd = 128;
    s.n_head = 8;
    s.n_head_kv = 4;
    s.n_ff = 256;
    s.n_ctx = 32;
    return s;
}

// The prompt in chunks of max_batch, then three tokens one at a time: every logit of the way
// (the tensor-parallel tests hold these against one rank's or one GPU's).
template <class Model>
std::vector<float> prompt_then_tokens(Model& m) {
    std::vector<float> all(model_prompt.size() * std::size_t(m.vocab_size()));
    m.eval(model_prompt, 0, all);
    const auto more = one_by_one(m, {3, 99, 250});
    all.insert(all.end(), more.begin(), more.end());
    return all;
}

// Llama 3 70B's attention on shape s: 64 query heads of 128 in groups of 8 over 8 kv heads (the
// 8B's groups are 4), whatever s's n_embd (qwen3 and qwen3moe read head_dim from the file).
inline model::llama_shape with_70b_attention(model::llama_shape s) {
    s.n_head = 64;
    s.n_head_kv = 8;
    s.head_dim = 128;
    return s;
}

// The tensor-parallel tests' models: llama, qwen2 with biases and a tied output, qwen3 with
// per-head q/k norms (head_dim 32).
struct tp_case {
    std::string label;
    model::llama_shape shape;
};

inline std::vector<tp_case> tp_cases() {
    std::vector<tp_case> v;
    v.push_back({"llama", tp_shape("llama")});
    model::llama_shape qwen2 = tp_shape("qwen2");  // q/k/v biases, tied output
    qwen2.tied_output = true;
    v.push_back({"qwen2, biases, tied output", qwen2});
    model::llama_shape qwen3 = tp_shape("qwen3");  // per-head q/k norms, head_dim 32
    qwen3.head_dim = 32;
    v.push_back({"qwen3, head_dim 32", qwen3});
    // Expert parallel: 8 experts (k = 2) split 4 and 2 a rank; gpt-oss adds expert biases, sinks
    // split with the heads, softmax-weighted experts and sliding layers.
    v.push_back({"qwen3moe, experts split", tp_shape("qwen3moe")});
    v.push_back({"gpt-oss, experts and sinks split", tp_shape("gpt-oss")});
    // Llama 3 70B's attention (64 heads of 128 in groups of 8): a rank holds 4 kv heads at 2
    // ranks, 2 at 4.
    v.push_back({"qwen3, 64 heads of 128 over 8 kv heads", with_70b_attention(tp_shape("qwen3"))});
    return v;
}

}  // namespace llmrt::test
