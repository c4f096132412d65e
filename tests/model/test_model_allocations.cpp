// A forward call of a loaded model allocates nothing: this program links the counting global
// operator new of tests/graph/count_allocations.cpp.
#include <doctest/doctest.h>

#include "forward_allocations.hpp"

using namespace llmrt;

TEST_CASE("model forward calls allocate nothing, batched or single, after truncate and restore") {
    cpu::backend b;
    test::check_forward_allocates_nothing(b);
}
