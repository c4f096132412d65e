// Speculative decoding end to end with the llama model on the CPU backend.
#include "backend_cases.hpp"
#include "speculative_end_to_end.hpp"

// A CUDA or Vulkan program is this file with its own case: one line here, one in CMakeLists.txt.
LLMRT_SPECULATIVE_END_TO_END_TESTS(llmrt::test::cpu_backend_case);
LLMRT_SPECULATIVE_DRAFT_AHEAD_TESTS(llmrt::test::cpu_backend_case);
