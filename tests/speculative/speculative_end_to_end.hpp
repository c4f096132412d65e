// Speculative decoding end to end with the real llama model, for any backend case (see
// backend_cases.hpp): the speculative token stream must be the plain one, token for token.
//
// The pair is one random llama as a Q8_0 target and the same weights as a Q2_K draft (every k is
// 256, as Q2_K needs). Each test checks the drafters really drafted and had tokens accepted and
// rejected, so that equality cannot come from speculation never happening. Fallback is off (it
// would decode plainly as soon as speculation measured slower), except in the test of backing off,
// which forces it on a clock of its own; p_min is 0 (a random model's top-1 probability is a few
// percent, which llama.cpp's 0.75 cutoff would never let draft).
//
// A program applies every test here to its backend cases with
//   LLMRT_SPECULATIVE_END_TO_END_TESTS(case_a, case_b, ...);
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <llmrt/core/error.hpp>
#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/model.hpp>
#include <llmrt/sample/sample.hpp>

namespace llmrt::test::speculative {

// The smallest llama whose every k suits Q2_K's 256-value super-blocks.
inline model::llama_shape pair_shape(int32_t n_vocab = 320) {
    return {.n_vocab = n_vocab, .n_embd = 256, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .n_ff = 256, .n_ctx = 512};
}

inline std::shared_ptr<const gguf::file> random_model(qtype type, int32_t n_vocab = 320) {
    return std::make_shared<const gguf::file>(
        gguf::file::from_bytes(model::make_random_llama(pair_shape(n_vocab), type, /*seed=*/3).to_bytes()));
}

// Made once per program: quantizing to Q2_K is the slow part of building the pair.
inline const std::shared_ptr<const gguf::file>& target_file() {
    static const auto f = random_model(qtype::q8_0);
    return f;
}
inline const std::shared_ptr<const gguf::file>& draft_file() {
    static const auto f = random_model(qtype::q2_K);
    return f;
}

// A batch of 8 tokens per forward call, below n_max + 1, so long drafts are verified in pieces.
inline constexpr model::llama_options options{.n_ctx = 400, .max_batch = 8};

// BOS and 8 words repeated 4 times: the n-gram drafter finds matches from the start.
inline std::vector<int32_t> repetitive_prompt() {
    std::vector<int32_t> p{1};
    for (int r = 0; r < 4; ++r)
        for (int i = 0; i < 8; ++i) p.push_back(260 + 7 * i);
    return p;
}

inline sample::draft_policy exact_policy() {
    sample::draft_policy p;
    p.n_max = 12;
    p.p_min = 0.0f;
    p.fallback.enabled = false;
    p.adaptive.cost_aware = false;  // lengths from the tokens alone, not from timings
    return p;
}

// A sampler chain with every kind of stage, penalties included.
inline sample::sampling_params sampling(uint64_t seed) {
    sample::sampling_params p;
    p.temperature = 0.5f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.penalty_last_n = 64;
    p.repeat_penalty = 1.15f;
    p.frequency_penalty = 0.1f;
    p.presence_penalty = 0.1f;
    p.seed = seed;
    return p;
}

// Plain sampling written out, independent of the generator: the prompt, then one token per eval,
// each drawn by the chain at its position.
template <class Model>
std::vector<int32_t> plain_sampling(Model& m, const sample::sampling_params& params, std::span<const int32_t> prompt,
                                    int32_t n) {
    sample::sampler_chain chain(params);
    chain.accept(prompt);
    m.truncate(0);
    const auto vocab = std::size_t(m.vocab_size());
    std::vector<float> rows(prompt.size() * vocab);
    m.eval(prompt, 0, rows);
    std::vector<float> row(rows.end() - std::ptrdiff_t(vocab), rows.end());
    std::vector<int32_t> out;
    while (true) {
        const int32_t y = chain.sample(row);
        chain.accept(y);
        out.push_back(y);
        if (int32_t(out.size()) == n) return out;
        m.eval(std::span<const int32_t>(&out.back(), 1), m.cache_length(), row);
    }
}

// Where two token streams first differ (the shorter length when one is a prefix of the other).
inline std::size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
}

