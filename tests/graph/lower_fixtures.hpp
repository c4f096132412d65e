// The models and plans the lowering tests (test_lower.cpp, test_lower_moe.cpp) start from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/graph/lower.hpp>
#include <llmrt/graph/plan.hpp>
#include <llmrt/model/model.hpp>

namespace llmrt::test {

using graph::step_kind;


inline std::shared_ptr<const gguf::file> small_llama_file(qtype type, int32_t n_layer, const std::string& architecture) {
    model::llama_shape s;
    s.architecture = architecture;
    if (architecture == "qwen3moe" || architecture == "gpt-oss") {  // 8 experts of 96 rows, top 2
        s.n_expert = 8;
        s.n_expert_used = 2;
        s.n_ff_exp = 96;
    }
    if (architecture == "gpt-oss") s.sliding_window = 3;
    s.n_vocab = 300;
    s.n_embd = 256;
    s.n_ff = 512;
    s.n_layer = n_layer;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ctx = 64;
    s.vocabulary = false;
    return std::make_shared<const gguf::file>(gguf::file::from_bytes(model::make_random_llama(s, type, 7).to_bytes()));
}

struct small_llama {
    std::shared_ptr<const gguf::file> file;
    model::llama_weights weights;
    model::llama_graph built;

    explicit small_llama(qtype type, int32_t max_batch = 4, int32_t n_layer = 2, const std::string& architecture = "llama")
        : file(small_llama_file(type, n_layer, architecture)), weights(model::load_llama_weights(*file)),
          built(model::build_llama_graph(weights, 64, max_batch, qtype::f16)) {}
};

inline graph::plan_sizes cpu_sizes(const graph::graph& g, const cpu::backend& b) {
    graph::plan_sizes s;
    s.scratch = [&g, &b](const graph::node& n) { return b.scratch_bytes(g, n); };
    s.rounded = [&b](int64_t k, int64_t cols) { return b.rounded_bytes(k, cols); };
    return s;
}

inline std::vector<step_kind> kinds(const graph::plan& p) {
    std::vector<step_kind> k;
    for (const auto& s : p.steps) k.push_back(s.kind);
    return k;
}

// The steps, as kind names, one string.
inline std::string spelled(const graph::plan& p) {
    std::string out;
    for (const auto& s : p.steps) out += std::string(graph::to_string(s.kind)) + " ";
    return out;
}


}  // namespace llmrt::test
