// The llama model on the Vulkan backend against the CPU backend with Q8_1 activations (what mmvq
// computes): every node within the mmvq NMSE bound, greedy tokens equal up to a near tie of the
// reference, the same tokens on every run and after save/restore, and the batch invariance and
// state behaviour the model promises.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <llmrt/graph/compare.hpp>
#include <llmrt/sample/model.hpp>
#include <llmrt/testing/measures.hpp>
#include <llmrt/vulkan/backend.hpp>

#include "../model/model_fixtures.hpp"
#include "../model/eval_greedy_check.hpp"
#include "../model/greedy_reproducibility.hpp"
#include "../vulkan/vulkan_test_device.hpp"

using namespace llmrt;
using vk_model = model::llama_model<vulkan::backend>;
using cpu_model = model::llama_model<cpu::backend>;

static_assert(sample::causal_model<vk_model>, "llama_model<vulkan::backend> must satisfy the sampler layer's causal_model");

namespace {

constexpr double nmse_bound = 5e-4;

const std::vector<int32_t>& prompt = test::model_prompt;
using test::iota_positions;
using test::same_bits;
using test::one_by_one;


// How far apart the two largest logits of a row are, and how far apart an error within the NMSE
// bound could push two logits: each may move by the root of bound · mean(l²).
struct top_two {
    int32_t best = 0, second = 0;
    double margin = 0.0, allowed = 0.0;
};

top_two margin_of(std::span<const float> row) {
    top_two m;
    double sum_squares = 0.0;
    for (std::size_t i = 0; i < row.size(); ++i) sum_squares += double(row[i]) * double(row[i]);
    m.best = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
    m.second = m.best == 0 ? 1 : 0;
    for (std::size_t i = 0; i < row.size(); ++i)
        if (int32_t(i) != m.best && row[i] > row[std::size_t(m.second)]) m.second = int32_t(i);
    m.margin = double(row[std::size_t(m.best)]) - double(row[std::size_t(m.second)]);
    m.allowed = 2.0 * std::sqrt(nmse_bound * sum_squares / double(row.size()));
    return m;
}

// The logits a model on backend B gives for the token after `sequence`.
template <class B>
std::vector<float> logits_after(B& b, const std::shared_ptr<const gguf::file>& file, const std::vector<int32_t>& sequence,
                                int32_t n_ctx) {
    model::llama_model<B> m(b, file, {.n_ctx = n_ctx, .max_batch = 8});
    std::vector<float> rows(sequence.size() * std::size_t(m.vocab_size()));
    m.eval(sequence, 0, rows);
    return std::vector<float>(rows.end() - m.vocab_size(), rows.end());
}

double nmse_of(const std::vector<float>& ref, const std::vector<float>& got) {
    return testing::nmse(got.data(), ref.data(), int64_t(ref.size()));
}

}  // namespace

TEST_CASE("every node of the llama graph agrees with the CPU backend within the mmvq NMSE bound, q8_0 and q4_K") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    struct variant {
        qtype weights, kv;
    };
    for (const variant v : {variant{qtype::q8_0, qtype::f32}, variant{qtype::q4_K, qtype::f32}, variant{qtype::q8_0, qtype::f16}}) {
        CAPTURE(std::string(name(v.weights)));
        CAPTURE(std::string(name(v.kv)));
        const auto file = test::small_model_file(v.weights);
        const model::llama_weights w = model::load_llama_weights(*file);
        const model::llama_graph built = model::build_llama_graph(w, 16, 8, v.kv);
        cpu::backend cpu_backend;
        vulkan::backend vk_backend(ctx);
        graph::executor<cpu::backend> cpu(cpu_backend, built.g, {.reuse_memory = false});
        graph::executor<vulkan::backend> vk(vk_backend, built.g, {.reuse_memory = false});
        // A prompt of 8 in one batch, then 3 more tokens one at a time over the cache it left.
        for (const auto& [first, n] : {std::pair<int32_t, int64_t>{0, 8}, {8, 1}, {9, 1}, {10, 1}}) {
            CAPTURE(first);
            const std::vector<int32_t> tokens(prompt.begin() + first, prompt.begin() + first + n);
            const std::vector<int32_t> positions = iota_positions(first, std::size_t(n));
            cpu.write(built.tokens, std::span<const int32_t>(tokens));
            cpu.write(built.positions, std::span<const int32_t>(positions));
            vk.write(built.tokens, std::span<const int32_t>(tokens));
            vk.write(built.positions, std::span<const int32_t>(positions));
            cpu.run(n);
            vk.run(n);
            double worst = 0.0;
            std::string worst_name;
            for (const auto& d : graph::compare_nodes(cpu, vk, n)) {
                CAPTURE(d.name);
                CHECK(d.nmse <= nmse_bound);
                if (d.nmse > worst) {
                    worst = d.nmse;
                    worst_name = d.name;
                }
                if (d.mismatch > 0.0) {
                    // The argmax may differ only where the reference's top two are within the bound.
                    std::vector<float> logits(std::size_t(n) * std::size_t(w.hparams.n_vocab));
                    cpu.read(built.logits, std::span<float>(logits));
                    for (int64_t t = 0; t < n; ++t) {
                        const top_two m = margin_of(std::span<const float>(logits).subspan(
                            std::size_t(t) * std::size_t(w.hparams.n_vocab), std::size_t(w.hparams.n_vocab)));
                        MESSAGE("argmax of token " << t << " differs; reference margin " << m.margin << ", allowed "
                                                   << m.allowed);
                        CHECK(m.margin <= m.allowed);
                    }
                }
            }
            MESSAGE(std::string(name(v.weights)) << " weights, " << std::string(name(v.kv)) << " cache, tokens from " << first
                                    << ": largest node NMSE " << worst << " (" << worst_name << ")");
        }
    }
}

