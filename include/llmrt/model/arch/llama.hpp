// The "llama" architecture (Llama 1-3, Mistral, and everything converted as llama).
//
//   llama.*                       the common keys (hparams.hpp)
//   blk.N.attn_{q,k,v}.bias       optional (some converted models carry them)
//   rope_freqs.weight             optional: Llama 3.1's frequency factors, n_rot/2 floats
//   rope order                    normal: pairs (2i, 2i+1); GGUF's llama q/k rows are permuted for it
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/model/arch/architecture.hpp"

namespace llmrt::model::arch {

inline constexpr architecture llama{
    "llama",
    {.qkv_bias = presence::optional,
     .qk_norm = presence::absent,
     .rope_order = graph::rope_order::normal,
     .rope_freqs = presence::optional},
};

}  // namespace llmrt::model::arch