// Both drafters drafted, some draft tokens were accepted and some rejected, and (where the output
// repeats itself enough, as greedy output does here) each drafter had tokens accepted.
inline void check_drafters_worked(const sample::speculative_stats& s, bool each_accepted) {
    REQUIRE(s.per_drafter.size() == 2);
    for (const auto& d : s.per_drafter) {
        INFO("drafter ", d.name, ": ", d.rounds, " drafts, ", d.drafted, " tokens, ", d.accepted, " accepted");
        CHECK(d.rounds > 0);
        if (each_accepted) CHECK(d.accepted > 0);
    }
    INFO("all drafters: ", s.rounds, " drafts, ", s.drafted, " tokens, ", s.accepted, " accepted");
    CHECK(s.accepted > 0);
    CHECK(s.accepted < s.drafted);
}

// The models of one test on one backend.
template <class Case>
struct pair_on_backend {
    using model_type = model::llama_model<typename Case::backend_type>;
    std::unique_ptr<typename Case::backend_type> backend = Case::make();
    std::unique_ptr<model_type> target, draft;

    pair_on_backend() {
        if (!backend) {
            MESSAGE("skipped: no ", Case::name, " device on this machine");
            return;
        }
        target = std::make_unique<model_type>(*backend, target_file(), options);
        draft = std::make_unique<model_type>(*backend, draft_file(), options);
    }
    explicit operator bool() const { return backend != nullptr; }
};

// With the n-gram drafter first and the draft model second, as generator::add_drafter orders them.
template <class Model>
sample::generator<Model> chained_generator(Model& target, Model& draft, const sample::sampling_params& target_params,
                                           const sample::sampling_params& draft_params,
                                           sample::draft_policy policy = exact_policy()) {
    sample::generator<Model> g(target, sample::sampler_chain(target_params), policy, {.stop_at_eos = false, .clock = {}});
    g.add_drafter(std::make_unique<sample::ngram_drafter>());
    g.add_drafter(std::make_unique<sample::model_drafter<Model>>(draft, sample::sampler_chain(draft_params)));
    return g;
}

TEST_CASE_TEMPLATE_DEFINE("greedy speculative decoding with a Q2_K draft model and the n-gram drafter chained gives "
                          "the 256 tokens of plain greedy decoding",
                          Case, greedy_speculative_equals_plain) {
    pair_on_backend<Case> m;
    if (!m) return;
    const std::vector<int32_t> prompt = repetitive_prompt();
    // Plain greedy decoding through the model's own path (the graph's argmax node).
    const std::vector<int32_t> expected = model::generate_greedy(*m.target, prompt, 256);

    const auto greedy = sample::sampling_params::greedy();
    auto g = chained_generator(*m.target, *m.draft, greedy, greedy);
    const sample::generation_result r = g.generate(prompt, 256);

    INFO("first difference at token ", first_difference(r.tokens, expected), " of ", expected.size());
    CHECK(r.tokens == expected);
    CHECK(r.reason == sample::stop_reason::length);
    const auto& s = g.stats();
    check_drafters_worked(s, true);
    CHECK(s.emitted == 256);
    CHECK(s.target_calls < 256);  // fewer target calls than tokens: speculation paid off in calls
    // Drafts longer than max_batch − 1 were verified in more than one forward call.
    CHECK(s.drafted_at.size() >= std::size_t(options.max_batch));
    // The cache holds every sequence token but the last.
    CHECK(m.target->cache_length() == int32_t(prompt.size()) + 256 - 1);
}

TEST_CASE_TEMPLATE_DEFINE("sampling with point-mass drafts gives the token stream of plain sampling with the same "
                          "seed and sampler chain, penalties included",
                          Case, sampled_speculative_equals_plain) {
    pair_on_backend<Case> m;
    if (!m) return;
    const std::vector<int32_t> prompt = repetitive_prompt();
    for (const uint64_t seed : {7u, 8u}) {
        CAPTURE(seed);
        const auto params = sampling(seed);
        const std::vector<int32_t> expected = plain_sampling(*m.target, params, prompt, 128);
        // A greedy draft model and the n-gram drafter: both propose point masses, which the
        // target's own draw (the same RNG value plain sampling uses) accepts or corrects.
        auto g = chained_generator(*m.target, *m.draft, params, sample::sampling_params::greedy());
        const sample::generation_result r = g.generate(prompt, 128);
        INFO("first difference at token ", first_difference(r.tokens, expected), " of ", expected.size());
        CHECK(r.tokens == expected);
        check_drafters_worked(g.stats(), false);
    }
}

