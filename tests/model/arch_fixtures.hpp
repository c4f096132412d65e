// Small random models of every architecture llmrt loads, with the options each exercises, for the
// architecture tests of every backend.
#pragma once

#include <string>
#include <vector>

#include "model_fixtures.hpp"

namespace llmrt::test {

struct arch_variant {
    std::string label;
    model::llama_shape shape;
};

// q8_0-sized shapes (n_embd 64, n_ff 128): llama with q/k/v biases, linear rope scaling and Llama 3
// frequency factors; qwen2 with its own and with a tied output; qwen3 with head_dim 32, not
// n_embd / n_head = 16; qwen3moe likewise, with 8 experts of which each token uses 2.
inline std::vector<arch_variant> arch_variants() {
    std::vector<arch_variant> v;
    model::llama_shape s = small_shape(qtype::q8_0);
    s.vocabulary = false;
    model::llama_shape llama = s;
    llama.qkv_bias = true;
    llama.rope_scaling_type = "linear";
    llama.rope_scaling_factor = 4.0f;
    llama.rope_freqs = true;
    v.push_back({"llama, biases, linear rope scaling 4 and rope_freqs", llama});
    model::llama_shape qwen2 = s;
    qwen2.architecture = "qwen2";
    v.push_back({"qwen2", qwen2});
    qwen2.tied_output = true;
    v.push_back({"qwen2, tied output", qwen2});
    model::llama_shape qwen3 = s;
    qwen3.architecture = "qwen3";
    qwen3.head_dim = 32;
    v.push_back({"qwen3, head_dim 32 of n_embd 64 and 4 heads", qwen3});
    model::llama_shape qwen3moe = qwen3;
    qwen3moe.architecture = "qwen3moe";
    qwen3moe.n_expert = 8;
    qwen3moe.n_expert_used = 2;
    qwen3moe.n_ff_exp = 96;  // a multiple of q8_0's 32, of no larger tile
    v.push_back({"qwen3moe, 8 experts of 96 rows, top 2, head_dim 32", qwen3moe});
    return v;
}

}  // namespace llmrt::test
