// model::tensor_parallel_llama on CPU ranks (comm::local_group): the ranks' models driven in
// lockstep from the caller's thread, against the single model, and what a failing rank or a bad
// argument does to the caller. (The same class on several GPUs: tests/nccl/test_model_tp_cuda.cu.)
// Also llmrt-bench-decode's tensor-parallel forward (bench/decode/forward.hpp), held to the same ids.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include <llmrt/comm/local.hpp>
#include <llmrt/cpu/backend.hpp>
#include <llmrt/cpu/ops.hpp>
#include <llmrt/model/model.hpp>
#include <llmrt/model/tensor_parallel_llama.hpp>

#include "../../bench/decode/forward.hpp"
#include "model_fixtures.hpp"

using namespace llmrt;

namespace {

constexpr model::llama_options base_options{.n_ctx = 32, .max_batch = 8};

cpu::backend_options float_options(comm::communicator* c = nullptr) {
    cpu::backend_options o;
    o.quantized_activations = cpu::activation_format::f32;
    o.communicator = c;
    return o;
}

// A group of `ranks` CPU ranks and the model over it; the group outlives the model.
struct on_cpu_ranks {
    comm::local_group group;
    model::tensor_parallel_llama<cpu::backend> m;

    on_cpu_ranks(int32_t ranks, const std::shared_ptr<const gguf::file>& file, const model::llama_options& options = base_options)
        : group(ranks),
          m(
              ranks, [this](int32_t r) { return std::make_unique<cpu::backend>(float_options(&group.rank(r))); }, file,
              options, [this] { group.cancel(); }) {}
};

}  // namespace

TEST_CASE("tensor_parallel_llama on 2 and 4 CPU ranks gives the single model's greedy ids, every rank the same logits") {
    const auto file = test::model_file(test::tp_shape("llama"), qtype::q8_0, 11);
    cpu::backend single_backend(float_options());
    model::llama_model<cpu::backend> single(single_backend, file, base_options);
    const auto expected = model::generate_greedy(single, std::span<const int32_t>(test::model_prompt), 16);
    for (int32_t ranks : {2, 4}) {
        CAPTURE(ranks);
        on_cpu_ranks tp(ranks, file);
        CHECK(model::generate_greedy(tp.m, std::span<const int32_t>(test::model_prompt), 16) == expected);
        const int32_t token = 7, position = tp.m.cache_length();
        tp.m.forward(std::span<const int32_t>(&token, 1), std::span<const int32_t>(&position, 1));
        for (int32_t r = 1; r < ranks; ++r) CHECK(test::same_bits(tp.m.logits(r), tp.m.logits(0)));
    }
}

TEST_CASE("tensor_parallel_llama gives the argmax ids, top probabilities and top candidates of its logits, as llama_model does") {
    const auto file = test::model_file(test::tp_shape("llama"), qtype::q8_0, 11);
    const std::span<const int32_t> prompt(test::model_prompt);
    model::llama_options reduced = base_options;
    reduced.top_probability = true;
    reduced.top_candidates = 16;
    for (int32_t ranks : {2, 4}) {
        CAPTURE(ranks);
        on_cpu_ranks rows(ranks, file), tp(ranks, file, reduced);
        const std::size_t n = prompt.size(), v = std::size_t(rows.m.vocab_size()), k = 16;
        std::vector<float> logits(n * v);
        rows.m.eval(prompt, 0, logits);
        std::vector<int32_t> argmax(n), ids(n, -1);
        cpu::argmax(logits.data(), argmax.data(), int64_t(v), int64_t(n));
        std::vector<float> top(n, NAN);
        tp.m.eval_greedy(prompt, 0, ids, top);
        CHECK(ids == argmax);
        for (std::size_t i = 0; i < n; ++i) {
            double sum = 0.0;  // softmax at the argmax: 1 / Σ exp(l − max)
            for (std::size_t j = 0; j < v; ++j) sum += std::exp(double(logits[i * v + j]) - double(logits[i * v + std::size_t(argmax[i])]));
            CHECK(double(top[i]) == doctest::Approx(1.0 / sum).epsilon(1e-5));
        }
        tp.m.truncate(0);
        std::vector<int32_t> candidates(n * k, -1), expected(n * k);
        std::vector<float> values(n * k, NAN), top_again(n, NAN);
        tp.m.eval_top(prompt, 0, candidates, values, top_again);
        cpu::top_k(logits.data(), expected.data(), int64_t(v), int64_t(k), int64_t(n));
        CHECK(candidates == expected);
        bool same = true;
        for (std::size_t i = 0; i < candidates.size(); ++i)
            same = same && std::memcmp(&values[i], &logits[(i / k) * v + std::size_t(expected[i])], sizeof(float)) == 0;
        CHECK(same);
        CHECK(std::memcmp(top_again.data(), top.data(), n * sizeof(float)) == 0);
        tp.m.truncate(0);
        CHECK_THROWS_AS(tp.m.eval_top(prompt, 0, std::span<int32_t>(candidates).first(k), values), llmrt::error);
        CHECK_THROWS_AS(rows.m.eval_greedy(prompt, rows.m.cache_length(), ids, top), llmrt::error);  // no probabilities built
        CHECK(tp.m.cache_length() == 0);
    }
}

