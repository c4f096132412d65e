// A forward call of the llama model on the Vulkan backend allocates nothing on the host: this
// program links the counting global operator new of tests/graph/count_allocations.cpp. (It counts
// the driver's C++ allocations too: lavapipe compiles a pipeline on its first execution.)
#include <doctest/doctest.h>

#include <vector>

#include <llmrt/vulkan/backend.hpp>

#include "../graph/count_allocations.hpp"
#include "../model/model_fixtures.hpp"
#include "../vulkan/vulkan_test_device.hpp"

using namespace llmrt;

TEST_CASE("model forward calls on the Vulkan backend allocate nothing, batched or single, after truncate and restore") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::backend b(ctx);
    model::llama_model<vulkan::backend> m(b, test::small_model_file(qtype::q4_K), {.n_ctx = 32, .max_batch = 4});
    const std::vector<int32_t> tokens{1, 300, 17, 42}, positions{0, 1, 2, 3}, next{7}, next_pos{4};
    // Warm: every command buffer and copy path runs once, so that a driver compiling its shaders
    // on first execution (lavapipe's LLVM allocates through operator new) is not counted.
    m.forward(tokens, positions);
    const auto state = m.save_state();
    m.forward(next, next_pos);
    m.restore_state(state);

    const long before = test::allocation_count();
    m.truncate(0);
    m.forward(tokens, positions);
    m.forward(next, next_pos);
    m.restore_state(state);
    m.forward(next, next_pos);
    CHECK(test::allocation_count() - before == 0);
}