TEST_CASE("greedy decoding of 64 tokens gives the CPU backend's tokens, up to a near tie of the reference") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    constexpr int32_t n_ctx = 96, steps = 64;
    for (qtype t : {qtype::q8_0, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        const auto file = test::small_model_file(t);
        cpu::backend cpu_backend;
        vulkan::backend vk_backend(ctx);
        cpu_model cm(cpu_backend, file, {.n_ctx = n_ctx, .max_batch = 8});
        vk_model vm(vk_backend, file, {.n_ctx = n_ctx, .max_batch = 8});
        const auto expected = model::generate_greedy(cm, prompt, steps);
        const auto got = model::generate_greedy(vm, prompt, steps);
        REQUIRE(got.size() == expected.size());
        std::size_t i = 0;
        while (i < got.size() && got[i] == expected[i]) ++i;
        if (i == got.size()) {
            MESSAGE(std::string(name(t)) << ": the " << steps << " greedy tokens equal the CPU backend's");
            continue;
        }
        std::vector<int32_t> sequence(prompt);
        sequence.insert(sequence.end(), expected.begin(), expected.begin() + std::ptrdiff_t(i));
        const std::vector<float> ref = logits_after(cpu_backend, file, sequence, n_ctx);
        const std::vector<float> mine = logits_after(vk_backend, file, sequence, n_ctx);
        const top_two m = margin_of(ref);
        MESSAGE(std::string(name(t)) << ": first divergence at step " << i << " (CPU " << expected[i] << ", Vulkan " << got[i]
                        << "); the reference's top two logits are " << m.margin << " apart, the NMSE bound allows "
                        << m.allowed << "; the Vulkan logits there are at NMSE " << nmse_of(ref, mine));
        CHECK(nmse_of(ref, mine) <= nmse_bound);
        CHECK(m.best == expected[i]);
        CHECK(m.margin <= m.allowed);
    }
}

TEST_CASE("greedy generation on Vulkan gives the same tokens on every run and after a save and restore") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::backend b(ctx);
    test::check_greedy_reproducible(b, prompt);
}

TEST_CASE("eval_greedy on Vulkan gives the argmax and top probability of the logits eval gives, without them") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::backend b(ctx);
    test::check_eval_greedy(b, prompt, 1e-5);  // the device's sum runs in another order than the host's
}

TEST_CASE("eval_top on Vulkan gives each row's top candidates of the logits eval gives, without the rows") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::backend b(ctx);
    test::check_eval_top(b, prompt);
}

TEST_CASE("a batch forward on Vulkan gives every token the bits of token-by-token forwards, past 8 tokens too") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::backend b(ctx);
    const auto file = test::small_model_file(qtype::q8_0);
    vk_model batched(b, file, {.n_ctx = 32, .max_batch = 12});
    vk_model single(b, file, {.n_ctx = 32, .max_batch = 12});
    const auto logits = batched.forward(prompt, iota_positions(0, prompt.size()));
    const std::vector<float> batch_logits(logits.begin(), logits.end());
    CHECK(same_bits(batch_logits, one_by_one(single, prompt)));
    // And the next tokens, batched over the cache the batch wrote.
    const auto more = batched.forward(std::vector<int32_t>{7, 8}, iota_positions(int32_t(prompt.size()), 2));
    const std::vector<float> more_logits(more.begin(), more.end());
    CHECK(same_bits(more_logits, one_by_one(single, {7, 8})));
}

TEST_CASE("restoring a saved state on Vulkan reproduces the next logits bit for bit, f32 and f16 caches") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (qtype kv : {qtype::f32, qtype::f16}) {
        CAPTURE(std::string(name(kv)));
        vulkan::backend b(ctx);
        vk_model m(b, test::small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 4, .kv_type = kv});
        one_by_one(m, std::vector<int32_t>(prompt.begin(), prompt.begin() + 6));
        const model::llama_state saved = m.save_state();
        const auto next = one_by_one(m, {prompt[6]});
        one_by_one(m, {3, 4, 5});
        m.truncate(1);
        one_by_one(m, {9, 9, 9, 9, 9, 9, 9});
        m.restore_state(saved);
        CHECK(m.cache_length() == 6);
        CHECK(same_bits(one_by_one(m, {prompt[6]}), next));

        vk_model fresh(b, test::small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 4, .kv_type = kv});
        fresh.restore_state(saved);
        CHECK(same_bits(one_by_one(fresh, {prompt[6]}), next));
    }
}

TEST_CASE("a tied-output model on Vulkan reads token_embd for the logits, as the CPU backend does") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    auto shape = test::small_shape(qtype::q8_0);
    shape.tied_output = true;
    const auto file = test::model_file(shape, qtype::q8_0);
    cpu::backend cpu_backend;
    vulkan::backend vk_backend(ctx);
    cpu_model cm(cpu_backend, file, {.n_ctx = 16});
    vk_model vm(vk_backend, file, {.n_ctx = 16});
    CHECK(vm.weights().tied_output);
    const std::vector<int32_t> tokens{4, 250, 17};
    const auto ref = cm.forward(tokens, iota_positions(0, 3));
    const std::vector<float> ref_logits(ref.begin(), ref.end());
    const auto got = vm.forward(tokens, iota_positions(0, 3));
    std::vector<double> ref_d(ref_logits.begin(), ref_logits.end());
    CHECK(test::nmse(got.data(), ref_d.data(), ref_d.size()) < nmse_bound);
}
