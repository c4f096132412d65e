// One check shared by every backend's model tests: greedy generation is reproducible across
// runs, across max_batch, and across a save and restore of the model's state.
#pragma once

#include <doctest/doctest.h>

#include <span>
#include <vector>

#include "model_fixtures.hpp"

namespace llmrt::test {

template <class Backend>
void check_greedy_reproducible(Backend& b, const std::vector<int32_t>& prompt) {
    using model_type = model::llama_model<Backend>;
    model_type m(b, small_model_file(qtype::q4_K), {.n_ctx = 64, .max_batch = 4});
    const auto first = model::generate_greedy(m, prompt, 16);
    REQUIRE(first.size() == 16);
    m.truncate(0);
    CHECK(model::generate_greedy(m, prompt, 16) == first);
    model_type other(b, small_model_file(qtype::q4_K), {.n_ctx = 64, .max_batch = 8});
    CHECK(model::generate_greedy(other, prompt, 16) == first);

    // Save after the prompt and 8 tokens, generate the rest, restore and generate it again.
    m.truncate(0);
    const auto head = model::generate_greedy(m, prompt, 8);
    const auto state = m.save_state();
    const int32_t last = head.back();
    const auto tail = model::generate_greedy(m, std::span<const int32_t>(&last, 1), 8);
    m.restore_state(state);
    CHECK(model::generate_greedy(m, std::span<const int32_t>(&last, 1), 8) == tail);
    std::vector<int32_t> joined(head);
    joined.insert(joined.end(), tail.begin(), tail.end() - 1);
    CHECK(std::vector<int32_t>(first.begin(), first.end() - 1) == joined);
}

}  // namespace llmrt::test
