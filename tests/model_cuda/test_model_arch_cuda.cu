// Every architecture of model/arch/ on the CUDA backend against the CPU backend (Q8_1 activations,
// what mmvq computes): node by node within mmvq's NMSE bound, with and without CUDA graphs, and a
// batch giving every token the bits of token-by-token forwards. Every case skips, passing with a
// message, on a machine without a CUDA device.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <llmrt/cuda/backend.cuh>
#include <llmrt/graph/compare.hpp>

#include "../model/arch_fixtures.hpp"

using namespace llmrt;

namespace {

bool no_cuda_device() {
    if (cuda::backend::device_present()) return false;
    MESSAGE("skipped: no CUDA device on this machine (cudaGetDeviceCount)");
    return true;
}

}  // namespace

TEST_CASE("every node of each architecture's graph on CUDA agrees with the CPU backend within mmvq's NMSE bound") {
    if (no_cuda_device()) return;
    constexpr double nmse_bound = 5e-4;
    // With CUDA graphs and fused steps (rope_cache with the factors and scaling), launched op by
    // op, and unfused (rope, rms_norm and mul op steps).
    struct configuration {
        bool graphs, fuse;
    };
    for (const configuration c : {configuration{true, true}, configuration{false, true}, configuration{true, false}}) {
        for (const auto& v : test::every_arch_variant()) {
            CAPTURE(v.label);
            CAPTURE(c.graphs);
            CAPTURE(c.fuse);
            const auto file = test::model_file(v.shape, qtype::q8_0);
            const model::llama_weights w = model::load_llama_weights(*file);
            const model::llama_graph built = model::build_llama_graph(w, 16, 8, qtype::f16);
            cpu::backend cpu_backend;
            cuda::backend gpu_backend({.use_graphs = c.graphs});
            graph::executor<cpu::backend> cpu(cpu_backend, built.g, {.reuse_memory = false});
            graph::executor<cuda::backend> gpu(gpu_backend, built.g, {.reuse_memory = false, .fuse = c.fuse});
            // Every layer's ropes and cache writes fuse (biases, head norms, factors and scaling
            // included) unless fusion is off.
            CHECK(test::rope_cache_steps(gpu) == (c.fuse ? std::size_t(w.hparams.n_layer) : 0));
            test::compare_prompt_then_tokens(cpu, gpu, built, [&](const auto& d) {
                INFO("node ", d.name, " (", graph::to_string(d.op), "): nmse ", d.nmse);
                CHECK(d.nmse <= nmse_bound);
            });
        }
    }
}

TEST_CASE("a batch forward of each architecture on CUDA gives every token the bits of token-by-token forwards") {
    if (no_cuda_device()) return;
    using cuda_model = model::llama_model<cuda::backend>;
    cuda::backend b;
    const std::vector<int32_t> tokens(test::model_prompt.begin(), test::model_prompt.begin() + 5);
    for (const auto& v : test::every_arch_variant()) {
        CAPTURE(v.label);
        const auto file = test::model_file(v.shape, qtype::q8_0);
        cuda_model batched(b, file, {.n_ctx = 16, .max_batch = 8}), single(b, file, {.n_ctx = 16, .max_batch = 8});
        const auto l = batched.forward(tokens, test::iota_positions(0, tokens.size()));
        CHECK(test::same_bits(std::vector<float>(l.begin(), l.end()), test::one_by_one(single, tokens)));
    }
}
