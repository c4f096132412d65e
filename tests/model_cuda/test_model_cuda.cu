// The llama model on the CUDA backend against the CPU backend (its reference: Q8_1-rounded
// activations for quantized weights, as mmvq computes): node by node within mmvq's NMSE bound,
// greedy tokens over 64 steps, determinism, save/restore, batch invariance and allocations.
// Every case skips, passing with a message, on a machine without a CUDA device.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <llmrt/cuda/backend.cuh>
#include <llmrt/graph/compare.hpp>
#include <llmrt/testing/measures.hpp>

#include "../model/eval_greedy_check.hpp"
#include "../model/forward_allocations.hpp"
#include "../model/model_fixtures.hpp"

using namespace llmrt;
using cpu_model = model::llama_model<cpu::backend>;
using cuda_model = model::llama_model<cuda::backend>;

static_assert(sample::causal_model<cuda_model>, "llama_model<cuda::backend> must satisfy the sampler's causal_model");

namespace {

constexpr double mmvq_nmse_bound = 5e-4;

#define LLMRT_NEEDS_CUDA_DEVICE()                                                    \
    do {                                                                             \
        if (!cuda::backend::device_present()) {                                      \
            MESSAGE("skipped: no CUDA device on this machine (cudaGetDeviceCount)"); \
            return;                                                                  \
        }                                                                            \
    } while (0)

const std::vector<int32_t>& prompt = test::model_prompt;
using test::iota_positions;
using test::same_bits;


double nmse(std::span<const float> out, std::span<const float> ref) {
    return testing::nmse(out.data(), ref.data(), int64_t(ref.size()));
}

// The gap between the largest and the second largest logit.
double top_two_margin(std::span<const float> logits) {
    float first = -INFINITY, second = -INFINITY;
    for (float v : logits) {
        if (v > first) {
            second = first;
            first = v;
        } else if (v > second) {
            second = v;
        }
    }
    return double(first) - double(second);
}

// The largest gap between two logits that an error within the NMSE bound can close: moving the
// top two towards each other by g/2 each costs g²/2 of squared error, at most bound · Σ l².
double closable_margin(std::span<const float> logits) {
    double sum = 0.0;
    for (float v : logits) sum += double(v) * v;
    return std::sqrt(2.0 * mmvq_nmse_bound * sum);
}

// Every type of llmrt::weight_types.
const std::vector<qtype> all_weight_types = [] {
    std::vector<qtype> types;
    weight_types::for_each([&](auto tag) { types.push_back(decltype(tag)::type::id); });
    return types;
}();

}  // namespace

TEST_CASE("every node of a small llama agrees with the CPU backend within mmvq's NMSE bound, for every weight type") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (qtype t : all_weight_types) {
        CAPTURE(std::string(name(t)));
        const auto file = test::small_model_file(t);
        const auto weights = model::load_llama_weights(*file);
        const auto built = model::build_llama_graph(weights, 32, 8, qtype::f16);
        cpu::backend cpu_backend;
        cuda::backend gpu_backend;
        graph::executor<cpu::backend> cpu(cpu_backend, built.g, {.reuse_memory = false});
        graph::executor<cuda::backend> gpu(gpu_backend, built.g, {.reuse_memory = false});
        double worst = 0.0;
        std::string worst_node;
        // A prompt of 6 tokens, then one more token that reads the cache the first run wrote.
        for (const auto& [tokens, from] : {std::pair{std::vector<int32_t>(prompt.begin(), prompt.begin() + 6), 0},
                                           std::pair{std::vector<int32_t>{prompt[6]}, 6}}) {
            const auto n = int64_t(tokens.size());
            const auto positions = iota_positions(from, tokens.size());
            cpu.write(built.tokens, std::span<const int32_t>(tokens));
            cpu.write(built.positions, std::span<const int32_t>(positions));
            gpu.write(built.tokens, std::span<const int32_t>(tokens));
            gpu.write(built.positions, std::span<const int32_t>(positions));
            cpu.run(n);
            gpu.run(n);
            for (const auto& d : graph::compare_nodes(cpu, gpu, n)) {
                if (d.type == graph::i32_type) continue;  // the argmax: the greedy test below judges tokens
                INFO("node ", d.name, " (", graph::to_string(d.op), "), batch ", n, ": nmse ", d.nmse, ", max |diff| ",
                     d.max_abs);
                CHECK(d.nmse <= mmvq_nmse_bound);
                if (d.nmse > worst) worst = d.nmse, worst_node = d.name;
            }
        }
        MESSAGE(name(t), ": largest node NMSE against the CPU backend ", worst, " at ", worst_node);
    }
}

TEST_CASE("greedy decoding for 64 steps gives the CPU backend's tokens, except after a top-two near tie") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (qtype t : all_weight_types) {
        CAPTURE(std::string(name(t)));
        const auto file = test::small_model_file(t);
        cpu::backend cpu_backend;
        cuda::backend gpu_backend;
        cpu_model ref(cpu_backend, file, {.n_ctx = 128, .max_batch = 8});
        cuda_model gpu(gpu_backend, file, {.n_ctx = 128, .max_batch = 8});
        const std::vector<int32_t> start(prompt.begin(), prompt.begin() + 5);
        auto ref_logits = ref.forward(start, iota_positions(0, start.size()));
        auto gpu_logits = gpu.forward(start, iota_positions(0, start.size()));
        const std::size_t v = std::size_t(ref.vocab_size());
        double worst = 0.0;
        int agreed = 0;
        for (int step = 0; step < 64; ++step) {
            const auto r = ref_logits.last(v), g = gpu_logits.last(v);
            worst = std::max(worst, nmse(g, r));
            CHECK(nmse(g, r) <= mmvq_nmse_bound);
            const int32_t ref_next = ref.greedy().back(), gpu_next = gpu.greedy().back();
            if (ref_next != gpu_next) {
                const double margin = top_two_margin(r), allowed = closable_margin(r);
                MESSAGE(name(t), ": step ", step, " differs (cpu ", ref_next, ", cuda ", gpu_next,
                        "); the CPU's top-two margin ", margin, " vs ", allowed,
                        " that an error within the NMSE bound can close");
                CHECK(margin <= allowed);
                break;
            }
            ++agreed;
            const int32_t pos = ref.cache_length();
            ref_logits = ref.forward(std::span<const int32_t>(&ref_next, 1), std::span<const int32_t>(&pos, 1));
            gpu_logits = gpu.forward(std::span<const int32_t>(&gpu_next, 1), std::span<const int32_t>(&pos, 1));
        }
        MESSAGE(name(t), ": ", agreed, " of 64 greedy steps agree with the CPU backend; largest logits NMSE ", worst);
    }
}

