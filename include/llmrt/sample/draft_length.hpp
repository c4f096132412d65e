// How long a round's draft may be (draft_policy::adaptive, whose comment gives both rules and the
// measurements behind them), and whether a step is better decoded plainly. The generator reports
// what its rounds measured (observe_round, observe_draft, observe_verify) and asks for a drafter's
// limit and for predicted_slower; the rules and their moving averages live here, apart from the
// rounds' mechanics (drafting ahead, verification, the fallback's schedule), so they read in one
// place.
//
// cost_aware: the length n in 1..n_max that emits tokens fastest,
//   E(n) / (n·d + v(n + 1)),   E(n) = Σ_{i=0..n} α^i,
// with α = hits / (hits + misses) and d (seconds per forward call of the drafter's model) per
// drafter, and v(m) (seconds to evaluate and verify m tokens on the target) shared by all.
// Otherwise: the accepted tokens' moving average plus headroom.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "llmrt/sample/draft_policy.hpp"
#include "llmrt/sample/stats.hpp"

namespace llmrt::sample {

namespace detail {

// x ← the moving average of its observations, the newest weighing w; the first (x < 0: none
// yet) taken as it is. Shared with the generator's other averages.
inline void moving_average(double& x, double value, double w) { x = x < 0.0 ? value : (1.0 - w) * x + w * value; }

}  // namespace detail

class adaptive_draft_length {
public:
    // A round leaves a model drafter one or two sequence tokens to catch up on (the correction or
    // bonus token, and the last draft token when all were accepted), which its proposal evaluates
    // in its first call; a separate catch_up call for them would cost a call a round. A proposal
    // that caught up on more than this is not a round's drafting, and does not measure d.
    static constexpr int64_t max_round_catch_up = 2;

    // A generation begins with `drafters` drafters: their averages start from the priors, and
    // no cost is measured yet.
    void begin(const draft_policy& policy, size_t drafters) {
        const double accepted = std::max(0.0, double(policy.n_max) / 2.0 - double(policy.adaptive.headroom));
        drafters_.assign(drafters, {accepted, prior_hits, prior_misses, -1.0});
        verify_cost_.assign(size_t(policy.n_max) + 2, -1.0);  // this call's chain may read rows or ids
        predicted_slower_steps_ = 0;
        predicted_interval_ = policy.fallback.backoff_tokens;
    }

    // Drafter i's longest draft this round, at most cap.
    int32_t limit(const draft_policy& policy, size_t i, int32_t cap) const {
        const per_drafter& s = drafters_[i];
        int32_t limit = policy.n_max;
        if (policy.adaptive.enabled) {
            const auto& a = policy.adaptive;
            if (a.cost_aware && s.forward_cost >= 0.0 && measured_verify_cost())
                limit = fastest_length(s, std::min(cap, policy.n_max)).n;
            else if (a.cost_aware)
                limit = std::min(unmeasured_length, policy.n_max);
            else
                limit = std::clamp(int32_t(std::ceil(s.ema_accepted)) + a.headroom, 1, policy.n_max);
        }
        return std::min(limit, cap);
    }

    // Drafter i drafted n tokens under `limit` and `accepted` of them were accepted. A fully
    // accepted draft says "at least the limit would have been accepted".
    void observe_round(const draft_policy& policy, size_t i, int32_t n, int32_t limit, int32_t accepted) {
        const double observed = accepted == n ? double(std::max(n, limit)) : double(accepted);
        const double w = policy.adaptive.ema_weight;
        per_drafter& s = drafters_[i];  // its averages start at 0 or more, so none takes a first value as is
        detail::moving_average(s.ema_accepted, observed, w);
        detail::moving_average(s.hits, double(accepted), w);
        detail::moving_average(s.misses, accepted < n ? 1.0 : 0.0, w);
    }

    // d ← the seconds per forward call of the drafter's model: a draft of n tokens takes about n
    // (the caught-up tail shares the first token's call). Per call, not per draft token: priced per
    // token, drafts that p_min cut short (a call for a token they dropped) made a draft accepted 99%
    // of the time look slower than plain (H200 pair: 1.19x for 1.39x). Only from proposals that
    // caught up on no more than a round's tokens: catch_up took the rest (the prompt, a plain
    // phase) apart. A drafter without a model (n-gram: no calls): seconds per proposed token, ~0.
    void observe_draft(size_t i, double seconds, const drafter_work& did, size_t tokens) {
        if (did.catch_up > max_round_catch_up || (did.forwards == 0 && tokens == 0)) return;
        detail::moving_average(drafters_[i].forward_cost, seconds / double(did.forwards > 0 ? size_t(did.forwards) : tokens),
                               cost_weight);
    }

