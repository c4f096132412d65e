// Drafting ahead (generation_options::overlap): the target verifies a round on a second thread
// while the draft model drafts the next round on the guess that this one is wholly accepted. Only
// which drafts are proposed changes, never the tokens.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "llmrt/sample/sample.hpp"
#include "llmrt/testing/model_doubles.hpp"

using namespace llmrt::sample;
using namespace llmrt::sample::testing;

namespace {

constexpr int32_t vocab_size = 64;
const std::vector<int32_t> prompt{3, 14, 15, 9, 26, 5};

function_model target_model(int32_t eos = -1) { return hashed_target(vocab_size, eos); }
function_model noisy_draft(float noise, int32_t eos = -1) { return hashed_draft(vocab_size, noise, eos); }

draft_policy no_timing() {
    draft_policy p;
    p.p_min = 0.0f;
    p.fallback.enabled = false;  // no timing: runs with and without overlap take the same path
    p.adaptive.cost_aware = false;
    return p;
}

struct run_result {
    std::vector<int32_t> tokens;
    speculative_stats stats;
};

template <class Target, class Draft>
run_result run(Target& target, Draft* draft, const sampling_params& params, bool overlap, int32_t n = 300,
               draft_policy policy = no_timing()) {
    generation_options options;
    options.overlap = overlap;
    generator<Target> g(target, sampler_chain(params), policy, options);
    if (draft) g.add_drafter(std::make_unique<model_drafter<Draft>>(*draft, sampler_chain(sampling_params::greedy())));
    run_result r{g.generate(prompt, n).tokens, g.stats()};
    return r;
}

// A function_model whose every eval takes at least `pause` (a model on a slow device).
class slow_model : public wrapped_model {
public:
    slow_model(function_model inner, std::chrono::milliseconds pause) : wrapped_model(std::move(inner)), pause_(pause) {}
    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        std::this_thread::sleep_for(pause_);
        inner_.eval(tokens, position, logits);
    }

private:
    std::chrono::milliseconds pause_;
};

// A function_model whose eval throws once its calls reach `fail_at` (then never again).
class failing_model : public wrapped_model {
public:
    failing_model(function_model inner, int64_t fail_at) : wrapped_model(std::move(inner)), fail_at_(fail_at) {}
    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        if (++calls_ == fail_at_) throw llmrt::error(llmrt::errc::device_error, "failing_model: the planned failure");
        inner_.eval(tokens, position, logits);
    }

private:
    int64_t fail_at_, calls_ = 0;
};

}  // namespace

TEST_CASE("drafting ahead gives plain decoding's tokens, greedy and sampled, from rows and from argmax ids") {
    for (const float noise : {0.0f, 1.5f, 6.0f}) {
        for (const bool sampled : {false, true}) {
            CAPTURE(noise);
            CAPTURE(sampled);
            const sampling_params params = sampled ? sampling_params{} : sampling_params::greedy();
            function_model plain_target = target_model();
            const std::vector<int32_t> plain = run<function_model, function_model>(plain_target, nullptr, params, false).tokens;

            function_model t1 = target_model(), d1 = noisy_draft(noise);
            const run_result serial = run(t1, &d1, params, false);
            function_model t2 = target_model(), d2 = noisy_draft(noise);
            const run_result overlapped = run(t2, &d2, params, true);
            argmax_model t3(target_model()), d3(noisy_draft(noise));
            const run_result overlapped_ids = run(t3, &d3, params, true);

            CHECK(serial.tokens == plain);
            CHECK(overlapped.tokens == plain);
            CHECK(overlapped_ids.tokens == plain);
            CHECK(overlapped.stats.drafted_ahead <= overlapped.stats.rounds);
            CHECK(serial.stats.drafted_ahead == 0);
        }
    }
}

TEST_CASE("a draft model equal to its target drafts every round after the first during the verification before") {
    // The target takes 50 ms a call, so each look-ahead drafts its whole limit before the
    // verification it overlaps is in hand.
    slow_model target(target_model(), std::chrono::milliseconds(50));
    function_model draft = target_model();
    const run_result r = run(target, &draft, sampling_params::greedy(), true, 200);
    CHECK(r.stats.acceptance_rate() == 1.0);
    CHECK(r.stats.rounds > 5);
    CHECK(r.stats.drafted_ahead == r.stats.rounds - 1);
    // The first round's proposal, then one look-ahead during each round's verification (the
    // last round's unused): nothing was drafted twice.
    CHECK(r.stats.per_drafter[0].calls == r.stats.rounds + 1);
}

TEST_CASE("a look-ahead stops once the verification is in hand, and a draft model slower than its target drafts no more ahead") {
    // A draft model that takes 20 ms a call beside a target that takes microseconds: the first
    // look-ahead ends after the one forward call that guesses the target's next token, and since
    // that call outlasts a verification, no round after it drafts ahead.
    function_model target = target_model();
    slow_model draft(target_model(), std::chrono::milliseconds(20));
    const run_result r = run(target, &draft, sampling_params::greedy(), true, 40);
    function_model plain_target = target_model();
    CHECK(r.tokens == run<function_model, function_model>(plain_target, nullptr, sampling_params::greedy(), false, 40).tokens);
    CHECK(r.stats.rounds > 1);
    CHECK(r.stats.drafted_ahead == 0);
    CHECK(r.stats.per_drafter[0].calls == r.stats.rounds + 1);
}