TEST_CASE("eval_greedy on CUDA gives the argmax and top probability of the logits eval gives, without them") {
    LLMRT_NEEDS_CUDA_DEVICE();
    cuda::backend b;
    test::check_eval_greedy(b, prompt, 1e-5);  // the device's sum runs in another order than the host's
}

TEST_CASE("eval_top on CUDA gives each row's top candidates of the logits eval gives, without the rows") {
    LLMRT_NEEDS_CUDA_DEVICE();
    cuda::backend b;
    test::check_eval_top(b, prompt);
}

TEST_CASE("the CUDA model gives the same tokens and logits on every run and after save and restore") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (qtype t : {qtype::q8_0, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        const auto file = test::small_model_file(t);
        cuda::backend b;
        cuda_model m(b, file, {.n_ctx = 128, .max_batch = 8});
        const auto first = model::generate_greedy(m, prompt, 40);
        m.truncate(0);
        CHECK(model::generate_greedy(m, prompt, 40) == first);
        cuda_model fresh(b, file, {.n_ctx = 128, .max_batch = 8});
        CHECK(model::generate_greedy(fresh, prompt, 40) == first);

        // Save after the prompt, continue, write over the cache, restore, continue again.
        m.truncate(0);
        m.eval(prompt, 0, {});
        const auto saved = m.save_state();
        const int32_t next = m.greedy().back(), p = m.cache_length();
        const auto l = m.forward(std::span<const int32_t>(&next, 1), std::span<const int32_t>(&p, 1));
        const std::vector<float> before(l.begin(), l.end());
        m.truncate(p);
        const auto continued = model::generate_greedy(m, std::span<const int32_t>(&next, 1), 20);
        for (int i = 0; i < 30; ++i) {
            const int32_t tok = 7 + i, pos = m.cache_length();
            m.forward(std::span<const int32_t>(&tok, 1), std::span<const int32_t>(&pos, 1));
        }
        m.restore_state(saved);
        CHECK(m.cache_length() == p);
        CHECK(same_bits(before, m.forward(std::span<const int32_t>(&next, 1), std::span<const int32_t>(&p, 1))));
        m.truncate(p);
        CHECK(model::generate_greedy(m, std::span<const int32_t>(&next, 1), 20) == continued);
    }
}

TEST_CASE("a batch forward on the CUDA backend gives every token the bits of token-by-token forwards") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (qtype t : {qtype::q8_0, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        cuda::backend b;
        cuda_model batched(b, test::small_model_file(t), {.n_ctx = 32, .max_batch = 8});
        cuda_model single(b, test::small_model_file(t), {.n_ctx = 32, .max_batch = 8});
        std::vector<float> batch_logits, single_logits;
        const std::vector<int32_t> first(prompt.begin(), prompt.begin() + 3), second(prompt.begin() + 3, prompt.end());
        for (const auto* part : {&first, &second}) {
            const auto l = batched.forward(*part, iota_positions(batched.cache_length(), part->size()));
            batch_logits.insert(batch_logits.end(), l.begin(), l.end());
        }
        for (int32_t tok : prompt) {
            const int32_t pos = single.cache_length();
            const auto l = single.forward(std::span<const int32_t>(&tok, 1), std::span<const int32_t>(&pos, 1));
            single_logits.insert(single_logits.end(), l.begin(), l.end());
        }
        CHECK(same_bits(batch_logits, single_logits));
    }
}

TEST_CASE("CUDA model forward calls allocate nothing, batched or single, after truncate and restore") {
    LLMRT_NEEDS_CUDA_DEVICE();
    cuda::backend b;
    test::check_forward_allocates_nothing(b);
}

TEST_CASE("CUDA model forward calls allocate no device memory once the model is prepared") {
    LLMRT_NEEDS_CUDA_DEVICE();
    cuda::backend b;
    cuda_model m(b, test::small_model_file(qtype::q4_K), {.n_ctx = 64, .max_batch = 8});
    auto free_bytes = [] {
        std::size_t free = 0, total = 0;
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
        return free;
    };
    m.forward(std::span<const int32_t>(prompt).first(8), iota_positions(0, 8));  // one run of each kind first
    model::generate_greedy(m, std::span<const int32_t>(prompt).first(1), 4);
    m.truncate(0);
    const std::size_t before = free_bytes();
    for (int round = 0; round < 3; ++round) {
        m.forward(std::span<const int32_t>(prompt).first(5), iota_positions(0, 5));
        model::generate_greedy(m, std::span<const int32_t>(prompt).first(1), 20);
        const auto saved = m.save_state();
        m.restore_state(saved);
        m.truncate(0);
    }
    CHECK(free_bytes() == before);
}
