// What one GGUF architecture is made of, in terms of the shared blocks the graph builder
// (model/llama_graph.hpp) composes:
//
//   x = token_embd[tokens]
//   per layer:  x = x + attention(rms_norm(x) ⊙ attn_norm)      the attention block, with options
//               x = x + ffn(rms_norm(x) ⊙ ffn_norm)             SwiGLU, or a mixture of SwiGLU experts
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
//   K[pos] = k, V[pos] = v;  out = Wo · attention(q, K, V)       causal, grouped-query, 1/sqrt(head_dim)
struct attention_block {
    presence qkv_bias = presence::absent;
    presence qk_norm = presence::absent;  // per-head RMS norms of q and k (head_dim floats each), before rope
    graph::rope_order rope_order = graph::rope_order::normal;
    presence rope_freqs = presence::absent;  // rope_freqs.weight: n_rot/2 frequency factors (Llama 3)
};

enum class ffn_kind : uint8_t { swiglu, experts };

// The feed-forward block of one layer:
//
//   swiglu   Wdown · (silu(Wgate h) ⊙ Wup h)                        blk.N.ffn_{gate,up,down}.weight
//   experts  probs = softmax(Wrouter h)                              blk.N.ffn_gate_inp.weight
//            the k = expert_used_count most probable experts e_j (ties: the lower index)
//            w_j = probs[e_j], normalized as `expert_norm` says
//            Σ_j w_j · Wdown_e_j · (silu(Wgate_e_j h) ⊙ Wup_e_j h)   blk.N.ffn_{gate,up,down}_exps.weight
//            (no shared expert; <arch>.expert_count experts of expert_feed_forward_length rows)
struct ffn_block {
    ffn_kind kind = ffn_kind::swiglu;
    graph::expert_norm expert_norm = graph::expert_norm::sum;  // experts
};

struct architecture {
    std::string_view name = {};  // general.architecture, and the prefix of the metadata keys
    attention_block attention = {};
    ffn_block ffn = {};
};

}  // namespace llmrt::model
