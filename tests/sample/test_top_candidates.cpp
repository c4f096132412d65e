// Sampling from a model's top candidates: a model that picks each row's k best logits itself
// (top_k_model, as llama_model does on its device) gives a chain that starts with top-k exactly
// the distribution, and the generator exactly the tokens, that the whole rows give, while no row
// of logits travels.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "llmrt/cpu/ops.hpp"
#include "llmrt/sample/sample.hpp"
#include "llmrt/testing/generate.hpp"
#include "llmrt/testing/model_doubles.hpp"

using namespace llmrt::sample;
using namespace llmrt::sample::testing;

namespace {

constexpr int32_t vocab_size = 300;
const std::vector<int32_t> prompt{3, 14, 15, 9, 26, 5};

// Row's top k as the graph's top_k picks them, and their logits.
struct candidates {
    std::vector<int32_t> ids;
    std::vector<float> logits;
};
candidates top_of(const std::vector<float>& row, int64_t k) {
    candidates c{std::vector<int32_t>(std::size_t(k)), {}};
    llmrt::cpu::top_k(row.data(), c.ids.data(), int64_t(row.size()), k, 1);
    for (int32_t id : c.ids) c.logits.push_back(row[std::size_t(id)]);
    return c;
}

sampling_params sampled(int32_t top_k, float temperature = 0.8f) {
    sampling_params p;
    p.top_k = top_k;
    p.temperature = temperature;
    p.seed = 11;
    return p;
}

draft_policy exact_policy() {
    draft_policy p;
    p.fallback.enabled = false;  // no timing: runs that must take the same steps
    p.adaptive.cost_aware = false;
    return p;
}

template <class Target>
std::vector<int32_t> decode(Target& target, const sampling_params& params, bool with_draft, float draft_temperature = 0.0f) {
    generator<Target> g(target, sampler_chain(params), exact_policy());
    function_model draft = hashed_draft(vocab_size, 1.0f);
    sampling_params dp = sampling_params::greedy();
    if (draft_temperature > 0.0f) {
        dp = sampled(40, draft_temperature);
        dp.seed = 5;
    }
    if (with_draft) g.add_drafter(std::make_unique<model_drafter<function_model>>(draft, sampler_chain(dp, rng_stream::draft_sample)));
    return g.generate(prompt, 120).tokens;
}

// Speculative sampling whose draft model is `draft`, its chain top-k 40 at temperature 0.7, with
// the policy's p_min threshold at p_min.
template <class Draft>
std::vector<int32_t> decode_with_draft(Draft& draft, float p_min) {
    function_model target = hashed_target(vocab_size);
    draft_policy policy = exact_policy();
    policy.p_min = p_min;
    generator<function_model> g(target, sampler_chain(sampled(40)), policy);
    sampling_params dp = sampled(40, 0.7f);
    dp.seed = 5;
    g.add_drafter(std::make_unique<model_drafter<Draft>>(draft, sampler_chain(dp, rng_stream::draft_sample)));
    return g.generate(prompt, 120).tokens;
}

}  // namespace

TEST_CASE("a chain that starts with top-k gives the same distribution from a row's top candidates as from the row") {
    const auto values = llmrt::testing::gaussian(vocab_size * 8, 3);
    for (int row_index = 0; row_index < 8; ++row_index) {
        std::vector<float> row(values.begin() + row_index * vocab_size, values.begin() + (row_index + 1) * vocab_size);
        if (row_index % 2) for (float& v : row) v = std::round(v * 2.0f) / 2.0f;  // ties broken by id
        if (row_index == 3) for (int i = 0; i < vocab_size; i += 3) row[std::size_t(i)] = -std::numeric_limits<float>::infinity();
        for (const sampling_params& p : {sampled(40), sampled(1), sampled(64, 1.5f), sampled(40, 0.0f)}) {
            CAPTURE(row_index);
            CAPTURE(p.top_k);
            const sampler_chain chain(p);
            REQUIRE(chain.leading_top_k() == p.top_k);
            const token_distribution whole = chain.distribution(row);
            for (int64_t k : {int64_t(p.top_k), int64_t(64)}) {  // exactly k, or more candidates than the chain keeps
                const candidates c = top_of(row, k);
                const token_distribution top = chain.distribution_of_top(c.ids, c.logits);
                REQUIRE(top.size() == whole.size());
                for (std::size_t i = 0; i < top.size(); ++i) {
                    CHECK(top.entries()[i].id == whole.entries()[i].id);
                    CHECK(top.entries()[i].p == whole.entries()[i].p);
                }
                CHECK(chain.sample_top(c.ids, c.logits) == chain.sample(row));
            }
        }
    }
}

