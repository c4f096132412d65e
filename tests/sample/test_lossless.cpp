// Lossless speculative sampling keeps the target distribution: a chi-square test over the joint
// distribution of the first three generated tokens, on small synthetic models, with penalties in
// the target's chain so that stateful samplers must be advanced along the draft. The same harness
// run with deliberately wrong rejection rules must fail, which shows that the test can fail.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "llmrt/sample/sample.hpp"
#include "llmrt/testing/model_doubles.hpp"

using namespace llmrt::sample;
using namespace llmrt::sample::testing;

namespace {

constexpr int32_t vocab_size = 6;
constexpr int32_t n_generated = 3;

const std::vector<std::vector<double>> target_table{
    {0.30, 0.25, 0.20, 0.10, 0.10, 0.05}, {0.05, 0.10, 0.40, 0.25, 0.15, 0.05},
    {0.20, 0.20, 0.05, 0.05, 0.30, 0.20}, {0.10, 0.30, 0.10, 0.30, 0.10, 0.10},
    {0.25, 0.05, 0.25, 0.05, 0.25, 0.15}, {0.15, 0.15, 0.15, 0.15, 0.20, 0.20}};
// The draft disagrees a lot and misses some tokens entirely (q = 0 where p > 0: only the
// residual can produce them).
const std::vector<std::vector<double>> draft_table{
    {0.10, 0.50, 0.00, 0.20, 0.10, 0.10}, {0.30, 0.10, 0.10, 0.10, 0.40, 0.00},
    {0.05, 0.40, 0.05, 0.30, 0.10, 0.10}, {0.40, 0.10, 0.00, 0.10, 0.20, 0.20},
    {0.10, 0.30, 0.10, 0.30, 0.10, 0.10}, {0.05, 0.05, 0.50, 0.20, 0.10, 0.10}};

sampling_params target_params() {
    sampling_params p;
    p.temperature = 0.9f;
    p.top_k = 5;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.6f;
    p.presence_penalty = 0.3f;
    p.penalty_last_n = 3;
    return p;
}

sampling_params draft_params() {
    sampling_params p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    return p;
}

int cell(const std::vector<int32_t>& tokens) {
    int c = 0;
    for (int32_t t : tokens) c = c * vocab_size + t;
    return c;
}

// P(y1, y2, y3 | prompt) under the target chain, by enumeration.
std::vector<double> exact_joint(const std::vector<int32_t>& prompt) {
    std::vector<double> joint(size_t(std::pow(vocab_size, n_generated)), 0.0);
    const logits_function f = table_logits(target_table);
    std::vector<float> logits(vocab_size);
    std::vector<int32_t> seq = prompt, generated;
    const auto recurse = [&](auto&& self, double mass) -> void {
        if (int32_t(generated.size()) == n_generated) {
            joint[size_t(cell(generated))] += mass;
            return;
        }
        sampler_chain chain(target_params());
        chain.accept(seq);
        f(seq, logits);
        const token_distribution p = chain.distribution(logits);
        for (const auto& e : p.entries()) {
            seq.push_back(e.id);
            generated.push_back(e.id);
            self(self, mass * double(e.p));
            seq.pop_back();
            generated.pop_back();
        }
    };
    recurse(recurse, 1.0);
    return joint;
}

struct chi_square_result {
    double statistic = 0.0;
    double critical = 0.0;  // at the false-alarm rate
    int degrees = 0;
    bool impossible_outcome = false;  // a sample where the target has probability 0
    speculative_stats stats;
    bool passes() const { return !impossible_outcome && statistic < critical; }
};

// Chi-square critical value by the Wilson–Hilferty approximation:
//   χ²_α(k) ≈ k (1 − 2/(9k) + z_α √(2/(9k)))³
double chi_square_critical(int k, double z) {
    const double a = 2.0 / (9.0 * k);
    return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

template <class Rule>
chi_square_result run_trials(int trials, verification mode = verification::automatic) {
    const std::vector<int32_t> prompt{0};
    function_model target(make_vocabulary(vocab_size), 64, table_logits(target_table));
    function_model draft_model(make_vocabulary(vocab_size), 64, table_logits(draft_table));
    draft_policy policy;
    policy.n_max = 2;  // one round covers two drafts and the bonus: all three positions
    policy.p_min = 0.0f;
    policy.adaptive.enabled = false;
    policy.fallback.enabled = false;
    policy.mode = mode;
    generator<function_model, Rule> spec(target, sampler_chain(target_params()), policy);
    auto& drafter = spec.add_drafter(
        std::make_unique<model_drafter<function_model>>(draft_model, sampler_chain(draft_params())));

    std::vector<int64_t> counts(size_t(std::pow(vocab_size, n_generated)), 0);
    for (int t = 0; t < trials; ++t) {
        spec.chain().set_seed(0x5eed0000ull + uint64_t(t));
        drafter.chain().set_seed(0xd4af7000ull + uint64_t(t));
        ++counts[size_t(cell(spec.generate(prompt, n_generated).tokens))];
    }

    // Pool cells expected below 5 counts into one, as the chi-square approximation needs.
    const std::vector<double> p = exact_joint(prompt);
    chi_square_result r;
    double pooled_expected = 0.0, pooled_observed = 0.0;
    int bins = 0;
    for (size_t c = 0; c < p.size(); ++c) {
        const double expected = p[c] * trials;
        if (p[c] == 0.0) {
            r.impossible_outcome |= counts[c] > 0;
        } else if (expected < 5.0) {
            pooled_expected += expected;
            pooled_observed += double(counts[c]);
        } else {
            r.statistic += (double(counts[c]) - expected) * (double(counts[c]) - expected) / expected;
            ++bins;
        }
    }
    if (pooled_expected > 0.0) {
        r.statistic += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
        ++bins;
    }
    r.degrees = bins - 1;
    r.critical = chi_square_critical(r.degrees, 3.0902);  // false-alarm rate 1e-3
    r.stats = spec.stats();
    return r;
}

// Wrong: after a rejection, draw from p instead of norm(max(0, p − q)).
struct resample_from_p_rule {
    static bool accept(float p, float q, double r) { return ratio_rule::accept(p, q, r); }
    static token_distribution recovery(const token_distribution& p, const token_distribution&) { return p; }
};

// Wrong: accept with probability p(x), as if the draft were a point mass, ignoring q.
struct ignore_q_rule {
    static bool accept(float p, float, double r) { return r < double(p); }
    static token_distribution recovery(const token_distribution& p, const token_distribution& q) { return residual(p, q); }
};

constexpr int trials = 200000;

}  // namespace

TEST_CASE("speculative sampling with a sampled draft keeps the target distribution (chi-square)") {
    const auto r = run_trials<ratio_rule>(trials);
    MESSAGE("chi2 " << r.statistic << " critical " << r.critical << " df " << r.degrees << ", acceptance rate "
                    << r.stats.acceptance_rate() << ", per position " << r.stats.acceptance_rate_at(0) << " / "
                    << r.stats.acceptance_rate_at(1));
    CHECK(!r.impossible_outcome);
    CHECK(r.statistic < r.critical);
    // the harness exercised acceptance, rejection and the bonus token
    CHECK(r.stats.acceptance_rate() > 0.2);
    CHECK(r.stats.acceptance_rate() < 0.9);
    CHECK(r.stats.accepted_at[1] > trials / 10);
}

TEST_CASE("the chi-square test rejects speculative sampling that resamples from p after a rejection") {
    const auto r = run_trials<resample_from_p_rule>(trials);
    MESSAGE("chi2 " << r.statistic << " critical " << r.critical);
    CHECK_FALSE(r.passes());
}

TEST_CASE("the chi-square test rejects speculative sampling that ignores the draft's q") {
    const auto r = run_trials<ignore_q_rule>(trials);
    MESSAGE("chi2 " << r.statistic << " critical " << r.critical);
    CHECK_FALSE(r.passes());
}

TEST_CASE("sample-and-compare verification of a sampled draft keeps the target distribution (chi-square)") {
    const auto r = run_trials<ratio_rule>(trials / 4, verification::sample_and_compare);
    MESSAGE("chi2 " << r.statistic << " critical " << r.critical << ", acceptance rate " << r.stats.acceptance_rate());
    CHECK(r.passes());
}
