// A model's weights, found in a GGUF file by name and checked against the hyperparameters.
// The architecture (arch/*.hpp) says which of the optional tensors its files hold.
//
//   token_embd.weight           [n_embd, n_vocab]        any type (get_rows dequantizes a row)
//   output.weight               [n_embd, n_vocab]        any type; absent: tied to token_embd (where
//                                                        the architecture allows it)
//   output_norm.weight          [n_embd]
//   rope_freqs.weight           [n_rot/2]                frequency factors (llama: optional)
//   blk.N.attn_norm.weight      [n_embd]                 norms and biases: f32, f16 or bf16 (kept as f32)
//   blk.N.attn_q.weight         [n_embd, n_head · head_dim]
//   blk.N.attn_k/attn_v.weight  [n_embd, n_embd_kv]      n_embd_kv = n_head_kv · head_dim
//   blk.N.attn_q/k/v.bias       [n_head · head_dim], [n_embd_kv]   (qwen2; llama: optional)
//   blk.N.attn_q/k_norm.weight  [head_dim]               (qwen3)
//   blk.N.attn_output.weight    [n_head · head_dim, n_embd]
//   blk.N.attn_output.bias      [n_embd]                 (gpt-oss)
//   blk.N.attn_sinks.weight     [n_head]                 (gpt-oss)
//   blk.N.ffn_norm.weight       [n_embd]                 (gpt-oss: blk.N.post_attention_norm.weight)
//   blk.N.ffn_gate/ffn_up.weight [n_embd, n_ff]
//   blk.N.ffn_down.weight       [n_ff, n_embd]
//   blk.N.ffn_gate_inp.weight   [n_embd, n_expert]       mixture of experts (qwen3moe), instead
//   blk.N.ffn_gate/up_exps.weight [n_embd, n_ff_exp, n_expert]   of ffn_gate/up/down: one 3-D
//   blk.N.ffn_down_exps.weight  [n_ff_exp, n_embd, n_expert]     tensor per projection, held as
//                                                       n_expert matrices one after another
//   blk.N.ffn_gate_inp.bias     [n_expert]               (gpt-oss) the router's bias
//   blk.N.ffn_gate/up_exps.bias [n_ff_exp, n_expert]     (gpt-oss) one bias column per expert,
//   blk.N.ffn_down_exps.bias    [n_embd, n_expert]       as add_id takes them
//
// Matrices keep GGUF's layout (ne[0] = k contiguous, one row per output), the mat-vec layout, and
// stay where the file holds them; nothing is copied except norms and biases stored in 16 bits. A
// weight of a type llmrt cannot decode (iq2_xxs, say) raises errc::unsupported_type naming it and
// its type. A tensor the model would need to honour and cannot (any blk.N.* tensor the
// architecture does not use, such as attn_output.bias or an expert's weights; rope_freqs.weight
// where the architecture has none; output.bias) raises an error naming it; other tensors the model
// does not use may be of any type.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/gguf/reader.hpp"
#include "llmrt/model/hparams.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::model {

// One weight as the graph takes it: ne1 columns of ne0 elements of `type` at `data`.
struct weight_ref {
    std::string name;
    qtype type = qtype::f32;
    int64_t ne0 = 0;
    int64_t ne1 = 1;
    const void* data = nullptr;
};

// Optional weights (biases, q/k norms, rope_freqs) that a file lacks have data == nullptr.
struct llama_layer_weights {
    weight_ref attn_norm, attn_q, attn_k, attn_v, attn_output;
    weight_ref attn_q_bias, attn_k_bias, attn_v_bias;  // f32
    weight_ref attn_q_norm, attn_k_norm;               // f32, head_dim each
    weight_ref attn_output_bias, attn_sinks;           // f32, n_embd and n_head
    weight_ref ffn_norm, ffn_gate, ffn_up, ffn_down;
    // Mixture of experts (ffn_gate/up/down then absent): the router, and the experts' matrices
    // as weight_refs of ne1 = rows · n_expert (expert e's rows from e · rows on).
    weight_ref ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps;
    // Their biases (f32): the router's n_expert, the experts' one column of rows per expert.
    weight_ref ffn_gate_inp_bias, ffn_gate_exps_bias, ffn_up_exps_bias, ffn_down_exps_bias;
};

