// Speculative decoding against deterministic test-double models: exactness against plain
// decoding, drafters, draft policy, statistics, fallback and cache bookkeeping.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "llmrt/sample/sample.hpp"
#include "llmrt/testing/model_doubles.hpp"

using namespace llmrt::sample;
using namespace llmrt::sample::testing;

namespace {

constexpr int32_t vocab_size = 64;
const std::vector<int32_t> prompt{3, 14, 15, 9, 26, 5};

function_model hash_target(int32_t order = 0, int32_t context = 2048, model_costs costs = {}, int32_t eos = -1) {
    return function_model(make_vocabulary(vocab_size, eos), context, hash_logits(11, order), costs);
}

// A draft that shares the target's logits plus noise: it mostly agrees.
function_model hash_draft(float noise, int32_t order = 0, model_costs costs = {}, int32_t eos = -1) {
    return function_model(make_vocabulary(vocab_size, eos), 2048, hash_logits(11, order, 4.0f, 5, noise), costs);
}

draft_policy exact_policy() {
    draft_policy p;
    p.p_min = 0.0f;
    p.fallback.enabled = false;
    p.adaptive.cost_aware = false;  // lengths from the tokens alone, not from timings
    return p;
}

std::vector<int32_t> plain_decode(function_model& target, const sampler_chain& chain, int32_t n,
                                  std::span<const int32_t> p = prompt) {
    generator<function_model> plain(target, chain);
    return plain.generate(p, n).tokens;
}

template <class Model>
std::unique_ptr<model_drafter<Model>> greedy_drafter(Model& m) {
    return std::make_unique<model_drafter<Model>>(m, sampler_chain(sampling_params::greedy()));
}

sampling_params sampled_params(uint64_t seed) {
    sampling_params p;
    p.temperature = 0.9f;
    p.top_k = 20;
    p.top_p = 0.95f;
    p.min_p = 0.02f;
    p.repeat_penalty = 1.3f;
    p.frequency_penalty = 0.2f;
    p.presence_penalty = 0.1f;
    p.penalty_last_n = 32;
    p.seed = seed;
    return p;
}

// Proposes exactly n_max tokens: the target's greedy continuation for the first n_correct, then
// wrong ones. Records every proposal's length.
class oracle_drafter final : public drafter {
public:
    oracle_drafter(logits_function f, int32_t n_correct) : f_(std::move(f)), n_correct_(n_correct) {}
    std::string_view name() const override { return "oracle"; }
    void begin(std::span<const int32_t>) override {}
    void propose(const draft_request& r, draft& out) override {
        out.clear();
        std::vector<int32_t> seq(r.sequence.begin(), r.sequence.end());
        std::vector<float> logits(vocab_size);
        for (int32_t i = 0; i < r.n_max; ++i) {
            f_(seq, logits);
            int32_t best = 0;
            for (int32_t v = 1; v < vocab_size; ++v)
                if (logits[size_t(v)] > logits[size_t(best)]) best = v;
            if (i >= n_correct_) best = (best + 1) % vocab_size;
            out.tokens.push_back(best);
            seq.push_back(best);
        }
        lengths.push_back(r.n_max);
    }
    std::vector<int32_t> lengths;

private:
    logits_function f_;
    int32_t n_correct_;
};

// Proposes a fixed draft, whatever the sequence.
class fixed_drafter final : public drafter {
public:
    explicit fixed_drafter(draft d) : d_(std::move(d)) {}
    std::string_view name() const override { return "fixed"; }
    void begin(std::span<const int32_t>) override {}
    void propose(const draft_request&, draft& out) override { out = d_; }

private:
    draft d_;
};

}  // namespace

