// Greedy generation: the prompt in batches of up to max_batch tokens, then one token at a time,
// each the argmax of the previous token's logits (the graph's argmax node, so only one id per
// token leaves the backend).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"

namespace llmrt::model {

// Appends n_new greedy tokens after `prompt` (at the model's current cache length) and returns
// them. Model: llama_model<Backend> or anything with forward, greedy, cache_length,
// context_length and max_batch; forward_greedy, where the model has it, reads back only the ids.
template <class Model>
std::vector<int32_t> generate_greedy(Model& m, std::span<const int32_t> prompt, int32_t n_new) {
    check(!prompt.empty() && n_new >= 0, errc::invalid_argument, [&] {
        return "generate_greedy: needs a prompt of at least one token and n_new >= 0 (got " +
               std::to_string(prompt.size()) + " tokens, n_new " + std::to_string(n_new) + ")";
    });
    check(int64_t(m.cache_length()) + int64_t(prompt.size()) + n_new <= int64_t(m.context_length()) + 1,
          errc::invalid_argument, [&] {
              return "generate_greedy: " + std::to_string(prompt.size()) + " prompt tokens and " + std::to_string(n_new) +
                     " new ones after " + std::to_string(m.cache_length()) + " cached do not fit the context of " +
                     std::to_string(m.context_length());
          });
    std::vector<int32_t> out;
    out.reserve(std::size_t(n_new));
    std::array<int32_t, 64> pos{};
    int32_t next = -1;
    for (std::size_t done = 0; done < prompt.size();) {
        const std::size_t n = std::min({prompt.size() - done, std::size_t(m.max_batch()), pos.size()});
        for (std::size_t i = 0; i < n; ++i) pos[i] = m.cache_length() + int32_t(i);
        const auto tokens = prompt.subspan(done, n);
        const auto positions = std::span<const int32_t>(pos).first(n);
        if constexpr (requires { m.forward_greedy(tokens, positions); })
            next = m.forward_greedy(tokens, positions)[n - 1];
        else {
            m.forward(tokens, positions);
            next = m.greedy()[n - 1];
        }
        done += n;
    }
    for (int32_t i = 0; i < n_new; ++i) {
        out.push_back(next);
        if (i + 1 == n_new) break;  // the last token needs no logits of its own
        const int32_t p = m.cache_length();
        const auto token = std::span<const int32_t>(&out.back(), 1), position = std::span<const int32_t>(&p, 1);
        if constexpr (requires { m.forward_greedy(token, position); })
            next = m.forward_greedy(token, position)[0];  // only the id leaves the backend
        else {
            m.forward(token, position);
            next = m.greedy()[0];
        }
    }
    return out;
}

}  // namespace llmrt::model
