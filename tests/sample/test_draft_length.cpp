// How long a round's draft is (draft_policy::adaptive): with cost_aware, the length that the
// measured costs say emits tokens fastest; without, the accepted tokens' moving average. Timed on
// a fake clock, so every run takes the same steps.
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "llmrt/sample/sample.hpp"
#include "llmrt/testing/model_doubles.hpp"

using namespace llmrt::sample;
using namespace llmrt::sample::testing;

namespace {

constexpr int32_t vocabulary_size = 64;
const std::vector<int32_t> prompt{3, 14, 15, 9, 26, 5};

// A target whose evaluation of m tokens costs 1 s on the fake clock for every `page` tokens or part
// of them, as the CUDA mat-vec reads the weights once per 8 columns.
class paged_target : public wrapped_model {
public:
    paged_target(fake_clock& clock, int32_t page)
        : wrapped_model(hashed_target(vocabulary_size)), clock_(clock), page_(size_t(page)) {}
    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        clock_.seconds += double((tokens.size() + page_ - 1) / page_);
        inner_.eval(tokens, position, logits);
    }

private:
    fake_clock& clock_;
    size_t page_;
};

struct length_run {
    std::vector<int32_t> tokens;
    speculative_stats stats;
};

// Greedy decoding of n tokens after p, timed on the clock that target and draft charge, drafted
// by a model drafter over draft.
length_run decode(fake_clock& clock, paged_target& target, function_model& draft, const draft_policy& policy,
                  std::span<const int32_t> p = prompt, int32_t n = 300) {
    generation_options options;
    options.clock = std::ref(clock);
    generator<paged_target> g(target, sampler_chain(sampling_params::greedy()), policy, options);
    g.add_drafter(std::make_unique<model_drafter<function_model>>(draft, sampler_chain(sampling_params::greedy())));
    length_run r{g.generate(p, n).tokens, g.stats()};
    return r;
}

// Cost-aware with the fallback on: its two probe steps at the start measure v(1); its own back-off
// never comes.
draft_policy cost_aware_policy() {
    draft_policy policy;
    policy.p_min = 0.0f;
    policy.adaptive.cost_aware = true;
    policy.fallback.min_rounds = 1000;
    return policy;
}

// 300 greedy tokens of a paged target drafted by a draft model equal to it (always right) that
// costs draft_call seconds per call.
length_run run(bool cost_aware, double draft_call, int32_t page = 8) {
    fake_clock clock;
    paged_target target(clock, page);
    function_model draft(make_vocabulary(vocabulary_size), 2048, hash_logits(11, 0), {&clock, draft_call, 0.0});
    draft_policy policy;
    policy.p_min = 0.0f;
    policy.n_max = 16;
    policy.fallback.enabled = false;
    policy.adaptive.cost_aware = cost_aware;
    return decode(clock, target, draft, policy);
}

std::vector<int32_t> plain_tokens(int32_t n = 300) {
    function_model target = hashed_target(vocabulary_size);
    generator<function_model> g(target, sampler_chain(sampling_params::greedy()));
    return g.generate(prompt, n).tokens;
}

}  // namespace

TEST_CASE("cost-aware drafts stop at the 8 tokens a verification pass takes when a longer one costs another pass") {
    // Always right, 0.1 s per draft token, 1 s per 8 verified tokens: 7 drafts (8 tokens, one
    // pass) emit 8 tokens in 1.7 s; 15 drafts emit 16 in 3.5 s; 16 drafts emit 17 in 4.6 s.
    const length_run costs = run(true, 0.1);
    const length_run accepted = run(false, 0.1);
    CHECK(costs.tokens == plain_tokens());
    CHECK(accepted.tokens == plain_tokens());
    const auto& s = costs.stats;
    REQUIRE(s.drafted_at.size() >= 7);
    MESSAGE("cost-aware: " << s.rounds << " rounds, " << s.drafted << " drafted; rounds reaching position 7: "
                           << s.drafted_at[6] << ", 8: " << (s.drafted_at.size() > 7 ? s.drafted_at[7] : 0));
    // A few rounds try other lengths while their costs are unknown (each v(m) not measured is
    // taken as the one below it: 16 tokens look as cheap as 8 until tried, then 12, 11, ...); the
    // rest draft exactly 7.
    CHECK(s.drafted_at[6] >= s.rounds - 5);  // the first rounds measure the costs
    CHECK((s.drafted_at.size() > 7 ? s.drafted_at[7] : 0) <= 5);
    // Following acceptance alone, an always-right draft grows to n_max and pays for three passes.
    CHECK(double(accepted.stats.drafted) / double(accepted.stats.rounds) > 12.0);
    CHECK(s.target_calls > accepted.stats.target_calls);  // more rounds, each cheaper
}

TEST_CASE("cost-aware drafts grow to n_max when a cheap, always-right draft is verified at one cost for any length") {
    // 0.01 s per draft token, 1 s per verification of up to 64 tokens: (n + 1) / (1 + 0.01 n)
    // grows with n.
    const length_run r = run(true, 0.01, 64);
    CHECK(r.tokens == plain_tokens());
    const auto& s = r.stats;
    REQUIRE(s.drafted_at.size() == 16);
    MESSAGE(s.rounds << " rounds, " << s.drafted << " drafted, " << s.drafted_at[15] << " of 16 tokens");
    CHECK(s.drafted_at[15] >= s.rounds - 5);  // the first rounds measure the costs
}

