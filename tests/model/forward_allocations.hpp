// One check shared by every backend's allocation tests (each program links the counting global
// operator new of tests/graph/count_allocations.cpp): a warmed llama model's forward calls
// allocate nothing on the host, batched or single, after truncate and after restore_state.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "../graph/count_allocations.hpp"
#include "model_fixtures.hpp"

namespace llmrt::test {

template <class Backend>
void check_forward_allocates_nothing(Backend& b) {
    model::llama_model<Backend> m(b, small_model_file(qtype::q4_K), {.n_ctx = 32, .max_batch = 4});
    const std::vector<int32_t> tokens{1, 300, 17, 42}, positions{0, 1, 2, 3}, next{7}, next_pos{4};
    // Warm: every command buffer and copy path runs once, so that nothing made on first use is
    // counted (a Vulkan driver may compile a pipeline on its first execution: lavapipe's LLVM
    // allocates through operator new).
    m.forward(tokens, positions);
    const auto state = m.save_state();
    m.forward(next, next_pos);
    m.restore_state(state);

    const long before = allocation_count();
    m.truncate(0);
    m.forward(tokens, positions);
    m.forward(next, next_pos);
    m.restore_state(state);
    m.forward(next, next_pos);
    CHECK(allocation_count() - before == 0);
}

}  // namespace llmrt::test