TEST_CASE_TEMPLATE_DEFINE("sampled drafts verified by sample-and-compare give the token stream of plain sampling",
                          Case, sample_and_compare_equals_plain) {
    pair_on_backend<Case> m;
    if (!m) return;
    const std::vector<int32_t> prompt = repetitive_prompt();
    const auto params = sampling(21);
    const std::vector<int32_t> expected = plain_sampling(*m.target, params, prompt, 128);
    sample::draft_policy policy = exact_policy();
    policy.mode = sample::verification::sample_and_compare;
    auto draft_params = sampling(99);  // the draft samples at its own temperature and seed
    draft_params.temperature = 0.3f;
    auto g = chained_generator(*m.target, *m.draft, params, draft_params, policy);
    const sample::generation_result r = g.generate(prompt, 128);
    INFO("first difference at token ", first_difference(r.tokens, expected), " of ", expected.size());
    CHECK(r.tokens == expected);
    check_drafters_worked(g.stats(), false);
}

// A model that passes every call on to another and counts the forward calls, splitting an eval
// into calls of max_batch() tokens as llama_model does.
template <class Model>
class forward_counter {
public:
    explicit forward_counter(Model& m) : m_(m) {}
    const sample::vocabulary& vocab() const { return m_.vocab(); }
    int32_t vocab_size() const { return m_.vocab_size(); }
    int32_t context_length() const { return m_.context_length(); }
    int32_t cache_length() const { return m_.cache_length(); }
    int32_t max_batch() const { return m_.max_batch(); }
    void truncate(int32_t n) { m_.truncate(n); }
    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        const auto v = std::size_t(vocab_size());
        for (std::size_t done = 0; done < tokens.size(); ++forwards) {
            const std::size_t n = std::min(tokens.size() - done, std::size_t(max_batch()));
            m_.eval(tokens.subspan(done, n), position + int32_t(done), logits.empty() ? logits : logits.subspan(done * v, n * v));
            done += n;
        }
    }
    int64_t forwards = 0;

private:
    Model& m_;
};

TEST_CASE_TEMPLATE_DEFINE("greedy speculative decoding that backs off to plain decoding gives the tokens of plain "
                          "greedy decoding, the draft model catching up in one forward call per max_batch chunk",
                          Case, backoff_catch_up_equals_plain) {
    pair_on_backend<Case> m;
    if (!m) return;
    const std::vector<int32_t> prompt = repetitive_prompt();
    const std::vector<int32_t> expected = model::generate_greedy(*m.target, prompt, 256);

    // A margin of 0.01 measures speculation slower whatever it costs, and a clock that ticks once
    // per reading makes the schedule the same on every backend: draft, back off, draft again.
    sample::draft_policy policy = exact_policy();
    policy.fallback.enabled = true;
    policy.fallback.margin = 0.01;
    policy.fallback.min_rounds = 2;
    policy.fallback.backoff_tokens = 16;
    policy.fallback.max_backoff_tokens = 32;
    const auto greedy = sample::sampling_params::greedy();
    using model_type = typename pair_on_backend<Case>::model_type;
    forward_counter<model_type> draft(*m.draft);
    sample::generator<model_type> g(*m.target, sample::sampler_chain(greedy), policy,
                                    {.stop_at_eos = false, .clock = [t = 0.0]() mutable { return t += 1.0; }});
    g.add_drafter(std::make_unique<sample::model_drafter<forward_counter<model_type>>>(draft, sample::sampler_chain(greedy)));
    const sample::generation_result r = g.generate(prompt, 256);

    INFO("first difference at token ", first_difference(r.tokens, expected), " of ", expected.size());
    CHECK(r.tokens == expected);
    const auto& s = g.stats();
    const auto& d = s.per_drafter.at(0);
    INFO("fallback steps ", s.fallback_steps, ", drafts ", d.rounds, ", draft forwards ", draft.forwards, " for ",
         d.work.tokens, " tokens, ", d.work.catch_up, " of them caught up");
    CHECK(s.fallback_steps >= policy.fallback.backoff_tokens);
    CHECK(d.rounds > 0);
    CHECK(d.work.forwards == draft.forwards);
    // A proposal costs ceil(caught up / max_batch) calls, then one per draft token but the last:
    // at most caught up / max_batch + 1 + (drafted − 1) calls each; one call per caught-up token
    // would cost about max_batch times more.
    CHECK(draft.forwards <= (d.work.catch_up + options.max_batch - 1) / options.max_batch + d.calls + d.drafted);
    CHECK(d.work.catch_up > 4 * d.calls);
}

