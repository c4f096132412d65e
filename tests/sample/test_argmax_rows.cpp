// Greedy decoding from argmax ids: a model that finds each row's argmax (and top probability)
// itself (greedy_model) gives the generator and the model drafter what its logits would, and no
// logit row is handed out while the sampler chain picks the argmax.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "llmrt/sample/sample.hpp"
#include "llmrt/testing/model_doubles.hpp"

using namespace llmrt::sample;
using namespace llmrt::sample::testing;

namespace {

constexpr int32_t vocab_size = 64;
const std::vector<int32_t> prompt{3, 14, 15, 9, 26, 5};

function_model target_of(int32_t eos = -1) { return hashed_target(vocab_size, eos); }
function_model draft_of(int32_t eos = -1) { return hashed_draft(vocab_size, 1.5f, eos); }  // it mostly agrees

draft_policy policy_with(float p_min) {
    draft_policy p;
    p.p_min = p_min;
    p.fallback.enabled = false;  // no timing: the two runs must take the same steps
    p.adaptive.cost_aware = false;
    return p;
}

struct run_result {
    std::vector<int32_t> tokens;
    speculative_stats stats;
};

template <class Target, class Draft>
run_result speculate(Target& target, Draft& draft, const sampling_params& params, float p_min, int32_t n = 200) {
    generator<Target> g(target, sampler_chain(params), policy_with(p_min));
    g.add_drafter(std::make_unique<model_drafter<Draft>>(draft, sampler_chain(sampling_params::greedy())));
    run_result r{g.generate(prompt, n).tokens, g.stats()};
    return r;
}

}  // namespace

TEST_CASE("a sampler chain picks the argmax when it ends in greedy after stages that keep the largest logit") {
    CHECK(sampler_chain(sampling_params::greedy()).picks_argmax());
    sampling_params p = sampling_params::greedy();
    p.repeat_penalty = 1.3f;
    CHECK_FALSE(sampler_chain(p).picks_argmax());  // a penalty can lower the largest logit
    p = sampling_params::greedy();
    p.typical_p = 0.9f;
    CHECK_FALSE(sampler_chain(p).picks_argmax());  // typical sampling can drop the likeliest token
    CHECK_FALSE(sampler_chain(sampling_params{}).picks_argmax());  // sampling at temperature 0.8
}

TEST_CASE("verify_argmax emits what verify_draft emits from the rows, for right, wrong and stopping drafts") {
    function_model target = target_of();
    sampler_chain chain(sampling_params::greedy());
    std::vector<int32_t> history(prompt);
    for (int32_t trial = 0; trial < 200; ++trial) {
        CAPTURE(trial);
        // A draft of 1..6 tokens: the target's own greedy continuation, made wrong from position `wrong`.
        const int32_t n = 1 + trial % 6, wrong = trial % 7;
        draft d;
        std::vector<int32_t> seq(history), ids;
        std::vector<float> rows;
        for (int32_t i = 0; i <= n; ++i) {
            const std::vector<float> row = target.logits_after(seq);
            rows.insert(rows.end(), row.begin(), row.end());
            ids.push_back(int32_t(std::max_element(row.begin(), row.end()) - row.begin()));
            if (i == n) break;
            const int32_t x = i >= wrong ? (ids.back() + 1 + trial) % vocab_size : ids.back();
            d.tokens.push_back(x);
            seq.push_back(x);
        }
        const int32_t stop = trial % 3 == 0 ? ids[std::size_t(trial % (n + 1))] : -1;
        sampler_chain a = chain, b = chain;
        const verify_result from_rows = verify_draft(d, rows, vocab_size, a, verification::automatic, stop);
        const verify_result from_ids = verify_argmax(d, ids, b, stop);
        CHECK(from_ids.accepted == from_rows.accepted);
        CHECK(from_ids.emitted == from_rows.emitted);
        CHECK(std::vector<int32_t>(b.history().begin(), b.history().end()) ==
              std::vector<int32_t>(a.history().begin(), a.history().end()));
        history.push_back(ids[0]);
    }
    draft d;
    d.tokens = {1, 2};
    sampler_chain sampling{sampling_params{}};
    CHECK_THROWS_AS(verify_argmax(d, std::vector<int32_t>{1, 2, 3}, sampling), llmrt::error);  // the chain samples
    CHECK_THROWS_AS(verify_argmax(d, std::vector<int32_t>{1, 2}, chain), llmrt::error);        // n ids for n tokens
}

