// One check shared by every backend's model tests: eval_greedy's ids are the argmax of the rows
// eval gives on the same backend, and its top probabilities softmax's value there, in chunks of
// max_batch, the outputs poisoned first.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "model_fixtures.hpp"

namespace llmrt::test {

// tolerance: the largest relative difference allowed between a top probability and the softmax
// of the logits computed on the host (0: the same bits, as the CPU backend gives).
template <class Backend>
void check_eval_greedy(Backend& b, const std::vector<int32_t>& prompt, double tolerance) {
    using model_type = model::llama_model<Backend>;
    model_type rows(b, small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 3});
    model_type ids(b, small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 3, .top_probability = true});
    CHECK(ids.has_top_probability());
    CHECK_FALSE(rows.has_top_probability());
    const std::size_t v = std::size_t(rows.vocab_size()), n = prompt.size();
    std::vector<float> logits(n * v), top(n, NAN);
    std::vector<int32_t> best(n, -1);
    rows.eval(prompt, 0, logits);
    ids.eval_greedy(prompt, 0, best, top);
    CHECK(ids.cache_length() == int32_t(n));
    for (std::size_t t = 0; t < n; ++t) {
        CAPTURE(t);
        const std::span<const float> row = std::span<const float>(logits).subspan(t * v, v);
        std::vector<float> soft(v);
        cpu::softmax(row.data(), soft.data(), int64_t(v), 1);
        const std::size_t argmax = std::size_t(std::max_element(row.begin(), row.end()) - row.begin());
        CHECK(best[t] == int32_t(argmax));
        if (tolerance == 0.0) CHECK(top[t] == soft[argmax]);
        else CHECK(std::fabs(double(top[t]) - double(soft[argmax])) <= tolerance * double(soft[argmax]));
    }
    // Ids alone, from a model without top probabilities; and the refusals, which change nothing.
    rows.truncate(0);
    std::vector<int32_t> again(n, -1);
    rows.eval_greedy(prompt, 0, again, {});
    CHECK(again == best);
    rows.truncate(0);
    CHECK_THROWS_AS(rows.eval_greedy(prompt, 0, again, top), llmrt::error);  // no top probabilities built
    CHECK(rows.cache_length() == 0);
    CHECK_THROWS_AS(ids.eval_greedy(prompt, 0, again, top), llmrt::error);  // not at the cache's end
    CHECK_THROWS_AS(ids.eval_greedy(std::span<const int32_t>(prompt).first(2), ids.cache_length(),
                                    std::span<int32_t>(again).first(1), {}),
                    llmrt::error);  // one id per token
}

// eval_top's candidates are the graph's top_k of the rows eval gives on the same backend, with
// those rows' logits, in chunks of max_batch, the outputs poisoned first; more candidates than
// the vocabulary holds are the whole vocabulary in order.
template <class Backend>
void check_eval_top(Backend& b, const std::vector<int32_t>& prompt) {
    using model_type = model::llama_model<Backend>;
    model_type rows(b, small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 3});
    const std::size_t v = std::size_t(rows.vocab_size()), n = prompt.size();
    std::vector<float> logits(n * v);
    rows.eval(prompt, 0, logits);
    CHECK(rows.top_candidates() == 0);
    for (int32_t k : {40, 1, int32_t(v) + 5}) {
        CAPTURE(k);
        model_type top(b, small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 3, .top_candidates = k});
        const std::size_t kept = std::min(std::size_t(k), v);
        REQUIRE(top.top_candidates() == int32_t(kept));
        std::vector<int32_t> ids(n * kept, -1);
        std::vector<float> values(n * kept, NAN);
        top.eval_top(prompt, 0, ids, values);
        CHECK(top.cache_length() == int32_t(n));
        std::vector<int32_t> expected(n * kept);
        cpu::top_k(logits.data(), expected.data(), int64_t(v), int64_t(kept), int64_t(n));
        CHECK(ids == expected);
        bool same_logits = true;
        for (std::size_t i = 0; i < ids.size(); ++i)
            same_logits = same_logits && ids[i] >= 0 && std::size_t(ids[i]) < v &&
                          std::memcmp(&values[i], &logits[(i / kept) * v + std::size_t(ids[i])], sizeof(float)) == 0;
        CHECK(same_logits);
        CHECK_THROWS_AS(top.eval_top(prompt, 0, ids, values), llmrt::error);  // not at the cache's end
        top.truncate(0);
        CHECK_THROWS_AS(top.eval_top(prompt, 0, std::span<int32_t>(ids).first(kept), values), llmrt::error);  // k per token
        CHECK(top.cache_length() == 0);
    }
    // With top probabilities built too, eval_top gives each token's as eval_greedy does.
    model_type greedy(b, small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 3, .top_probability = true});
    std::vector<int32_t> argmax_ids(n);
    std::vector<float> expected_top(n);
    greedy.eval_greedy(prompt, 0, argmax_ids, expected_top);
    model_type both(b, small_model_file(qtype::q8_0),
                    {.n_ctx = 32, .max_batch = 3, .top_probability = true, .top_candidates = 8});
    std::vector<int32_t> ids(n * 8, -1);
    std::vector<float> values(n * 8, NAN), top(n, NAN);
    both.eval_top(prompt, 0, ids, values, top);
    CHECK(std::memcmp(top.data(), expected_top.data(), n * sizeof(float)) == 0);
    both.truncate(0);
    CHECK_THROWS_AS(both.eval_top(prompt, 0, ids, values, std::span<float>(top).first(1)), llmrt::error);  // one per token
    std::vector<int32_t> none(n);
    std::vector<float> none_logits(n);
    CHECK_THROWS_AS(rows.eval_top(prompt, rows.cache_length(), none, none_logits), llmrt::error);  // none built
    model_type no_top(b, small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 3, .top_candidates = 8});
    CHECK_THROWS_AS(no_top.eval_top(prompt, 0, ids, values, top), llmrt::error);  // no top probabilities built
    CHECK_THROWS_AS((model_type(b, small_model_file(qtype::q8_0), {.n_ctx = 32, .top_candidates = -1})), llmrt::error);
}

}  // namespace llmrt::test