TEST_CASE("cost-aware decoding goes plain while no draft length is predicted to pay, and drafts short when it tries") {
    // A draft that mostly disagrees (heavy noise) and costs half a verification pass: a round of
    // one draft token emits 1.1 tokens for 1.5 s against a plain step's 1 token for 1 s.
    fake_clock clock;
    paged_target target(clock, 8);
    function_model draft(make_vocabulary(vocabulary_size), 2048, hash_logits(11, 0, 4.0f, 5, 12.0f), {&clock, 0.5, 0.0});
    const length_run r = decode(clock, target, draft, cost_aware_policy());
    CHECK(r.tokens == plain_tokens());
    const auto& s = r.stats;
    MESSAGE("acceptance " << s.acceptance_rate() << ", " << s.rounds << " rounds, " << s.drafted << " drafted, "
                          << (s.drafted_at.size() > 2 ? s.drafted_at[2] : 0) << " of 3 or more");
    CHECK(s.acceptance_rate() < 0.5);
    // Only the rounds before a draft token's cost is measured draft more (4 each).
    REQUIRE(s.drafted_at.size() > 2);
    CHECK(s.drafted_at[2] <= 2);
    // Predicted slower: plain, but for one round after 32 such steps, then 64, 128.
    CHECK(s.fallback_steps > 200);
    CHECK(s.rounds > 5);
}

TEST_CASE("a draft model's prompt prefill does not count as what drafting costs") {
    // A 400-token prompt that the draft model catches up on in its first proposal at 0.05 s a token
    // (20 s), then 0.05 s per drafted token; verification 1 s per 8 tokens; the draft is always
    // right. Counted as drafting, the prefill would price a draft token above a plain step and the
    // schedule would stay plain; a round of 7 drafts emits 8 tokens in 1.35 s against 8 s plain.
    fake_clock clock;
    paged_target target(clock, 8);
    function_model draft(make_vocabulary(vocabulary_size), 2048, hash_logits(11, 0), {&clock, 0.0, 0.05});
    std::vector<int32_t> long_prompt;
    for (int32_t i = 0; i < 400; ++i) long_prompt.push_back((7 * i + 3) % vocabulary_size);
    const length_run r = decode(clock, target, draft, cost_aware_policy(), long_prompt, 200);
    const auto& s = r.stats;
    MESSAGE(s.rounds << " rounds, " << s.fallback_steps << " fallback steps, " << s.drafted << " drafted");
    CHECK(s.fallback_steps == 0);
    CHECK(s.drafted > 150);
}

TEST_CASE("cost-aware decoding prices a draft per forward call, so drafts that p_min cuts short do not make it go plain") {
    // Always right, 0.6 s per draft call, 1 s per 8 verified tokens: a round of 7 drafts emits 8
    // tokens in 5.2 s against 8 s plain. For its first 40 tokens the draft is sure of every other
    // position only, and p_min stops each draft after one token, a call later: priced per token
    // kept, drafting cost 1.2 s a token, a round of 7 seemed to take 9.4 s, and decoding went
    // plain (284 fallback steps of 300, 4 rounds).
    fake_clock clock;
    paged_target target(clock, 8);
    const logits_function sure = hash_logits(11, 0, 400.0f), unsure = hash_logits(11, 0, 0.1f);  // the target's argmax
    function_model draft(
        make_vocabulary(vocabulary_size), 2048,
        [&](std::span<const int32_t> history, std::span<float> out) {
            (history.size() < 40 && history.size() % 2 == 0 ? unsure : sure)(history, out);
        },
        {&clock, 0.6, 0.0});
    draft_policy policy = cost_aware_policy();
    policy.p_min = 0.5f;
    const length_run r = decode(clock, target, draft, policy);
    CHECK(r.tokens == plain_tokens());
    const auto& s = r.stats;
    MESSAGE(s.rounds << " rounds, " << s.fallback_steps << " fallback steps, " << s.drafted << " drafted");
    CHECK(s.fallback_steps == 0);  // never predicted slower
    CHECK(s.drafted > 200);
}

TEST_CASE("cost-aware decoding drafts again after a plain phase once the draft model turns cheap") {
    // Always right; 1.2 s per draft call for the first 20 s on the clock (a round of 7 drafts
    // then takes 9.4 s for 8 tokens, against 8 s plain), 0.1 s after. Predicted slower, decoding
    // goes plain for 32, then 64 tokens, each phase ending in a round whose proposal is timed apart
    // from the catch-up on the phase's tokens, until d has come down. Timed only on proposals that
    // caught up on no more than a round's tokens, as before, d was never measured again after the
    // first plain phase, and decoding stayed plain (377 fallback steps of 400, 5 rounds).
    fake_clock clock;
    paged_target target(clock, 8);
    const auto slow_at_first = [&clock](int32_t, bool) { return clock.seconds < 20.0 ? 1.1 : 0.0; };
    function_model draft(make_vocabulary(vocabulary_size), 2048, hash_logits(11, 0), {&clock, 0.1, 0.0, slow_at_first});
    const length_run r = decode(clock, target, draft, cost_aware_policy(), prompt, 400);
    CHECK(r.tokens == plain_tokens(400));
    const auto& s = r.stats;
    MESSAGE(s.rounds << " rounds, " << s.fallback_steps << " fallback steps, " << s.drafted << " drafted");
    CHECK(s.fallback_steps > 0);  // it did go plain
    CHECK(s.fallback_steps <= 32 + 64);
    CHECK(s.drafted > 200);  // and then drafted most of the rest
}
