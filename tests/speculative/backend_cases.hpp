// The backends the speculative end-to-end tests run on, one struct each:
//   backend_type  the graph backend llama_model runs on
//   name          how test output names it
//   make()        a backend ready to run, or null when this machine has none (the test then skips)
// A GPU backend joins with one struct here and one test program that applies the tests to it
// (see test_speculative_cpu.cpp).
#pragma once

#include <memory>

#include <llmrt/cpu/backend.hpp>

namespace llmrt::test {

struct cpu_backend_case {
    using backend_type = cpu::backend;
    static constexpr const char* name = "cpu";
    static std::unique_ptr<backend_type> make() { return std::make_unique<backend_type>(); }
};

}  // namespace llmrt::test