TEST_CASE_TEMPLATE_DEFINE("drafting ahead while the target verifies, from a second thread, gives the tokens of plain "
                          "greedy decoding and of plain sampling",
                          Case, draft_ahead_equals_plain) {
    pair_on_backend<Case> m;
    if (!m) return;
    const std::vector<int32_t> prompt = repetitive_prompt();
    using model_type = typename pair_on_backend<Case>::model_type;
    const auto greedy = sample::sampling_params::greedy();
    for (const bool sampled : {false, true}) {
        CAPTURE(sampled);
        const auto params = sampled ? sampling(9) : greedy;
        const std::vector<int32_t> expected =
            sampled ? plain_sampling(*m.target, params, prompt, 128) : model::generate_greedy(*m.target, prompt, 128);
        sample::generator<model_type> g(*m.target, sample::sampler_chain(params), exact_policy(),
                                        {.stop_at_eos = false, .clock = {}, .overlap = true});
        g.add_drafter(std::make_unique<sample::model_drafter<model_type>>(*m.draft, sample::sampler_chain(greedy)));
        const sample::generation_result r = g.generate(prompt, 128);
        INFO("first difference at token ", first_difference(r.tokens, expected), " of ", expected.size());
        CHECK(r.tokens == expected);
        const auto& s = g.stats();
        INFO(s.rounds, " rounds, ", s.drafted_ahead, " drafted ahead, ", s.accepted, " of ", s.drafted, " accepted");
        CHECK(s.rounds > 0);
        CHECK(s.drafted_ahead <= s.rounds);
    }
}

TEST_CASE_TEMPLATE_DEFINE("a draft model with another vocabulary is refused with an error naming the sizes", Case,
                          other_vocabulary_refused) {
    const auto backend = Case::make();
    if (!backend) {
        MESSAGE("skipped: no ", Case::name, " device on this machine");
        return;
    }
    using model_type = model::llama_model<typename Case::backend_type>;
    model_type target(*backend, target_file(), options);
    model_type other(*backend, random_model(qtype::q8_0, 384), options);
    sample::generator<model_type> g(target, sample::sampler_chain(sample::sampling_params::greedy()), exact_policy());
    auto d = std::make_unique<sample::model_drafter<model_type>>(other, sample::sampler_chain(sample::sampling_params::greedy()));
    try {
        g.add_drafter(std::move(d));
        FAIL("add_drafter accepted a draft model with 384 tokens for a target with 320");
    } catch (const llmrt::error& e) {
        CHECK(e.code() == errc::invalid_argument);
        CHECK(std::string(e.what()).find("384") != std::string::npos);
        CHECK(std::string(e.what()).find("320") != std::string::npos);
    }
}

}  // namespace llmrt::test::speculative

// Registers every test above for the given backend cases.
#define LLMRT_SPECULATIVE_END_TO_END_TESTS(...)                                                               \
    TEST_CASE_TEMPLATE_INVOKE(llmrt::test::speculative::greedy_speculative_equals_plain, __VA_ARGS__);         \
    TEST_CASE_TEMPLATE_INVOKE(llmrt::test::speculative::sampled_speculative_equals_plain, __VA_ARGS__);        \
    TEST_CASE_TEMPLATE_INVOKE(llmrt::test::speculative::sample_and_compare_equals_plain, __VA_ARGS__);         \
    TEST_CASE_TEMPLATE_INVOKE(llmrt::test::speculative::backoff_catch_up_equals_plain, __VA_ARGS__);           \
    TEST_CASE_TEMPLATE_INVOKE(llmrt::test::speculative::other_vocabulary_refused, __VA_ARGS__)

// Drafting ahead, for backends that run two models from two threads at once (not Vulkan's one queue).
#define LLMRT_SPECULATIVE_DRAFT_AHEAD_TESTS(...) \
    TEST_CASE_TEMPLATE_INVOKE(llmrt::test::speculative::draft_ahead_equals_plain, __VA_ARGS__)