TEST_CASE("the test doubles refuse evaluations that do not continue their cache") {
    function_model m = hash_target();
    std::vector<float> logits(3 * vocab_size);
    m.eval(std::span(prompt).first(3), 0, logits);
    CHECK_THROWS_AS(m.eval(std::span(prompt).subspan(3, 1), 2, std::span(logits).first(vocab_size)), llmrt::error);
    CHECK_THROWS_AS(m.eval(std::span(prompt).subspan(3, 1), 4, std::span(logits).first(vocab_size)), llmrt::error);
    CHECK_THROWS_AS(m.truncate(4), llmrt::error);
    // logits are a pure function of the history: a batch row equals a single-token evaluation
    m.truncate(2);
    std::vector<float> single(vocab_size);
    m.eval(std::span(prompt).subspan(2, 1), 2, single);
    CHECK(std::equal(single.begin(), single.end(), logits.begin() + 2 * vocab_size));
    function_model small(make_vocabulary(vocab_size), 4, hash_logits(1, 0));
    CHECK_THROWS_AS(small.eval(prompt, 0, {}), llmrt::error);  // beyond its context
}

TEST_CASE("greedy speculative decoding reproduces plain greedy decoding for 256 tokens") {
    function_model target = hash_target();
    const sampler_chain chain(sampling_params::greedy());
    const auto expected = plain_decode(target, chain, 256);
    REQUIRE(expected.size() == 256);

    function_model draft_model = hash_draft(0.15f);
    generator<function_model> spec(target, chain, exact_policy());
    spec.add_drafter(greedy_drafter(draft_model));
    const auto got = spec.generate(prompt, 256);
    CHECK(got.tokens == expected);
    CHECK(got.reason == stop_reason::length);
    const auto& s = spec.stats();
    MESSAGE("acceptance rate " << s.acceptance_rate() << ", mean acceptance length " << s.mean_acceptance_length());
    CHECK(s.accepted > 0);
    CHECK(s.accepted < s.drafted);  // rejections happened and were repaired
    CHECK(target.max_batch > 1);
    CHECK(s.target_calls < 256);
}

TEST_CASE("n-gram drafting reproduces plain greedy decoding and is accepted on repetitive text") {
    function_model target = hash_target(2);  // order-2 Markov: greedy decoding falls into a cycle
    const sampler_chain chain(sampling_params::greedy());
    const auto expected = plain_decode(target, chain, 256);

    generator<function_model> spec(target, chain, exact_policy());
    spec.add_drafter(std::make_unique<ngram_drafter>());
    CHECK(spec.generate(prompt, 256).tokens == expected);
    CHECK(spec.stats().rounds > 0);
    CHECK(spec.stats().acceptance_rate() > 0.8);
    // Once a bigram repeats, an order-2 model's greedy future is a copy of its past: from there on
    // the drafter is always right and each round is one target call for up to n_max + 1 tokens.
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), expected.begin(), expected.end());
    size_t repeat = seq.size();
    for (size_t i = 2; i < seq.size() && repeat == seq.size(); ++i)
        for (size_t j = 1; j < i; ++j)
            if (seq[j - 1] == seq[i - 1] && seq[j] == seq[i]) repeat = i;
    // Before it, no n-gram of 2 or more tokens has occurred twice: those are plain steps.
    const int64_t before = int64_t(repeat - prompt.size()), predictable = int64_t(seq.size() - repeat);
    MESSAGE("first repeated bigram at " << repeat << ", target calls " << spec.stats().target_calls);
    REQUIRE(predictable > 64);
    CHECK(spec.stats().target_calls <= 1 + before + predictable / 9 + 2);  // rounds of >= 8 + 1 tokens
}

TEST_CASE("chained drafters ask the n-gram drafter first and the draft model when it has nothing") {
    function_model target = hash_target(1);
    const sampler_chain chain(sampling_params::greedy());
    const auto expected = plain_decode(target, chain, 256);

    function_model draft_model = hash_draft(0.15f, 1);
    generator<function_model> spec(target, chain, exact_policy());
    spec.add_drafter(std::make_unique<ngram_drafter>());
    spec.add_drafter(greedy_drafter(draft_model));
    CHECK(spec.generate(prompt, 256).tokens == expected);
    const auto& per = spec.stats().per_drafter;
    REQUIRE(per.size() == 2);
    CHECK(per[0].name == "ngram");
    CHECK(per[1].name == "draft-model");
    CHECK(per[0].rounds > 0);
    CHECK(per[1].rounds > 0);
    CHECK(per[0].calls == spec.stats().rounds + spec.stats().plain_steps);  // asked first, every step
    CHECK(per[1].calls == per[0].calls - per[0].rounds);                   // asked only when n-gram had nothing
}

