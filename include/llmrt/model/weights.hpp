// A llama model's weights, found in a GGUF file by name and checked against the hyperparameters.
//
//   token_embd.weight           [n_embd, n_vocab]        any type (get_rows dequantizes a row)
//   output.weight               [n_embd, n_vocab]        any type; absent: tied to token_embd
//   output_norm.weight          [n_embd]
//   blk.N.attn_norm.weight      [n_embd]                 norms: f32, f16 or bf16 (kept as f32)
//   blk.N.attn_q.weight         [n_embd, n_embd]
//   blk.N.attn_k/attn_v.weight  [n_embd, n_embd_kv]
//   blk.N.attn_output.weight    [n_embd, n_embd]
//   blk.N.ffn_norm.weight       [n_embd]
//   blk.N.ffn_gate/ffn_up.weight [n_embd, n_ff]
//   blk.N.ffn_down.weight       [n_ff, n_embd]
//
// Matrices keep GGUF's layout (ne[0] = k contiguous, one row per output), the mat-vec layout, and
// stay where the file holds them; nothing is copied except norms stored in 16 bits. A weight of a
// type llmrt cannot decode (iq2_xxs, say) raises errc::unsupported_type naming it and its type;
// tensors the model does not use may be of any type.
#pragma once

#include "llmrt/core/cxx20.hpp"

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

struct llama_layer_weights {
    weight_ref attn_norm, attn_q, attn_k, attn_v, attn_output;
    weight_ref ffn_norm, ffn_gate, ffn_up, ffn_down;
};

struct llama_weights {
    llama_hparams hparams;
    weight_ref token_embd, output_norm, output;
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

inline const gguf::tensor_info& require_tensor(const gguf::file& f, const std::string& name) {
    const gguf::tensor_info* t = f.find_tensor(name);
    check(t != nullptr, errc::invalid_argument,
          [&] { return "llama model: tensor '" + name + "' is missing from " + f.source(); });
    return *t;
}

// A matrix [ne0, ne1] (a vector when ne1 = 1 and the file holds one dimension).
inline weight_ref matrix(const gguf::file& f, const std::string& name, int64_t ne0, int64_t ne1) {
    const gguf::tensor_info& t = require_tensor(f, name);
    check(t.decodable(), errc::unsupported_type,
          [&] { return "llama model: tensor '" + name + "' in " + f.source() + " has " + t.undecodable_type(); });
    check(t.ne[0] == ne0 && t.ne[1] == ne1 && t.ne[2] == 1 && t.ne[3] == 1, errc::shape_mismatch, [&] {
        return "llama model: tensor '" + name + "' in " + f.source() + " has shape " + shape_text(t) + ", expected [" +
               std::to_string(ne0) + (ne1 == 1 ? "" : ", " + std::to_string(ne1)) + "]";
    });
    return weight_ref{name, t.type(), ne0, ne1, t.data};
}

// A norm weight as f32, converted from f16 or bf16 when stored so.
inline weight_ref norm(const gguf::file& f, const std::string& name, int64_t n, llama_weights& w) {
    weight_ref r = matrix(f, name, n, 1);
    if (r.type == qtype::f32) return r;
    check(r.type == qtype::f16 || r.type == qtype::bf16, errc::unsupported_type, [&] {
        return "llama model: norm '" + name + "' is " + llmrt::name(r.type) + "; norms must be f32, f16 or bf16";
    });
    std::vector<float> values(static_cast<std::size_t>(n));
    dequantize(r.type, r.data, values.data(), n);
    r.type = qtype::f32;
    r.data = values.data();
    w.converted.push_back(std::move(values));
    return r;
}

}  // namespace detail

// Finds and checks every tensor; llmrt::error naming the missing or misshapen tensor, or the
// metadata key that is missing or wrong.
inline llama_weights load_llama_weights(const gguf::file& f) {
    llama_weights w;
    // A copy: g++ 13 takes a reference returned from a call with a temporary string argument for a
    // possibly dangling one (-Wdangling-reference), and the project builds with -Werror.
    const gguf::tensor_info embd = detail::require_tensor(f, "token_embd.weight");
    check(embd.ne[1] <= INT32_MAX, errc::shape_mismatch, [&] {
        return "llama model: token_embd.weight has " + std::to_string(embd.ne[1]) + " rows, more than int32 ids reach";
    });
    w.hparams = llama_hparams_from(f.metadata(), int32_t(embd.ne[1]));
    const llama_hparams& h = w.hparams;
    w.token_embd = detail::matrix(f, "token_embd.weight", h.n_embd, h.n_vocab);
    w.output_norm = detail::norm(f, "output_norm.weight", h.n_embd, w);
    w.tied_output = f.find_tensor("output.weight") == nullptr;
    w.output = w.tied_output ? w.token_embd : detail::matrix(f, "output.weight", h.n_embd, h.n_vocab);
    for (int32_t l = 0; l < h.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        llama_layer_weights lw;
        lw.attn_norm = detail::norm(f, p + "attn_norm.weight", h.n_embd, w);
        lw.attn_q = detail::matrix(f, p + "attn_q.weight", h.n_embd, h.n_embd);
        lw.attn_k = detail::matrix(f, p + "attn_k.weight", h.n_embd, h.n_embd_kv());
        lw.attn_v = detail::matrix(f, p + "attn_v.weight", h.n_embd, h.n_embd_kv());
        lw.attn_output = detail::matrix(f, p + "attn_output.weight", h.n_embd, h.n_embd);
        lw.ffn_norm = detail::norm(f, p + "ffn_norm.weight", h.n_embd, w);
        lw.ffn_gate = detail::matrix(f, p + "ffn_gate.weight", h.n_embd, h.n_ff);
        lw.ffn_up = detail::matrix(f, p + "ffn_up.weight", h.n_embd, h.n_ff);
        lw.ffn_down = detail::matrix(f, p + "ffn_down.weight", h.n_ff, h.n_embd);
        w.layers.push_back(std::move(lw));
    }
    return w;
}

}  // namespace llmrt::model
