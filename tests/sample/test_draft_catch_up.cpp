// How a draft model catches up on the sequence tokens it has not seen (each round's emitted
// tokens, and whole windows after the fallback decoded plainly): in one forward call per
// max_batch chunk, with the same proposals as a draft model that saw every token.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string_view>
#include <vector>

#include "llmrt/sample/sample.hpp"
#include "llmrt/testing/model_doubles.hpp"

using namespace llmrt::sample;
using namespace llmrt::sample::testing;

namespace {

constexpr int32_t vocab_size = 64;
const std::vector<int32_t> prompt{3, 14, 15, 9, 26, 5};

function_model hash_model(float noise, model_costs costs = {}) {
    return function_model(make_vocabulary(vocab_size), 2048, hash_logits(11, 0, 4.0f, 5, noise), costs);
}

int64_t chunks(int64_t tokens, int64_t batch) { return (tokens + batch - 1) / batch; }

// Forwards a model_drafter's proposals and records, for each, the forward calls its model made
// (counted by the model, not by the drafter), the tokens it caught up on and the tokens proposed.
class recording_drafter final : public drafter {
public:
    struct proposal {
        int64_t forwards = 0, catch_up = 0, proposed = 0;
    };

    explicit recording_drafter(batched_model& m)
        : model_(m), inner_(m, sampler_chain(sampling_params::greedy())) {}

    std::string_view name() const override { return inner_.name(); }
    const vocabulary* vocab() const override { return inner_.vocab(); }
    drafter_work work() const override { return inner_.work(); }
    void begin(std::span<const int32_t> p) override { inner_.begin(p); }
    void propose(const draft_request& request, draft& out) override {
        const int64_t calls = model_.inner().calls;
        const drafter_work before = inner_.work();
        inner_.propose(request, out);
        log.push_back({model_.inner().calls - calls, inner_.work().catch_up - before.catch_up, int64_t(out.tokens.size())});
    }

    std::vector<proposal> log;

private:
    batched_model& model_;
    model_drafter<batched_model> inner_;
};

}  // namespace

TEST_CASE("a draft model catches up on the tokens it missed in one forward call per max_batch chunk") {
    constexpr int32_t batch = 8;
    for (const int32_t missed : {1, 2, 5, 8, 9, 16, 17, 40, 41}) {
        CAPTURE(missed);
        batched_model m(hash_model(0.0f), batch);
        model_drafter<batched_model> d(m, sampler_chain(sampling_params::greedy()));
        std::vector<int32_t> seq = prompt;
        d.begin(seq);
        draft out;
        d.propose({seq, 1, 0.0f}, out);  // the model now holds the prompt
        REQUIRE(m.cache_length() == int32_t(prompt.size()));
        for (int32_t i = 0; i < missed; ++i) seq.push_back((7 * i + 1) % vocab_size);

        const int64_t calls = m.inner().calls;
        const drafter_work before = d.work();
        d.propose({seq, 1, 0.0f}, out);  // one draft token: no drafting call after the catch-up
        CHECK(m.inner().calls - calls == chunks(missed, batch));
        CHECK(d.work().forwards - before.forwards == chunks(missed, batch));
        CHECK(d.work().catch_up - before.catch_up == missed);
        CHECK(m.inner().max_batch <= batch);

        // The proposal is the argmax after the whole sequence, as a drafter that saw every token
        // would have it.
        REQUIRE(out.tokens.size() == 1);
        const std::vector<float> expected = m.inner().logits_after(seq);
        CHECK(out.tokens[0] == int32_t(std::max_element(expected.begin(), expected.end()) - expected.begin()));
        CHECK(m.cache_length() == int32_t(seq.size()));
    }
}