TEST_CASE("with a point-mass drafter at temperature > 0 speculative decoding gives the plain sampling stream") {
    for (uint64_t seed : {1u, 2u, 3u, 4u}) {
        CAPTURE(seed);
        function_model target = hash_target(1);
        const sampler_chain chain(sampled_params(seed));
        const auto expected = plain_decode(target, chain, 256);

        function_model draft_model = hash_draft(0.15f, 1);
        generator<function_model> spec(target, chain, exact_policy());
        spec.add_drafter(std::make_unique<ngram_drafter>(ngram_params{1, 3}));
        spec.add_drafter(greedy_drafter(draft_model));
        CHECK(spec.generate(prompt, 256).tokens == expected);
        CHECK(spec.stats().accepted > 0);
        CHECK(spec.stats().accepted < spec.stats().drafted);
    }
}

TEST_CASE("a sampled draft verified by sample-and-compare also gives the plain sampling stream") {
    function_model target = hash_target(1);
    const sampler_chain chain(sampled_params(77));
    const auto expected = plain_decode(target, chain, 200);

    function_model draft_model = hash_draft(0.15f, 1);
    draft_policy policy = exact_policy();
    policy.mode = verification::sample_and_compare;
    generator<function_model> spec(target, chain, policy);
    sampling_params dp;
    dp.temperature = 1.0f;
    dp.seed = 5;
    spec.add_drafter(std::make_unique<model_drafter<function_model>>(draft_model, sampler_chain(dp)));
    CHECK(spec.generate(prompt, 200).tokens == expected);
    CHECK(spec.stats().accepted > 0);
}

TEST_CASE("speculative sampling with a sampled draft is reproducible from the seed") {
    const auto run = [](uint64_t seed) {
        function_model target = hash_target(1);
        function_model draft_model = hash_draft(0.3f, 1);
        generator<function_model> spec(target, sampler_chain(sampled_params(seed)), exact_policy());
        sampling_params dp;
        dp.temperature = 1.2f;
        dp.seed = seed;
        spec.add_drafter(std::make_unique<model_drafter<function_model>>(draft_model, sampler_chain(dp)));
        auto tokens = spec.generate(prompt, 200).tokens;
        CHECK(spec.stats().rounds > 0);
        CHECK(spec.stats().accepted > 0);
        return tokens;
    };
    CHECK(run(8) == run(8));
    CHECK(run(8) != run(9));
}

TEST_CASE("statistics follow the usual definitions") {
    function_model target = hash_target();
    const sampler_chain chain(sampling_params::greedy());
    const auto expected = plain_decode(target, chain, 203);

    draft_policy policy = exact_policy();
    policy.n_max = 5;
    policy.adaptive.enabled = false;
    generator<function_model> spec(target, chain, policy);
    auto& oracle = spec.add_drafter(std::make_unique<oracle_drafter>(hash_logits(11, 0), 3));
    CHECK(spec.generate(prompt, 203).tokens == expected);

    const auto& s = spec.stats();
    int64_t drafted = 0, accepted = 0;
    std::vector<int64_t> drafted_at(5), accepted_at(5);
    for (int32_t n : oracle.lengths) {
        drafted += n;
        accepted += std::min(n, 3);
        for (int32_t i = 0; i < n; ++i) {
            ++drafted_at[size_t(i)];
            if (i < 3) ++accepted_at[size_t(i)];
        }
    }
    CHECK(s.rounds == int64_t(oracle.lengths.size()));
    CHECK(s.drafted == drafted);
    CHECK(s.accepted == accepted);
    CHECK(s.emitted == 203);
    CHECK(s.acceptance_rate() == doctest::Approx(double(accepted) / double(drafted)));
    CHECK(s.mean_acceptance_length() == doctest::Approx(1.0 + double(accepted) / double(s.rounds)));
    CHECK(s.drafted_at == drafted_at);
    CHECK(s.accepted_at == accepted_at);
    CHECK(s.acceptance_rate_at(0) == doctest::Approx(1.0));
    CHECK(s.acceptance_rate_at(2) == doctest::Approx(1.0));
    CHECK(s.acceptance_rate_at(3) == doctest::Approx(0.0));
    CHECK(s.rounds + s.plain_steps == s.target_calls - 1);  // the prefill is one more call
}

