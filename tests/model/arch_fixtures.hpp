// Small random models of every architecture llmrt loads, with the options each exercises, for the
// architecture tests of every backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <llmrt/graph/compare.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/model/llama_graph.hpp>

#include "model_fixtures.hpp"

namespace llmrt::test {

struct arch_variant {
    std::string label;
    model::llama_shape shape;
};

// A q8_0-sized shape (n_embd 64, n_ff 128, no vocabulary) of an architecture, which the variants
// below change.
inline model::llama_shape variant_shape(const std::string& architecture) {
    model::llama_shape s = small_shape(qtype::q8_0);
    s.vocabulary = false;
    s.architecture = architecture;
    return s;
}

// q8_0-sized shapes (n_embd 64, n_ff 128): llama with q/k/v biases, linear rope scaling and Llama 3
// frequency factors; qwen2 with its own and with a tied output; qwen3 with head_dim 32, not
// n_embd / n_head = 16; qwen3moe likewise, with 8 experts of which each token uses 2.
inline std::vector<arch_variant> arch_variants() {
    std::vector<arch_variant> v;
    const model::llama_shape s = variant_shape("llama");
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

// gpt-oss on q8_0-sized shapes: 4 experts of 64 rows, top 2, YaRN (factor 4 over an original
// context of 64, so that the ramp between corr dims 0 and 3 turns some pairs and not others), a
// window of 3 keys on layer 0 (its sliding layer). Every backend's tests take every_arch_variant();
// arch_variants() ends with qwen3moe, which the loader-edit tests start from.
inline arch_variant gpt_oss_variant() {
    model::llama_shape s = variant_shape("gpt-oss");
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.n_ff_exp = 64;
    s.rope_scaling_type = "yarn";
    s.rope_scaling_factor = 4.0f;
    s.rope_original_context = 64;
    s.sliding_window = 3;
    return {"gpt-oss, 4 experts of 64 rows, top 2, YaRN 4 over 64, window 3 on layer 0", s};
}

// Llama 3 70B's attention on a narrow model: q is 8192 wide while n_embd stays 64.
inline arch_variant wide_heads_variant() {
    return {"qwen3, 64 heads of 128 in groups of 8 (Llama 3 70B's attention), n_embd 64",
            with_70b_attention(variant_shape("qwen3"))};
}

inline std::vector<arch_variant> every_arch_variant() {
    auto v = arch_variants();
    v.push_back(gpt_oss_variant());
    v.push_back(wide_heads_variant());
    return v;
}

// The rope_cache steps of an executor's plan: one per layer where the ropes and cache writes fuse.
template <class Executor>
std::size_t rope_cache_steps(const Executor& e) {
    std::size_t n = 0;
    for (const graph::step& st : e.get_plan().steps) n += st.kind == graph::step_kind::rope_cache;
    return n;
}

// Runs model_prompt's first 6 tokens in one batch, then tokens 6 and 7 one at a time over the
// cache they left, on `cpu` and `other` (executors of `built`), and calls check(d) for every node
// compare_nodes sets side by side, the argmax (i32) left out.
template <class Cpu, class Other, class Check>
void compare_prompt_then_tokens(Cpu& cpu, Other& other, const model::llama_graph& built, Check&& check) {
    for (const std::pair<int32_t, int64_t>& run_at : {std::pair<int32_t, int64_t>{0, 6}, {6, 1}, {7, 1}}) {
        const int32_t first = run_at.first;  // not structured bindings: clang 14 cannot capture them
        const int64_t n = run_at.second;
        CAPTURE(first);
        const std::vector<int32_t> tokens(model_prompt.begin() + first, model_prompt.begin() + first + n);
        const std::vector<int32_t> positions = iota_positions(first, std::size_t(n));
        auto run = [&](auto& e) {
            e.write(built.tokens, std::span<const int32_t>(tokens));
            e.write(built.positions, std::span<const int32_t>(positions));
            e.run(n);
        };
        run(cpu);
        run(other);
        for (const auto& d : graph::compare_nodes(cpu, other, n))
            if (d.type != graph::i32_type) check(d);
    }
}

}  // namespace llmrt::test
