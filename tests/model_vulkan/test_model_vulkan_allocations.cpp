// A forward call of the llama model on the Vulkan backend allocates nothing on the host: this
// program links the counting global operator new of tests/graph/count_allocations.cpp. (It counts
// the driver's C++ allocations too: lavapipe compiles a pipeline on its first execution.)
#include <doctest/doctest.h>

#include <llmrt/vulkan/backend.hpp>

#include "../model/forward_allocations.hpp"
#include "../vulkan/vulkan_test_device.hpp"

using namespace llmrt;

TEST_CASE("model forward calls on the Vulkan backend allocate nothing, batched or single, after truncate and restore") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::backend b(ctx);
    test::check_forward_allocates_nothing(b);
}