TEST_CASE("statistics of two runs add up: counts, per position and per drafter") {
    speculative_stats a, b;
    a.record_round(3, 2);
    a.record_round(1, 1);
    a.per_drafter.push_back({"draft-model", 2, 2, 4, 3, 0.5, {10, 4, 3}});
    b.record_round(5, 0);
    b.target_seconds = 1.5;
    b.per_drafter.push_back({"draft-model", 1, 1, 5, 0, 0.25, {6, 1, 2}});
    b.per_drafter.push_back({"ngram", 3, 0, 0, 0, 0.0, {}});
    a += b;
    CHECK(a.rounds == 3);
    CHECK(a.drafted == 9);
    CHECK(a.accepted == 3);
    CHECK(a.drafted_at == std::vector<int64_t>{3, 2, 2, 1, 1});
    CHECK(a.accepted_at == std::vector<int64_t>{2, 1, 0, 0, 0});
    CHECK(a.target_seconds == 1.5);
    REQUIRE(a.per_drafter.size() == 2);
    CHECK(a.per_drafter[0].calls == 3);
    CHECK(a.per_drafter[0].drafted == 9);
    CHECK(a.per_drafter[0].seconds == 0.75);
    CHECK(a.per_drafter[0].work.tokens == 16);
    CHECK(a.per_drafter[0].work.forwards == 5);
    CHECK(a.per_drafter[1].name == "ngram");
}

TEST_CASE("draft length adapts to recent acceptance") {
    const sampler_chain chain(sampling_params::greedy());
    draft_policy policy = exact_policy();
    policy.n_max = 16;

    function_model cyclic = hash_target(2);
    generator<function_model> good(cyclic, chain, policy);
    good.add_drafter(std::make_unique<ngram_drafter>());
    good.generate(prompt, 400);
    const double good_length = double(good.stats().drafted) / double(good.stats().rounds);

    function_model target = hash_target();
    function_model wrong_model(make_vocabulary(vocab_size), 2048, hash_logits(12345, 0));
    generator<function_model> bad(target, chain, policy);
    bad.add_drafter(greedy_drafter(wrong_model));
    bad.generate(prompt, 200);
    const double bad_length = double(bad.stats().drafted) / double(bad.stats().rounds);

    MESSAGE("mean draft length: accepted drafter " << good_length << ", rejected drafter " << bad_length);
    CHECK(good_length > 12.0);
    CHECK(bad_length < 4.0);  // steady state is headroom = 2; the first rounds start at n_max / 2
    CHECK(good.stats().drafted_at.size() == 16);  // it reached n_max

    policy.adaptive.enabled = false;
    generator<function_model> fixed(target, chain, policy);
    fixed.add_drafter(greedy_drafter(wrong_model));
    fixed.generate(prompt, 100);
    CHECK(double(fixed.stats().drafted) / double(fixed.stats().rounds) > 14.0);
}

TEST_CASE("p_min stops a draft model at the first position where its top-1 probability is below it") {
    function_model target = hash_target();
    const sampler_chain chain(sampling_params::greedy());
    const auto expected = plain_decode(target, chain, 100);
    function_model draft_model = hash_draft(0.15f);

    draft_policy policy = exact_policy();
    policy.p_min = 0.99f;  // the hash models' top-1 probability is far below
    generator<function_model> cautious(target, chain, policy);
    cautious.add_drafter(greedy_drafter(draft_model));
    CHECK(cautious.generate(prompt, 100).tokens == expected);
    CHECK(cautious.stats().rounds == 0);
    CHECK(cautious.stats().plain_steps == 100);

    // A peaked draft (scale 400: top-1 gaps of ~10 logits) is confident: drafting proceeds.
    function_model peaked(make_vocabulary(vocab_size), 2048, hash_logits(11, 0, 400.0f));
    generator<function_model> confident(target, chain, policy);
    confident.add_drafter(greedy_drafter(peaked));
    confident.generate(prompt, 100);
    CHECK(confident.stats().rounds > 0);
}