TEST_CASE("distribution_of_top refuses candidates out of order, too few of them, or a chain that does not start with top-k") {
    const auto row = llmrt::testing::gaussian(vocab_size, 9);
    const sampler_chain chain(sampled(40));
    candidates c = top_of(row, 40);
    std::swap(c.ids[3], c.ids[4]);
    std::swap(c.logits[3], c.logits[4]);
    CHECK_THROWS_AS(chain.distribution_of_top(c.ids, c.logits), llmrt::error);
    const candidates few = top_of(row, 39);
    CHECK_THROWS_AS(chain.distribution_of_top(few.ids, few.logits), llmrt::error);
    candidates bad = top_of(row, 40);
    bad.logits[0] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_AS(chain.distribution_of_top(bad.ids, bad.logits), llmrt::error);
    const sampler_chain without(sampled(0));
    CHECK(without.leading_top_k() == 0);
    const candidates all = top_of(row, 40);
    CHECK_THROWS_AS(without.distribution_of_top(all.ids, all.logits), llmrt::error);
    sampling_params penalized = sampled(40);
    penalized.repeat_penalty = 1.3f;  // penalties come before top-k: the chain needs whole rows
    CHECK(sampler_chain(penalized).leading_top_k() == 0);
}

TEST_CASE("plain and speculative sampling from a model's top candidates give the tokens its rows give, and read no row") {
    for (bool with_draft : {false, true}) {
        for (float draft_temperature : {0.0f, 0.7f}) {
            if (!with_draft && draft_temperature > 0.0f) continue;
            CAPTURE(with_draft);
            CAPTURE(draft_temperature);
            function_model rows_target = hashed_target(vocab_size);
            top_candidates_model top_target(hashed_target(vocab_size), 64);
            const auto from_rows = decode(rows_target, sampled(40), with_draft, draft_temperature);
            const auto from_top = decode(top_target, sampled(40), with_draft, draft_temperature);
            CHECK(from_top == from_rows);
            CHECK(top_target.logit_rows == 0);
            CHECK(top_target.top_rows >= 120);
        }
    }
}

TEST_CASE("a chain whose top-k the model's candidates cannot serve, or with penalties, reads the rows") {
    sampling_params penalized = sampled(40);
    penalized.repeat_penalty = 1.3f;
    for (const sampling_params& p : {sampled(65), sampled(0), penalized}) {
        CAPTURE(p.top_k);
        function_model rows_target = hashed_target(vocab_size);
        top_candidates_model top_target(hashed_target(vocab_size), 64);
        CHECK(decode(top_target, p, true) == decode(rows_target, p, true));
        CHECK(top_target.top_rows == 0);
        CHECK(top_target.logit_rows > 0);
    }
}

TEST_CASE("a draft model drafts sampled tokens from its top candidates as from its rows, and reads no row") {
    for (float p_min : {0.0f, 0.3f}) {
        CAPTURE(p_min);
        function_model rows_draft = hashed_draft(vocab_size, 1.0f);
        top_candidates_model top_draft(hashed_draft(vocab_size, 1.0f), 64);
        CHECK(decode_with_draft(top_draft, p_min) == decode_with_draft(rows_draft, p_min));
        CHECK(top_draft.logit_rows == 0);
        CHECK(top_draft.top_rows >= 120);
    }
    // Without top probabilities, a p_min threshold needs the rows; with none, the candidates do.
    top_candidates_model no_top(hashed_draft(vocab_size, 1.0f), 64, false);
    function_model rows_draft = hashed_draft(vocab_size, 1.0f);
    CHECK(decode_with_draft(no_top, 0.3f) == decode_with_draft(rows_draft, 0.3f));
    CHECK(no_top.top_rows == 0);
    CHECK(no_top.logit_rows > 0);
}
