// What one GGUF architecture is made of, in terms of the shared blocks the graph builder
// (model/llama_graph.hpp) composes:
//
//   x = token_embd[tokens]
//   per layer:  x = x + attention(rms_norm(x) ⊙ attn_norm)      the attention block, with options
//               x = x + ffn(rms_norm(x) ⊙ ffn_norm)             SwiGLU, or a mixture of experts
//   logits = output · (rms_norm(x) ⊙ output_norm)               output tied to token_embd when absent
//
// An architecture file (arch/llama.hpp, arch/qwen2.hpp, ...) fills in one `architecture`: its
// GGUF name, which is also the prefix of its metadata keys ("qwen2.embedding_length"), and the
// options of its attention and feed-forward blocks. Every key and tensor name the loader reads follows from these;
// registry.hpp lists the architectures llmrt knows. Adding one that fits these blocks is one such
// file and one line there.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <string_view>

#include "llmrt/graph/node.hpp"

namespace llmrt::model {

// Whether an architecture's files hold an optional tensor: never (a file that does is refused,
// naming the tensor: llmrt would otherwise run without it), when they choose, or always.
enum class presence : uint8_t { absent, optional, required };

// The attention block of one layer, for head_dim from <arch>.attention.key_length (default
// n_embd / n_head):
//
//   q = Wq h [+ bq],  k = Wk h [+ bk],  v = Wv h [+ bv]           qkv_bias: blk.N.attn_{q,k,v}.bias
//   q = rms_norm_per_head(q) ⊙ q_norm, k likewise               qk_norm: blk.N.attn_{q,k}_norm.weight
//   q = rope(q), k = rope(k)                                      rope_order; factors: rope_freqs.weight
//   K[pos] = k, V[pos] = v
//   out = Wo · attention(q, K, V) [+ bo]                          output_bias: blk.N.attn_output.bias
//
// The attention is causal, grouped-query, scaled by 1/sqrt(head_dim); with sinks
// (blk.N.attn_sinks.weight, n_head logits) each head's softmax also counts exp(sink); on the
// sliding layers a query at p sees only the keys at p − n_swa + 1 .. p (n_swa:
// <arch>.attention.sliding_window) when the architecture has a sliding window. Layer l slides
// when n = 0 or l % n < n − 1 for the pattern n (llama.cpp's set_swa_pattern: 2 slides the even
// layers, 1 none, 0 all), <arch>.attention.sliding_window_pattern when the file has it as an
// integer, else sliding_window_pattern below. The rope may be YaRN's, for every architecture
// (<arch>.rope.scaling.type "yarn", hparams.hpp).
struct attention_block {
    presence qkv_bias = presence::absent;
    presence qk_norm = presence::absent;  // per-head RMS norms of q and k (head_dim floats each), before rope
    graph::rope_order rope_order = graph::rope_order::normal;
    presence rope_freqs = presence::absent;   // rope_freqs.weight: n_rot/2 frequency factors (Llama 3)
    presence output_bias = presence::absent;  // blk.N.attn_output.bias: n_embd floats
    presence sinks = presence::absent;        // blk.N.attn_sinks.weight: n_head floats
    bool sliding_window = false;              // false: no sliding layers (the keys are not read)
    uint32_t sliding_window_pattern = 0;      // the default pattern n (see above)
};

enum class ffn_kind : uint8_t { swiglu, experts };

// The gated activation of the experts:
//   swiglu      silu(gate) ⊙ up
//   swiglu_oai  gpt-oss's: g = min(gate, 7), u = clamp(up, ±7), g·σ(1.702·g)·(u + 1) (llama.cpp's
//               constants in build_moe_ffn)
enum class expert_activation : uint8_t { swiglu, swiglu_oai };
inline constexpr float swiglu_oai_alpha = 1.702f;
inline constexpr float swiglu_oai_limit = 7.0f;

// The feed-forward block of one layer, on h = rms_norm(x) ⊙ its norm (blk.N.<norm>.weight,
// `norm` below: ffn_norm, or gpt-oss's post_attention_norm):
//
//   swiglu   Wdown · (silu(Wgate h) ⊙ Wup h)                        blk.N.ffn_{gate,up,down}.weight
//   experts  logits = Wrouter h [+ br]                               blk.N.ffn_gate_inp.{weight,bias}
//            expert_norm none or sum: probs = softmax(logits), the k = expert_used_count most
//              probable experts e_j (ties: the lower index), w_j = probs[e_j] normalized as
//              expert_norm says
//            expert_norm softmax (llama.cpp's SOFTMAX_WEIGHT gating, gpt-oss): the k largest
//              logits e_j, w_j = softmax over those k logits
//            Σ_j w_j · (Wdown_e_j · act(Wgate_e_j h [+ bg_e_j], Wup_e_j h [+ bu_e_j]) [+ bd_e_j])
//              blk.N.ffn_{gate,up,down}_exps.weight, with expert_bias blk.N.ffn_{gate,up,down}_exps.bias
//            (no shared expert; <arch>.expert_count experts of expert_feed_forward_length rows)
struct ffn_block {
    ffn_kind kind = ffn_kind::swiglu;
    graph::expert_norm expert_norm = graph::expert_norm::sum;  // experts
    std::string_view norm = "ffn_norm";                          // the tensor blk.N.<norm>.weight
    presence router_bias = presence::absent;                     // experts: ffn_gate_inp.bias [n_expert]
    presence expert_bias = presence::absent;                     // experts: ffn_*_exps.bias [rows, n_expert]
    expert_activation activation = expert_activation::swiglu;    // experts
};

struct architecture {
    std::string_view name = {};  // general.architecture, and the prefix of the metadata keys
    attention_block attention = {};
    ffn_block ffn = {};
    presence output = presence::optional;  // output.weight (absent: the logits reuse token_embd)
};

}  // namespace llmrt::model