TEST_CASE("drafts shorter than n_min are dropped") {
    function_model target = hash_target();
    const sampler_chain chain(sampling_params::greedy());
    draft d;
    d.tokens = {1, 2};
    draft_policy policy = exact_policy();
    policy.n_min = 3;
    generator<function_model> strict(target, chain, policy);
    strict.add_drafter(std::make_unique<fixed_drafter>(d));
    strict.generate(prompt, 50);
    CHECK(strict.stats().rounds == 0);
    CHECK(strict.stats().plain_steps == 50);

    policy.n_min = 2;
    generator<function_model> lenient(target, chain, policy);
    lenient.add_drafter(std::make_unique<fixed_drafter>(d));
    lenient.generate(prompt, 50);
    CHECK(lenient.stats().rounds > 0);
}

TEST_CASE("drafts are clamped to the target's remaining context and generation stops when it is full") {
    const int32_t context = int32_t(prompt.size()) + 50;
    function_model plain_target = hash_target(0, context);
    const sampler_chain chain(sampling_params::greedy());
    generator<function_model> plain(plain_target, chain);
    const auto expected = plain.generate(prompt, 200);
    CHECK(expected.reason == stop_reason::context_full);
    CHECK(expected.tokens.size() == 50);

    function_model target = hash_target(0, context);  // throws if evaluated past its context
    draft_policy policy = exact_policy();
    policy.n_max = 8;
    policy.adaptive.enabled = false;
    generator<function_model> spec(target, chain, policy);
    auto& oracle = spec.add_drafter(std::make_unique<oracle_drafter>(hash_logits(11, 0), 1000));  // always right
    const auto got = spec.generate(prompt, 200);
    CHECK(got.tokens == expected.tokens);
    CHECK(got.reason == stop_reason::context_full);
    // Rounds of 8 drafts + 1 bonus: after 5 of them the sequence holds 51 of 56 positions, so the
    // last draft is clamped to 56 − 51 − 1 = 4 and its round fills the context exactly.
    CHECK(oracle.lengths == std::vector<int32_t>{8, 8, 8, 8, 8, 4});
    CHECK(target.cache_length() == context - 1);
}

TEST_CASE("generation stops after the target's end-of-sequence token, with or without drafts") {
    // the greedy stream of this target: pick a token it emits as EOS
    function_model probe = hash_target();
    const sampler_chain chain(sampling_params::greedy());
    const auto stream = plain_decode(probe, chain, 64);
    const int32_t eos = stream[40];
    const auto first = std::find(stream.begin(), stream.end(), eos) - stream.begin();

    function_model plain_target = hash_target(0, 2048, {}, eos);
    generator<function_model> plain(plain_target, chain);
    const auto expected = plain.generate(prompt, 64);
    CHECK(expected.reason == stop_reason::eos);
    CHECK(int64_t(expected.tokens.size()) == first + 1);

    function_model target = hash_target(0, 2048, {}, eos);
    function_model draft_model = hash_draft(0.0f, 0, {}, eos);
    generator<function_model> spec(target, chain, exact_policy());
    spec.add_drafter(greedy_drafter(draft_model));
    const auto got = spec.generate(prompt, 64);
    CHECK(got.tokens == expected.tokens);
    CHECK(got.reason == stop_reason::eos);
}

