// The "qwen2" architecture (Qwen2, Qwen2.5 dense models).
//
//   qwen2.*                       the common keys (hparams.hpp)
//   blk.N.attn_{q,k,v}.bias       required
//   rope order                    NeoX: pairs (i, i + n_rot/2) (llama.cpp: LLAMA_ROPE_TYPE_NEOX)
//   output.weight                 optional: tied to token_embd when absent (the small models)
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/model/arch/architecture.hpp"

namespace llmrt::model::arch {

inline constexpr architecture qwen2{
    "qwen2",
    {.qkv_bias = presence::required,
     .qk_norm = presence::absent,
     .rope_order = graph::rope_order::neox,
     .rope_freqs = presence::absent},
};

}  // namespace llmrt::model::arch