    // v(m) ← the seconds of evaluating m tokens on the target and verifying them (m = 1: a plain step).
    void observe_verify(size_t m, double seconds) {
        if (m < verify_cost_.size()) detail::moving_average(verify_cost_[m], seconds, cost_weight);
    }

    // Cost-aware, with the fallback on: no drafter's fastest length is predicted to beat a plain
    // step's 1 / v(1), all of them measured. After the fallback's backoff_tokens such steps one
    // round speculates anyway, to measure α again; while the prediction stays the same the interval
    // doubles up to its max_backoff_tokens (each such round is a loss when the prediction is right).
    bool predicted_slower(const draft_policy& policy, int32_t cap) {
        const auto& f = policy.fallback;
        if (!policy.adaptive.enabled || !policy.adaptive.cost_aware || !f.enabled || verify_cost_[1] <= 0.0) return false;
        const int32_t upto = std::min(cap, policy.n_max);
        for (const per_drafter& s : drafters_)
            if (s.forward_cost < 0.0 || fastest_length(s, upto).rate > 1.0 / verify_cost_[1]) {
                predicted_interval_ = f.backoff_tokens;
                predicted_slower_steps_ = 0;
                return false;
            }
        if (++predicted_slower_steps_ < predicted_interval_) return true;
        predicted_slower_steps_ = 0;
        predicted_interval_ = std::min(2 * predicted_interval_, f.max_backoff_tokens);
        return false;
    }

private:
    struct per_drafter {
        double ema_accepted = 0.0;  // the acceptance rule: moving average of accepted tokens per round
        // Cost-aware: moving averages of accepted draft tokens and of rejections per round
        // (α = hits / (hits + misses)), and d, the seconds per forward call of the drafter's model
        // (observe_draft), on the generation's clock (< 0: none yet).
        double hits = 0.0, misses = 0.0, forward_cost = -1.0;
    };

    // The n in 1..upto with the largest E(n) / (n·d + v(n + 1)), and that rate in tokens per
    // second (+inf where nothing costs time).
    struct fastest {
        int32_t n = 1;
        double rate = -1.0;
    };
    fastest fastest_length(const per_drafter& s, int32_t upto) const {
        const double alpha = s.hits / (s.hits + s.misses);
        double expected = 1.0, power = 1.0;
        fastest best;
        for (int32_t n = 1; n <= upto; ++n) {
            power *= alpha;
            expected += power;
            const double seconds = double(n) * s.forward_cost + verify_cost(n + 1);
            const double rate = seconds > 0.0 ? expected / seconds : std::numeric_limits<double>::infinity();
            if (rate > best.rate) best = {n, rate};
        }
        return best;
    }

    bool measured_verify_cost() const {
        return std::any_of(verify_cost_.begin(), verify_cost_.end(), [](double c) { return c >= 0.0; });
    }

    // v(m) as measured; one not yet measured is taken as the measured v of the nearest m' < m (costs
    // do not fall with m, so it is a lower bound), or 0 below every measured m: an optimistic guess
    // that a round then tries and measures.
    double verify_cost(int32_t m) const {
        for (int32_t i = std::min(m, int32_t(verify_cost_.size()) - 1); i >= 1; --i)
            if (verify_cost_[size_t(i)] >= 0.0) return verify_cost_[size_t(i)];
        return 0.0;
    }

    // Each call starts from α = 0.75 (3 hits to 1 miss), worth a few rounds.
    static constexpr double prior_hits = 3.0, prior_misses = 1.0;
    // Drafts before the costs are measured: short ones measure them as well and lose less where
    // drafting does not pay (the acceptance rule starts at n_max / 2 = 8); 2 was too short to grow
    // from where drafting does pay (llmrt-bench-speculative-policy on the H200 pair's costs).
    static constexpr int32_t unmeasured_length = 4;
    // The newest measurement's weight in d and v (the generator's look-ahead gate weighs its own
    // measurements the same).
    static constexpr double cost_weight = 0.25;

    std::vector<per_drafter> drafters_;
    std::vector<double> verify_cost_;  // [m]: v(m), on the generation's clock (< 0: none yet)
    int32_t predicted_slower_steps_ = 0, predicted_interval_ = 0;
};

}  // namespace llmrt::sample