TEST_CASE("a draft model with a different vocabulary is refused with an error saying how") {
    function_model target = hash_target(0, 2048, {}, 7);
    generator<function_model> spec(target, sampler_chain(sampling_params::greedy()));
    const auto refused_because = [&](vocabulary v) -> std::string {
        function_model other(std::move(v), 2048, hash_logits(11, 0));
        try {
            spec.add_drafter(greedy_drafter(other));
        } catch (const llmrt::error& e) {
            CHECK(e.code() == llmrt::errc::invalid_argument);
            return e.what();
        }
        return "accepted";
    };
    CHECK(refused_because(make_vocabulary(vocab_size + 1, 7)).find("65 tokens, the target's has 64") != std::string::npos);
    CHECK(refused_because(make_vocabulary(vocab_size, 8)).find("EOS token is 8, the target's is 7") != std::string::npos);
    vocabulary texts = make_vocabulary(vocab_size, 7);
    texts.token_text[33] = "ab\n";
    CHECK(refused_because(texts).find("token 33 is \"ab\\x0a\" in the draft but \"tok33\" in the target") != std::string::npos);
    vocabulary bos = make_vocabulary(vocab_size, 7);
    bos.bos = 1;
    CHECK(refused_because(bos).find("BOS token is 1, the target's is -1") != std::string::npos);
    vocabulary kind = make_vocabulary(vocab_size, 7);
    kind.tokenizer = "gpt2";
    CHECK(refused_because(kind).find("\"gpt2\" tokenizer") != std::string::npos);
    vocabulary unknown = make_vocabulary(vocab_size, 7);
    unknown.token_text.clear();
    CHECK(refused_because(unknown).find("token texts of the draft are unknown") != std::string::npos);
    CHECK(refused_because(make_vocabulary(vocab_size, 7)) == "accepted");
}

namespace {

// Speculation that loses on a fake clock: a draft as expensive per call as the target and mostly
// wrong, the fallback on with `rounds_after_backoff`; the tokens checked against plain decoding.
speculative_stats losing_speculation(int32_t rounds_after_backoff = fallback_policy{}.rounds_after_backoff) {
    fake_clock clock;
    function_model target = hash_target(0, 2048, {&clock, 1.0, 0.02});
    const sampler_chain chain(sampling_params::greedy());
    const auto expected = plain_decode(target, chain, 256);
    function_model slow_draft(make_vocabulary(vocab_size), 2048, hash_logits(999, 0), {&clock, 1.0, 0.02});
    draft_policy policy = exact_policy();
    policy.fallback.enabled = true;
    policy.fallback.rounds_after_backoff = rounds_after_backoff;
    generation_options options;
    options.clock = std::ref(clock);
    generator<function_model> spec(target, chain, policy, options);
    spec.add_drafter(greedy_drafter(slow_draft));
    CHECK(spec.generate(prompt, 256).tokens == expected);
    return spec.stats();
}

}  // namespace

TEST_CASE("speculation falls back to plain decoding while it is measured slower") {
    const speculative_stats s = losing_speculation();
    MESSAGE("fallback steps " << s.fallback_steps << " of 256");
    CHECK(s.fallback_steps > 150);
    CHECK(s.rounds > 0);  // it kept retrying
}

TEST_CASE("after a back-off the fallback judges again after rounds_after_backoff rounds, on its kept averages below min_rounds") {
    const speculative_stats afresh = losing_speculation(8), kept = losing_speculation(1);
    MESSAGE("rounds: afresh " << afresh.rounds << ", kept " << kept.rounds);
    // The first judgement takes min_rounds (8) either way; each retry then 8 rounds, or 1.
    CHECK(afresh.rounds >= 16);
    CHECK(kept.rounds >= 9);
    CHECK(kept.rounds < afresh.rounds);
    CHECK(kept.fallback_steps > afresh.fallback_steps);
    draft_policy bad = exact_policy();
    bad.fallback.rounds_after_backoff = 0;
    CHECK_THROWS_AS(bad.validate(), llmrt::error);
}

