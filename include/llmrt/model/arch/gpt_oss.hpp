// The "gpt-oss" architecture (OpenAI's gpt-oss-20b and gpt-oss-120b; llama.cpp's LLM_ARCH_OPENAI_MOE).
//
//   attention                     q/k/v biases and an output bias, NeoX rope (YaRN in the released
//                                 files: rope.scaling.type "yarn", factor 32 over an original
//                                 context of 4096), per-head sinks (blk.N.attn_sinks.weight), a
//                                 sliding window of gpt-oss.attention.sliding_window keys on the
//                                 even layers (llama.cpp's load_swa_pattern(ml, 2)); sliding layers
//                                 rope with gpt-oss.rope.freq_base_swa when the file has it
//   blk.N.post_attention_norm.weight  the feed-forward's input norm (llama.cpp's attn_post_norm)
//   gpt-oss.expert_count, expert_used_count, expert_feed_forward_length   as qwen3moe's
//   blk.N.ffn_gate_inp.{weight,bias}  the router and its bias
//   blk.N.ffn_{gate,up,down}_exps.{weight,bias}  the experts and their biases
//   feed-forward                  the k largest router logits, a softmax over those k (no softmax
//                                 before, no renormalization, no scale), swiglu_oai
//   output.weight                 required (llama.cpp does not tie gpt-oss's output)
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/model/arch/architecture.hpp"

namespace llmrt::model::arch {

inline constexpr architecture gpt_oss{
    "gpt-oss",
    {.qkv_bias = presence::required,
     .qk_norm = presence::absent,
     .rope_order = graph::rope_order::neox,
     .rope_freqs = presence::absent,
     .output_bias = presence::required,
     .sinks = presence::required,
     .sliding_window = true,
     .sliding_window_pattern = 2},
    {.kind = ffn_kind::experts,
     .expert_norm = graph::expert_norm::softmax,
     .norm = "post_attention_norm",
     .router_bias = presence::required,
     .expert_bias = presence::required,
     .activation = expert_activation::swiglu_oai},
    presence::required,
};

}  // namespace llmrt::model::arch