TEST_CASE("a draft model's catch_up evaluates all but the last tokens it missed, and its next proposal the rest in "
          "the first draft token's call") {
    constexpr int32_t batch = 8;
    batched_model m(hash_model(0.0f), batch);
    model_drafter<batched_model> d(m, sampler_chain(sampling_params::greedy()));
    std::vector<int32_t> seq = prompt;
    d.begin(seq);
    d.catch_up(seq, 2);  // the prompt but its last 2 tokens
    CHECK(m.cache_length() == int32_t(prompt.size()) - 2);
    draft out;
    d.propose({seq, 1, 0.0f}, out);
    for (int32_t i = 0; i < 40; ++i) seq.push_back((3 * i + 2) % vocab_size);

    drafter_work before = d.work();
    d.catch_up(seq, 2);
    CHECK(d.work().catch_up - before.catch_up == 40 - 2);
    CHECK(d.work().forwards - before.forwards == chunks(40 - 2, batch));
    CHECK(m.cache_length() == int32_t(seq.size()) - 2);
    before = d.work();
    d.catch_up(seq, 2);  // nothing more to leave out
    CHECK(d.work().forwards == before.forwards);

    d.propose({seq, 3, 0.0f}, out);
    CHECK(d.work().catch_up - before.catch_up == 2);
    CHECK(d.work().forwards - before.forwards == 3);  // one call per draft token, the first with the 2 caught up
    REQUIRE(out.tokens.size() == 3);
    const std::vector<float> expected = m.inner().logits_after(seq);
    CHECK(out.tokens[0] == int32_t(std::max_element(expected.begin(), expected.end()) - expected.begin()));
}

TEST_CASE("a draft model without max_batch catches up in at most two calls") {
    function_model m = hash_model(0.0f);
    model_drafter<function_model> d(m, sampler_chain(sampling_params::greedy()));
    std::vector<int32_t> seq = prompt;
    for (int32_t i = 0; i < 100; ++i) seq.push_back((5 * i + 2) % vocab_size);
    d.begin(seq);
    draft out;
    d.propose({seq, 1, 0.0f}, out);
    CHECK(m.calls == 2);  // the head without logits, then a tail of at most 8 rows
    CHECK(d.work().catch_up == int64_t(seq.size()));
}

TEST_CASE("after a back-off the draft model catches up in one forward call per max_batch chunk and greedy output is "
          "unchanged") {
    constexpr int32_t batch = 4;
    constexpr int32_t n = 384;
    // A draft as expensive per call as the target and mostly wrong: drafting loses, and the
    // fallback backs off.
    fake_clock clock;
    function_model target = hash_model(0.0f, {&clock, 1.0, 0.0});
    batched_model draft_model(function_model(make_vocabulary(vocab_size), 2048, hash_logits(999, 0), {&clock, 1.0, 0.0}),
                              batch);

    function_model reference = hash_model(0.0f);
    generator<function_model> plain(reference, sampler_chain(sampling_params::greedy()));
    const std::vector<int32_t> expected = plain.generate(prompt, n).tokens;

    draft_policy policy;
    policy.p_min = 0.0f;
    policy.n_max = 6;
    policy.fallback.enabled = true;
    policy.fallback.backoff_tokens = 16;
    generator<function_model> spec(target, sampler_chain(sampling_params::greedy()), policy,
                                   {.stop_at_eos = false, .clock = [&] { return clock.seconds; }});
    auto& rec = spec.add_drafter(std::make_unique<recording_drafter>(draft_model));
    const generation_result r = spec.generate(prompt, n);

    CHECK(r.tokens == expected);
    const auto& s = spec.stats();
    MESSAGE("fallback steps " << s.fallback_steps << ", proposals " << rec.log.size() << ", draft forwards "
                              << draft_model.inner().calls << " for " << draft_model.inner().tokens_evaluated << " tokens");
    CHECK(s.fallback_steps >= policy.fallback.backoff_tokens);
    REQUIRE(!rec.log.empty());
    int64_t longest = 0;
    for (size_t i = 0; i < rec.log.size(); ++i) {
        const auto& p = rec.log[i];
        CAPTURE(i);
        CAPTURE(p.catch_up);
        REQUIRE(p.proposed >= 1);
        // Every draft token but the last costs one single-token call; the rest is the catch-up.
        CHECK(p.forwards == chunks(p.catch_up, batch) + p.proposed - 1);
        longest = std::max(longest, p.catch_up);
    }
    CHECK(longest > policy.fallback.backoff_tokens);  // a whole back-off window, caught up in chunks
    const drafter_work& w = s.per_drafter.at(0).work;
    CHECK(w.forwards == draft_model.inner().calls);
    CHECK(w.tokens == draft_model.inner().tokens_evaluated);
}
