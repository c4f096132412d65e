// The "qwen3moe" architecture (Qwen3 mixture-of-experts models: Qwen3-30B-A3B, Qwen3-235B-A22B).
//
//   attention                     qwen3's: per-head q/k RMS norms (head_dim from
//                                 qwen3moe.attention.key_length), no biases, NeoX rope order
//   qwen3moe.expert_count         n_expert (required, > 0)
//   qwen3moe.expert_used_count    k experts per token (required, 1..n_expert)
//   qwen3moe.expert_feed_forward_length   n_ff_exp (optional; feed_forward_length / k, as
//                                 llama.cpp falls back)
//   blk.N.ffn_gate_inp.weight     [n_embd, n_expert]  the router
//   blk.N.ffn_{gate,up}_exps.weight  [n_embd, n_ff_exp, n_expert], ffn_down_exps [n_ff_exp, n_embd, n_expert]
//   feed-forward                  softmax over all experts, top k, the k probabilities divided by
//                                 their sum (llama.cpp's norm_w = true for qwen3moe), no shared
//                                 expert, no weight scale
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/model/arch/architecture.hpp"

namespace llmrt::model::arch {

inline constexpr architecture qwen3moe{
    "qwen3moe",
    {.qkv_bias = presence::absent,
     .qk_norm = presence::required,
     .rope_order = graph::rope_order::neox,
     .rope_freqs = presence::absent},
    {.kind = ffn_kind::experts, .expert_norm = graph::expert_norm::sum},
};

}  // namespace llmrt::model::arch