TEST_CASE("speculation stays on while it is measured faster") {
    fake_clock clock;
    function_model target = hash_target(0, 2048, {&clock, 1.0, 0.02});
    const sampler_chain chain(sampling_params::greedy());
    function_model cheap_draft = hash_draft(0.05f, 0, {&clock, 0.05, 0.001});
    draft_policy policy = exact_policy();
    policy.fallback.enabled = true;
    generation_options options;
    options.clock = std::ref(clock);
    generator<function_model> spec(target, chain, policy, options);
    spec.add_drafter(greedy_drafter(cheap_draft));
    spec.generate(prompt, 256);
    CHECK(spec.stats().fallback_steps == 0);
    CHECK(spec.stats().plain_steps <= 2 * policy.fallback.probe_steps + 8);
    CHECK(spec.stats().mean_acceptance_length() > 2.0);
}

TEST_CASE("time in the target and in the draft is measured separately") {
    fake_clock clock;
    function_model target = hash_target(0, 2048, {&clock, 1.0, 0.25});
    function_model draft_model = hash_draft(0.15f, 0, {&clock, 0.125, 0.0});
    generation_options options;
    options.clock = std::ref(clock);
    generator<function_model> spec(target, sampler_chain(sampling_params::greedy()), exact_policy(), options);
    spec.add_drafter(greedy_drafter(draft_model));
    spec.generate(prompt, 100);
    const auto& s = spec.stats();
    CHECK(s.target_seconds == doctest::Approx(1.0 * double(target.calls) + 0.25 * double(target.tokens_evaluated)));
    CHECK(s.draft_seconds == doctest::Approx(0.125 * double(draft_model.calls)));
    CHECK(s.per_drafter[0].seconds == doctest::Approx(s.draft_seconds));
    // Decoding's calls by their tokens m: each cost 1 + 0.25 m; with the prompt's prefill, all of them.
    int64_t calls = 0;
    double seconds = 0.0;
    for (size_t i = 0; i < s.target_calls_by_tokens.size(); ++i) {
        CAPTURE(i);
        CHECK(s.target_seconds_by_tokens[i] == doctest::Approx(double(s.target_calls_by_tokens[i]) * (1.0 + 0.25 * double(i + 1))));
        calls += s.target_calls_by_tokens[i];
        seconds += s.target_seconds_by_tokens[i];
    }
    CHECK(s.target_calls_by_tokens.at(0) == s.plain_steps);
    CHECK(calls == s.target_calls - 1);
    CHECK(seconds + 1.0 + 0.25 * double(prompt.size() - 1) == doctest::Approx(s.target_seconds));
}

TEST_CASE("after a run the target's and the draft's caches agree with the sequence") {
    function_model target = hash_target();
    function_model draft_model = hash_draft(0.3f);
    generator<function_model> spec(target, sampler_chain(sampling_params::greedy()), exact_policy());
    spec.add_drafter(greedy_drafter(draft_model));
    const auto out = spec.generate(prompt, 150).tokens;
    std::vector<int32_t> sequence = prompt;
    sequence.insert(sequence.end(), out.begin(), out.end());
    REQUIRE(target.cache_length() == int32_t(sequence.size()) - 1);
    CHECK(std::equal(target.cache().begin(), target.cache().end(), sequence.begin()));
    // the draft's cache holds a prefix of the sequence and then, at most, its own rejected drafts
    const auto dc = draft_model.cache();
    const auto diverge = std::mismatch(dc.begin(), dc.end(), sequence.begin(), sequence.end()).first - dc.begin();
    CHECK(diverge >= int64_t(sequence.size()) - 1 - spec.policy().n_max);
    // a second run starts from empty caches and repeats itself
    CHECK(spec.generate(prompt, 150).tokens == out);
}