TEST_CASE("a look-ahead cut short by the verification's end is drafted on to the round's length") {
    // The target takes 12 ms a call and the draft model (equal to it) 3 ms: a look-ahead drafts
    // about 4 of its 8 tokens before the verification is in hand, and the next round drafts the
    // rest on top of them instead of verifying a short draft.
    slow_model target(target_model(), std::chrono::milliseconds(12));
    slow_model draft(target_model(), std::chrono::milliseconds(3));
    draft_policy policy = no_timing();
    policy.n_max = 8;
    policy.adaptive.enabled = false;
    const run_result r = run(target, &draft, sampling_params::greedy(), true, 120, policy);
    function_model plain_target = target_model();
    CHECK(r.tokens == run<function_model, function_model>(plain_target, nullptr, sampling_params::greedy(), false, 120).tokens);
    MESSAGE(r.stats.rounds << " rounds, " << r.stats.drafted_ahead << " drafted ahead, " << r.stats.extended_ahead
                           << " drafted on, " << r.stats.drafted << " drafted");
    CHECK(r.stats.acceptance_rate() == 1.0);
    CHECK(r.stats.extended_ahead > 0);
    CHECK(r.stats.extended_ahead <= r.stats.drafted_ahead);
    // Every round but the last (capped by the tokens still wanted) drafts the full 8.
    CHECK(r.stats.drafted >= 8 * (r.stats.rounds - 1));
}

TEST_CASE("a wrong guess of the target's next token drops the look-ahead and the next round drafts anew") {
    // A draft far from its target: rounds rarely accept everything, so look-aheads are mostly dropped.
    function_model target = target_model(), draft = noisy_draft(40.0f);
    const run_result r = run(target, &draft, sampling_params::greedy(), true);
    function_model plain_target = target_model();
    CHECK(r.tokens == run<function_model, function_model>(plain_target, nullptr, sampling_params::greedy(), false).tokens);
    CHECK(r.stats.rounds > 20);
    CHECK(r.stats.drafted_ahead < r.stats.rounds / 2);
    // While the guesses fail, look-aheads stop, but for one round in 16 that tries again.
    const int64_t lookaheads = r.stats.per_drafter[0].calls - r.stats.rounds;
    CHECK(lookaheads < r.stats.rounds / 4);
}

TEST_CASE("drafting ahead stops at EOS, at the requested length and at the context's end as plain decoding does") {
    for (const int32_t n : {1, 2, 17, 150}) {
        CAPTURE(n);
        function_model plain_target = target_model(7);
        const std::vector<int32_t> plain =
            run<function_model, function_model>(plain_target, nullptr, sampling_params::greedy(), false, n).tokens;
        function_model target = target_model(7), draft = noisy_draft(1.0f, 7);
        CHECK(run(target, &draft, sampling_params::greedy(), true, n).tokens == plain);
    }
    // A context of 40 tokens: generation stops when it is full, look-ahead or not.
    function_model small_target(make_vocabulary(vocab_size), 40, hash_logits(11, 0));
    function_model small_draft(make_vocabulary(vocab_size), 40, hash_logits(11, 0));
    function_model small_plain(make_vocabulary(vocab_size), 40, hash_logits(11, 0));
    CHECK(run(small_target, &small_draft, sampling_params::greedy(), true, 100).tokens ==
          run<function_model, function_model>(small_plain, nullptr, sampling_params::greedy(), false, 100).tokens);
}

TEST_CASE("an error in a verification on the worker thread reaches the caller, and the generator runs again after it") {
    failing_model target(target_model(), 9);
    function_model draft = target_model();
    generation_options options;
    options.overlap = true;
    generator<failing_model> g(target, sampler_chain(sampling_params::greedy()), no_timing(), options);
    g.add_drafter(std::make_unique<model_drafter<function_model>>(draft, sampler_chain(sampling_params::greedy())));
    CHECK_THROWS_WITH_AS(g.generate(prompt, 200), doctest::Contains("the planned failure"), llmrt::error);
    function_model plain_target = target_model();
    CHECK(g.generate(prompt, 200).tokens ==
          run<function_model, function_model>(plain_target, nullptr, sampling_params::greedy(), false, 200).tokens);
}

TEST_CASE("the overlap worker runs one task at a time and hands back what it threw") {
    overlap_worker w;
    std::atomic<int> ran{0};
    for (int i = 0; i < 100; ++i) {
        w.start([&] { ++ran; });
        w.wait();
    }
    CHECK(ran.load() == 100);
    w.start([] { throw std::runtime_error("from the worker"); });
    CHECK_THROWS_WITH_AS(w.wait(), "from the worker", std::runtime_error);
    w.start([&] { ++ran; });
    CHECK_THROWS_AS(w.start([] {}), llmrt::error);  // the last task may still run
    w.wait();
    CHECK(ran.load() == 101);
}
