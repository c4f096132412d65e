// A forward call of a loaded model allocates nothing: this program links the counting global
// operator new of tests/graph/count_allocations.cpp.
#include <doctest/doctest.h>

#include <vector>

#include "../graph/count_allocations.hpp"
#include "model_fixtures.hpp"

using namespace llmrt;

TEST_CASE("model forward calls allocate nothing, batched or single, after truncate and restore") {
    cpu::backend b;
    model::llama_model<cpu::backend> m(b, test::small_model_file(qtype::q4_K), {.n_ctx = 32, .max_batch = 4});
    const std::vector<int32_t> tokens{1, 300, 17, 42}, positions{0, 1, 2, 3}, next{7}, next_pos{4};
    m.forward(tokens, positions);  // warm: nothing is lazily made on first use, but keep the count honest
    const auto state = m.save_state();

    const long before = test::allocation_count();
    m.truncate(0);
    m.forward(tokens, positions);
    m.forward(next, next_pos);
    m.restore_state(state);
    m.forward(next, next_pos);
    CHECK(test::allocation_count() - before == 0);
}