TEST_CASE("the n-gram drafter proposes what followed the most recent longest match") {
    ngram_drafter d(ngram_params{1, 3});
    draft out;
    const std::vector<int32_t> seq{7, 1, 2, 3, 9, 1, 2, 3, 4, 5, 8, 2, 3};
    d.begin(seq);
    d.propose({seq, 4, 0.0f}, out);
    // suffix (8?) no; "2 3" last seen at 6..7 followed by 4 5 8 2 (3-gram "8 2 3" unseen)
    CHECK(out.tokens == std::vector<int32_t>{4, 5, 8, 2});
    CHECK(out.point_mass());
    d.propose({seq, 2, 0.0f}, out);
    CHECK(out.tokens == std::vector<int32_t>{4, 5});
    // continuation running into the end repeats the period
    const std::vector<int32_t> cyc{5, 6, 7, 5, 6, 7, 5};
    d.begin(cyc);
    d.propose({cyc, 6, 0.0f}, out);
    CHECK(out.tokens == std::vector<int32_t>{6, 7, 5, 6, 7, 5});
    const std::vector<int32_t> fresh{1, 2, 3, 4};
    d.begin(fresh);
    d.propose({fresh, 4, 0.0f}, out);
    CHECK(out.tokens.empty());
}

TEST_CASE("a draft model proposes its greedy continuation, or samples and reports the q it drew from") {
    function_model draft_model = hash_draft(0.0f);
    model_drafter<function_model> greedy(draft_model, sampler_chain(sampling_params::greedy()));
    std::vector<int32_t> seq = prompt;
    greedy.begin(seq);
    draft out;
    greedy.propose({seq, 6, 0.0f}, out);
    REQUIRE(out.tokens.size() == 6);
    CHECK(out.point_mass());
    const sampler_chain argmax(sampling_params::greedy());
    std::vector<int32_t> cont = seq;
    for (int32_t x : out.tokens) {
        CHECK(x == argmax.sample(draft_model.logits_after(cont)));
        cont.push_back(x);
    }

    sampling_params dp;
    dp.temperature = 1.5f;
    dp.top_k = 8;
    dp.seed = 3;
    function_model other = hash_draft(0.0f);
    model_drafter<function_model> sampled(other, sampler_chain(dp));
    sampled.begin(seq);
    sampled.propose({seq, 5, 0.0f}, out);
    REQUIRE(out.tokens.size() == 5);
    REQUIRE(out.q.size() == 5);
    sampler_chain reference(dp);
    reference.accept(seq);
    for (size_t i = 0; i < 5; ++i) {
        const token_distribution q = reference.distribution(other.logits_after(reference.history()));
        CHECK(q.size() == 8);
        CHECK(out.q[i].probability(out.tokens[i]) > 0.0f);
        CHECK(out.q[i].probability(out.tokens[i]) == q.probability(out.tokens[i]));
        reference.accept(out.tokens[i]);
    }
}

TEST_CASE("bad input to generate and bad drafts raise llmrt::error") {
    function_model target = hash_target(0, 64);
    generator<function_model> g(target, sampler_chain(sampling_params::greedy()), exact_policy());
    CHECK_THROWS_AS(g.generate(std::vector<int32_t>{}, 5), llmrt::error);
    CHECK_THROWS_AS(g.generate(std::vector<int32_t>{1, vocab_size}, 5), llmrt::error);
    CHECK_THROWS_AS(g.generate(std::vector<int32_t>(65, 1), 5), llmrt::error);
    CHECK_THROWS_AS(g.generate(prompt, -1), llmrt::error);

    draft too_long;
    too_long.tokens.assign(40, 1);
    generator<function_model> g2(target, sampler_chain(sampling_params::greedy()), exact_policy());
    g2.add_drafter(std::make_unique<fixed_drafter>(too_long));
    CHECK_THROWS_AS(g2.generate(prompt, 20), llmrt::error);

    draft lying;  // claims q(x) = 0 for its own token
    lying.tokens = {4};
    lying.q = {token_distribution::point_mass(5)};
    sampling_params sp;
    sp.seed = 1;
    generator<function_model> g3(target, sampler_chain(sp), exact_policy());
    g3.add_drafter(std::make_unique<fixed_drafter>(lying));
    CHECK_THROWS_AS(g3.generate(prompt, 20), llmrt::error);

    draft_policy bad = exact_policy();
    bad.n_min = 0;
    CHECK_THROWS_AS(generator<function_model>(target, sampler_chain(), bad), llmrt::error);
}