TEST_CASE("a bad token given to tensor_parallel_llama is an llmrt::error on the caller that leaves the model usable") {
    const auto file = test::model_file(test::tp_shape("llama"), qtype::q8_0, 11);
    on_cpu_ranks tp(2, file);
    const int32_t bad = 100000, position = 0;
    CHECK_THROWS_WITH_AS(tp.m.forward(std::span<const int32_t>(&bad, 1), std::span<const int32_t>(&position, 1)),
                         doctest::Contains("outside the vocabulary"), llmrt::error);
    CHECK_THROWS_WITH_AS(tp.m.truncate(3), doctest::Contains("outside 0..cache length 0"), llmrt::error);
    CHECK(model::generate_greedy(tp.m, std::span<const int32_t>(test::model_prompt), 4).size() == 4);
}

TEST_CASE("a rank whose backend cannot be made fails tensor_parallel_llama with that rank's llmrt::error") {
    const auto file = test::model_file(test::tp_shape("llama"), qtype::q8_0, 11);
    comm::local_group group(2);
    auto make = [&](int32_t r) -> std::unique_ptr<cpu::backend> {
        if (r == 1) throw error(errc::device_error, "rank 1 has no device");
        return std::make_unique<cpu::backend>(float_options(&group.rank(r)));
    };
    CHECK_THROWS_WITH_AS(model::tensor_parallel_llama<cpu::backend>(2, make, file, base_options, [&] { group.cancel(); }),
                         doctest::Contains("rank 1 has no device"), llmrt::error);
}

// The prompt one token at a time, then 8 greedy tokens, through forward.call (bench/decode).
template <class Forward>
std::vector<int32_t> bench_decode(Forward& forward) {
    std::vector<int32_t> ids;
    int32_t next = -1;
    for (std::size_t i = 0; i < test::model_prompt.size(); ++i) {
        const int32_t token = test::model_prompt[i], position = int32_t(i);
        forward.call(&token, &position, 1, &next);
    }
    for (int32_t i = 0; i < 8; ++i) {
        ids.push_back(next);
        const int32_t token = next, position = int32_t(test::model_prompt.size()) + i;
        forward.call(&token, &position, 1, &next);
    }
    return ids;
}

TEST_CASE("llmrt-bench-decode's tensor-parallel forward gives its single forward's ids on 2 and 4 CPU ranks") {
    const auto file = test::model_file(test::tp_shape("llama"), qtype::q8_0, 11);
    const model::llama_weights w = model::load_llama_weights(*file);
    cpu::backend single_backend(float_options());
    llmrt_bench::single_forward<cpu::backend> single(single_backend, w, base_options.n_ctx, true);
    const std::vector<int32_t> expected = bench_decode(single);
    for (int32_t ranks : {2, 4}) {
        CAPTURE(ranks);
        comm::local_group group(ranks);
        llmrt_bench::tensor_parallel_forward<cpu::backend> tp(
            ranks, [&](int32_t r) { return std::make_unique<cpu::backend>(float_options(&group.rank(r))); },
            [&] { group.cancel(); }, w, base_options.n_ctx, true);
        CHECK(bench_decode(tp) == expected);
    }
}