TEST_CASE("a target and a draft that find the argmax themselves give the logits' tokens and statistics, and hand out no logit rows") {
    for (int32_t eos : {-1, 7}) {
        int64_t drafted_without_threshold = 0;
        for (float p_min : {0.0f, 0.15f, 0.3f}) {
            CAPTURE(p_min);
            CAPTURE(eos);
            function_model target = target_of(eos), draft = draft_of(eos);
            const run_result from_rows = speculate(target, draft, sampling_params::greedy(), p_min);
            argmax_model fast_target(target_of(eos)), fast_draft(draft_of(eos));
            const run_result from_ids = speculate(fast_target, fast_draft, sampling_params::greedy(), p_min);
            CHECK(from_ids.tokens == from_rows.tokens);
            CHECK(from_ids.stats.rounds == from_rows.stats.rounds);
            CHECK(from_ids.stats.drafted == from_rows.stats.drafted);
            CHECK(from_ids.stats.accepted == from_rows.stats.accepted);
            CHECK(from_ids.stats.drafted_at == from_rows.stats.drafted_at);
            CHECK(fast_target.logit_rows == 0);
            CHECK(fast_draft.logit_rows == 0);
            CHECK(fast_target.argmax_rows > 0);
            CHECK(fast_draft.argmax_rows > 0);
            CHECK(from_rows.stats.drafted > 0);
            if (p_min == 0.0f) drafted_without_threshold = from_rows.stats.drafted;
            else CHECK(from_rows.stats.drafted < drafted_without_threshold);  // the threshold stopped drafts
        }
    }
}

TEST_CASE("plain greedy decoding of a model that finds the argmax itself reads no logit rows") {
    function_model slow = target_of();
    argmax_model fast(target_of());
    generator<function_model> a(slow, sampler_chain(sampling_params::greedy()));
    generator<argmax_model> b(fast, sampler_chain(sampling_params::greedy()));
    CHECK(b.generate(prompt, 64).tokens == a.generate(prompt, 64).tokens);
    CHECK(fast.logit_rows == 0);
    CHECK(fast.argmax_rows == 64);
}

TEST_CASE("a chain with penalties reads the target's logits, even from a model that finds the argmax") {
    sampling_params p = sampling_params::greedy();
    p.repeat_penalty = 1.5f;
    function_model target = target_of(), draft = draft_of();
    argmax_model fast_target(target_of()), fast_draft(draft_of());
    const run_result from_rows = speculate(target, draft, p, 0.0f, 64);
    const run_result mixed = speculate(fast_target, fast_draft, p, 0.0f, 64);
    CHECK(mixed.tokens == from_rows.tokens);
    CHECK(fast_target.logit_rows > 0);
    CHECK(fast_target.argmax_rows == 0);
    CHECK(fast_draft.logit_rows == 0);  // the draft's own chain is greedy: it still drafts from ids
}

TEST_CASE("a draft model without top probabilities drafts from its logits when p_min is set, from ids when not") {
    for (float p_min : {0.0f, 0.5f}) {
        CAPTURE(p_min);
        argmax_model target(target_of()), draft(draft_of(), false);
        function_model slow_target = target_of(), slow_draft = draft_of();
        const run_result r = speculate(target, draft, sampling_params::greedy(), p_min, 64);
        CHECK(r.tokens == speculate(slow_target, slow_draft, sampling_params::greedy(), p_min, 64).tokens);
        CHECK((draft.logit_rows > 0) == (p_min > 0.0f));
        CHECK((draft.argmax_rows > 0) == (p_min == 0.0f));
    }
}
