// Speculative decoding end to end with the llama model on the CUDA backend: the CPU program's
// tests (speculative_end_to_end.hpp) applied to a CUDA case. Without a CUDA device every test
// skips, passing with a message.

#include <memory>

#include <llmrt/cuda/backend.cuh>

#include "speculative_end_to_end.hpp"

namespace llmrt::test {

// mmvq built for the pair's two weight types only (the Q8_0 target, the Q2_K draft).
struct cuda_backend_case {
    using backend_type = cuda::basic_backend<type_list<q8_0, q2_K>>;
    static constexpr const char* name = "cuda";
    static std::unique_ptr<backend_type> make() {
        return backend_type::device_present() ? std::make_unique<backend_type>() : nullptr;
    }
};

}  // namespace llmrt::test

LLMRT_SPECULATIVE_END_TO_END_TESTS(llmrt::test::cuda_backend_case);
LLMRT_SPECULATIVE_DRAFT_AHEAD_TESTS(llmrt::test::cuda_backend_case);