struct llama_weights {
    llama_hparams hparams;
    weight_ref token_embd, output_norm, output;
    weight_ref rope_freqs;     // f32, n_rot/2 (data == nullptr: none)
    bool tied_output = false;  // output is token_embd
    std::vector<llama_layer_weights> layers;
    // Norms converted to f32 (their weight_ref::data points here); moving a vector keeps its
    // buffer, so those pointers stay valid when llama_weights moves.
    std::vector<std::vector<float>> converted;
};

namespace detail {

inline std::string shape_text(const gguf::tensor_info& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < std::max<uint32_t>(t.n_dims, 1); ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

// "<arch> model: ", the start of every message.
inline std::string model_text(const llama_hparams& h) { return std::string(h.arch->name) + " model: "; }

inline const gguf::tensor_info& require_tensor(const gguf::file& f, const std::string& name, const std::string& model) {
    const gguf::tensor_info* t = f.find_tensor(name);
    check(t != nullptr, errc::invalid_argument,
          [&] { return model + "tensor '" + name + "' is missing from " + f.source(); });
    return *t;
}

// A matrix [ne0, ne1] (a vector when ne1 = 1 and the file holds one dimension).
inline weight_ref matrix(const gguf::file& f, const std::string& name, int64_t ne0, int64_t ne1,
                         const std::string& model = "llama model: ") {
    const gguf::tensor_info& t = require_tensor(f, name, model);
    check(t.decodable(), errc::unsupported_type,
          [&] { return model + "tensor '" + name + "' in " + f.source() + " has " + t.undecodable_type(); });
    check(t.ne[0] == ne0 && t.ne[1] == ne1 && t.ne[2] == 1 && t.ne[3] == 1, errc::shape_mismatch, [&] {
        return model + "tensor '" + name + "' in " + f.source() + " has shape " + shape_text(t) + ", expected [" +
               std::to_string(ne0) + (ne1 == 1 ? "" : ", " + std::to_string(ne1)) + "]";
    });
    return weight_ref{name, t.type(), ne0, ne1, t.data};
}

// n_expert matrices [ne0, ne1] in one 3-D tensor [ne0, ne1, n_expert], as one weight_ref of
// ne1 · n_expert rows (GGUF stores the experts one after another).
inline weight_ref experts(const gguf::file& f, const std::string& name, int64_t ne0, int64_t ne1, int64_t n_expert,
                          const std::string& model) {
    const gguf::tensor_info& t = require_tensor(f, name, model);
    check(t.decodable(), errc::unsupported_type,
          [&] { return model + "tensor '" + name + "' in " + f.source() + " has " + t.undecodable_type(); });
    check(t.ne[0] == ne0 && t.ne[1] == ne1 && t.ne[2] == n_expert && t.ne[3] == 1, errc::shape_mismatch, [&] {
        return model + "tensor '" + name + "' in " + f.source() + " has shape " + shape_text(t) + ", expected [" +
               std::to_string(ne0) + ", " + std::to_string(ne1) + ", " + std::to_string(n_expert) + "] (n_expert matrices)";
    });
    return weight_ref{name, t.type(), ne0, ne1 * n_expert, t.data};
}

// A vector of n floats (a norm, a bias, frequency factors), or ne1 such columns (experts' biases),
// as f32, converted from f16 or bf16 when stored so.
inline weight_ref norm(const gguf::file& f, const std::string& name, int64_t n, llama_weights& w, int64_t ne1 = 1) {
    const std::string model = model_text(w.hparams);
    weight_ref r = matrix(f, name, n, ne1, model);
    if (r.type == qtype::f32) return r;
    check(r.type == qtype::f16 || r.type == qtype::bf16, errc::unsupported_type, [&] {
        return model + "vector '" + name + "' is " + llmrt::name(r.type) + "; norms and biases must be f32, f16 or bf16";
    });
    std::vector<float> values(static_cast<std::size_t>(n * ne1));
    dequantize(r.type, r.data, values.data(), n * ne1);
    r.type = qtype::f32;
    r.data = values.data();
    w.converted.push_back(std::move(values));
    return r;
}

// An optional vector the architecture reads with presence p: loaded when required or present,
// refused (naming it) when present and the architecture has none.
inline weight_ref optional_vector(const gguf::file& f, const std::string& name, int64_t n, presence p, llama_weights& w,
                                  int64_t ne1 = 1) {
    const bool present = f.find_tensor(name) != nullptr;
    check(!present || p != presence::absent, errc::unsupported_type, [&] {
        return model_text(w.hparams) + "tensor '" + name + "' in " + f.source() + " is not part of the " +
               std::string(w.hparams.arch->name) + " architecture as llmrt computes it; running without it would be wrong";
    });
    if (!present && p != presence::required) return weight_ref{name, qtype::f32, n, ne1, nullptr};
    return norm(f, name, n, w, ne1);
}

}  // namespace detail

// Finds and checks every tensor; llmrt::error naming the missing, misshapen or unsupported tensor,
// or the metadata key that is missing or wrong.
inline llama_weights load_llama_weights(const gguf::file& f) {
    llama_weights w;
    // A copy: g++ 13 takes a reference returned from a call with a temporary string argument for a
    // possibly dangling one (-Wdangling-reference), and the project builds with -Werror.
    const gguf::tensor_info embd = detail::require_tensor(f, "token_embd.weight", "model: ");
    check(embd.ne[1] <= INT32_MAX, errc::shape_mismatch, [&] {
        return "model: token_embd.weight has " + std::to_string(embd.ne[1]) + " rows, more than int32 ids reach";
    });
    w.hparams = llama_hparams_from(f.metadata(), int32_t(embd.ne[1]));
    const llama_hparams& h = w.hparams;
    const attention_block& attn = h.arch->attention;
    const std::string model = detail::model_text(h);
    w.token_embd = detail::matrix(f, "token_embd.weight", h.n_embd, h.n_vocab, model);
    w.output_norm = detail::norm(f, "output_norm.weight", h.n_embd, w);
    w.tied_output = f.find_tensor("output.weight") == nullptr && h.arch->output != presence::required;
    w.output = w.tied_output ? w.token_embd : detail::matrix(f, "output.weight", h.n_embd, h.n_vocab, model);
    w.rope_freqs = detail::optional_vector(f, "rope_freqs.weight", h.n_rot / 2, attn.rope_freqs, w);
    std::vector<std::string> used{"token_embd.weight", "output_norm.weight", "output.weight"};
    const ffn_block& ffn = h.arch->ffn;
    for (int32_t l = 0; l < h.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        llama_layer_weights lw;
        lw.attn_norm = detail::norm(f, p + "attn_norm.weight", h.n_embd, w);
        lw.attn_q = detail::matrix(f, p + "attn_q.weight", h.n_embd, h.n_embd_q(), model);
        lw.attn_k = detail::matrix(f, p + "attn_k.weight", h.n_embd, h.n_embd_kv(), model);
        lw.attn_v = detail::matrix(f, p + "attn_v.weight", h.n_embd, h.n_embd_kv(), model);
        lw.attn_output = detail::matrix(f, p + "attn_output.weight", h.n_embd_q(), h.n_embd, model);
        lw.attn_q_bias = detail::optional_vector(f, p + "attn_q.bias", h.n_embd_q(), attn.qkv_bias, w);
        lw.attn_k_bias = detail::optional_vector(f, p + "attn_k.bias", h.n_embd_kv(), attn.qkv_bias, w);
        lw.attn_v_bias = detail::optional_vector(f, p + "attn_v.bias", h.n_embd_kv(), attn.qkv_bias, w);
        lw.attn_q_norm = detail::optional_vector(f, p + "attn_q_norm.weight", h.head_dim(), attn.qk_norm, w);
        lw.attn_k_norm = detail::optional_vector(f, p + "attn_k_norm.weight", h.head_dim(), attn.qk_norm, w);
        lw.attn_output_bias = detail::optional_vector(f, p + "attn_output.bias", h.n_embd, attn.output_bias, w);
        lw.attn_sinks = detail::optional_vector(f, p + "attn_sinks.weight", h.n_head, attn.sinks, w);
        lw.ffn_norm = detail::norm(f, p + std::string(ffn.norm) + ".weight", h.n_embd, w);
        if (h.experts()) {
            lw.ffn_gate_inp = detail::matrix(f, p + "ffn_gate_inp.weight", h.n_embd, h.n_expert, model);
            lw.ffn_gate_exps = detail::experts(f, p + "ffn_gate_exps.weight", h.n_embd, h.n_ff_exp, h.n_expert, model);
            lw.ffn_up_exps = detail::experts(f, p + "ffn_up_exps.weight", h.n_embd, h.n_ff_exp, h.n_expert, model);
            lw.ffn_down_exps = detail::experts(f, p + "ffn_down_exps.weight", h.n_ff_exp, h.n_embd, h.n_expert, model);
            lw.ffn_gate_inp_bias = detail::optional_vector(f, p + "ffn_gate_inp.bias", h.n_expert, ffn.router_bias, w);
            lw.ffn_gate_exps_bias =
                detail::optional_vector(f, p + "ffn_gate_exps.bias", h.n_ff_exp, ffn.expert_bias, w, h.n_expert);
            lw.ffn_up_exps_bias = detail::optional_vector(f, p + "ffn_up_exps.bias", h.n_ff_exp, ffn.expert_bias, w, h.n_expert);
            lw.ffn_down_exps_bias =
                detail::optional_vector(f, p + "ffn_down_exps.bias", h.n_embd, ffn.expert_bias, w, h.n_expert);
        } else {
            lw.ffn_gate = detail::matrix(f, p + "ffn_gate.weight", h.n_embd, h.n_ff, model);
            lw.ffn_up = detail::matrix(f, p + "ffn_up.weight", h.n_embd, h.n_ff, model);
            lw.ffn_down = detail::matrix(f, p + "ffn_down.weight", h.n_ff, h.n_embd, model);
        }
        for (const weight_ref* r :
             {&lw.attn_norm, &lw.attn_q, &lw.attn_k, &lw.attn_v, &lw.attn_output, &lw.attn_q_bias, &lw.attn_k_bias,
              &lw.attn_v_bias, &lw.attn_q_norm, &lw.attn_k_norm, &lw.attn_output_bias, &lw.attn_sinks, &lw.ffn_norm,
              &lw.ffn_gate, &lw.ffn_up, &lw.ffn_down, &lw.ffn_gate_inp, &lw.ffn_gate_exps, &lw.ffn_up_exps,
              &lw.ffn_down_exps, &lw.ffn_gate_inp_bias, &lw.ffn_gate_exps_bias, &lw.ffn_up_exps_bias,
              &lw.ffn_down_exps_bias})
            if (!r->name.empty()) used.push_back(r->name);
        w.layers.push_back(std::move(lw));
    }
    // A layer tensor nothing above reads (attn_output.bias, ffn_*.bias, fused attn_qkv, experts'
    // weights, a layer past block_count ...) would change the math: refused, naming it, rather
    // than ignored. So are the top-level tensors known to do so.
    std::sort(used.begin(), used.end());
    for (const gguf::tensor_info& t : f.tensors()) {
        const bool layer = t.name.rfind("blk.", 0) == 0;
        const bool changes_math = t.name == "output.bias" || t.name == "output_norm.bias" ||
                                  t.name == "token_embd_norm.weight" || t.name == "rope_factors_long.weight" ||
                                  t.name == "rope_factors_short.weight";
        check(!(layer || changes_math) || std::binary_search(used.begin(), used.end(), t.name), errc::unsupported_type, [&] {
            return model + "tensor '" + t.name + "' in " + f.source() + " is not part of the " + std::string(h.arch->name) +
                   " architecture as llmrt computes it; running without it would be wrong";
        });
    }
    return w;
}

}  // namespace llmrt::model
