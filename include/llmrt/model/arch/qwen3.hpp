// The "qwen3" architecture (Qwen3 dense models).
//
//   qwen3.*                       the common keys (hparams.hpp); qwen3.attention.key_length gives
//                                 head_dim, which may differ from n_embd / n_head (Qwen3-0.6B:
//                                 n_embd 1024, 16 heads of 128)
//   blk.N.attn_{q,k}_norm.weight  required: head_dim floats, an RMS norm of each head before rope
//   no q/k/v biases
//   rope order                    NeoX (llama.cpp: LLAMA_ROPE_TYPE_NEOX)
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/model/arch/architecture.hpp"

namespace llmrt::model::arch {

inline constexpr architecture qwen3{
    "qwen3",
    {.qkv_bias = presence::absent,
     .qk_norm = presence::required,
     .rope_order = graph::rope_order::neox,
     .rope_freqs = presence::absent},
};

}  // namespace llmrt::model::arch
