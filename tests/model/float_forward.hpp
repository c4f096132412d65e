// A model file's logits on the CPU backend with float activations, next to the naive double
// forward's (model_fixtures.hpp: reference_logits), for the architecture tests.
#pragma once

#include <memory>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/model.hpp>

#include "model_fixtures.hpp"

namespace llmrt::test {

inline std::shared_ptr<const gguf::file> file_of(const gguf::writer& w) {
    return std::make_shared<const gguf::file>(gguf::file::from_bytes(w.to_bytes()));
}

struct logits_and_reference {
    std::vector<float> logits;
    std::vector<double> reference;
};

// The logits of `tokens` at positions 0, 1, ... in one batch (at most 8 tokens).
inline logits_and_reference float_forward(const std::shared_ptr<const gguf::file>& file, const std::vector<int32_t>& tokens) {
    cpu::backend b({.quantized_activations = cpu::activation_format::f32});
    model::llama_model<cpu::backend> m(b, file, {.n_ctx = 16, .max_batch = 8});
    const auto l = m.forward(tokens, iota_positions(0, tokens.size()));
    return {std::vector<float>(l.begin(), l.end()), reference_logits(m.weights(), tokens)};
}

}  // namespace llmrt::test
