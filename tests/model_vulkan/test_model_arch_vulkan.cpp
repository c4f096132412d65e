// Every architecture of model/arch/ on the Vulkan backend against the CPU backend (Q8_1
// activations, what mmvq computes): node by node within the mmvq NMSE bound, and a batch giving
// every token the bits of token-by-token forwards.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <llmrt/graph/compare.hpp>
#include <llmrt/vulkan/backend.hpp>

#include "../model/arch_fixtures.hpp"
#include "../vulkan/vulkan_test_device.hpp"

using namespace llmrt;

TEST_CASE("every node of each architecture's graph on Vulkan agrees with the CPU backend within the mmvq NMSE bound") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    constexpr double nmse_bound = 5e-4;
    // Fused (rope_cache with the factors and scaling) and unfused (rope, rms_norm and mul op steps).
    for (const bool fuse : {true, false}) {
        for (const auto& v : test::every_arch_variant()) {
            CAPTURE(v.label);
            CAPTURE(fuse);
            const auto file = test::model_file(v.shape, qtype::q8_0);
            const model::llama_weights w = model::load_llama_weights(*file);
            const model::llama_graph built = model::build_llama_graph(w, 16, 8, qtype::f16);
            cpu::backend cpu_backend;
            vulkan::backend vk_backend(ctx);
            graph::executor<cpu::backend> cpu(cpu_backend, built.g, {.reuse_memory = false});
            graph::executor<vulkan::backend> vk(vk_backend, built.g, {.reuse_memory = false, .fuse = fuse});
            // Every layer's ropes and cache writes fuse (biases, head norms, factors and scaling
            // included) unless fusion is off.
            CHECK(test::rope_cache_steps(vk) == (fuse ? std::size_t(w.hparams.n_layer) : 0));
            test::compare_prompt_then_tokens(cpu, vk, built, [&](const auto& d) {
                CAPTURE(d.name);
                CHECK(d.nmse <= nmse_bound);
            });
        }
    }
}

TEST_CASE("a batch forward of each architecture on Vulkan gives every token the bits of token-by-token forwards") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    using vk_model = model::llama_model<vulkan::backend>;
    vulkan::backend b(ctx);
    const std::vector<int32_t> tokens(test::model_prompt.begin(), test::model_prompt.begin() + 5);
    for (const auto& v : test::every_arch_variant()) {
        CAPTURE(v.label);
        const auto file = test::model_file(v.shape, qtype::q8_0);
        vk_model batched(b, file, {.n_ctx = 16, .max_batch = 8}), single(b, file, {.n_ctx = 16, .max_batch = 8});
        const auto l = batched.forward(tokens, test::iota_positions(0, tokens.size()));
        CHECK(test::same_bits(std::vector<float>(l.begin(), l.end()), test::one_by_one(single, tokens)));
    }
}
