// The members of a sampler chain. Each stage narrows or reshapes a set of candidate tokens with
// their logits; the chain turns the survivors into a token_distribution at the end.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "llmrt/core/error.hpp"

namespace llmrt::sample {

struct candidate {
    int32_t id = 0;
    float logit = 0.0f;
};

// Candidates with flags that let stages skip work: `sorted` = descending logit (ties: ascending
// id); `identity` = the whole vocabulary in id order, so items[id] is token id.
struct candidate_set {
    std::vector<candidate> items;
    bool sorted = false;
    bool identity = false;

    // Loads one row of logits. NaN or +inf would poison every probability, so they are refused;
    // −inf is a legitimate mask.
    void load(std::span<const float> logits) {
        check(!logits.empty(), errc::invalid_argument, "sampler chain: empty logits row");
        items.resize(logits.size());
        for (size_t i = 0; i < logits.size(); ++i) {
            check_logit(i, logits[i]);
            items[i] = {int32_t(i), logits[i]};
        }
        sorted = false;
        identity = true;
    }

    // load(logits), then top_k_stage{k}, in one pass and without writing the whole row out: the k
    // first candidates in `before`'s order, sorted (0 < k < logits.size()). A heap keeps the k best
    // seen so far with the worst on top; a later logit must be strictly larger to enter, since a
    // later id loses a tie.
    void load_top_k(std::span<const float> logits, size_t k) {
        check(!logits.empty() && k > 0 && k < logits.size(), errc::invalid_argument, [&] {
            return "sampler chain: top " + std::to_string(k) + " of a row of " + std::to_string(logits.size());
        });
        items.clear();
        items.reserve(k);
        for (size_t i = 0; i < logits.size(); ++i) {
            const float l = logits[i];
            check_logit(i, l);
            if (items.size() < k) {
                items.push_back({int32_t(i), l});
                std::push_heap(items.begin(), items.end(), before);
            } else if (l > items.front().logit) {
                std::pop_heap(items.begin(), items.end(), before);
                items.back() = {int32_t(i), l};
                std::push_heap(items.begin(), items.end(), before);
            }
        }
        std::sort_heap(items.begin(), items.end(), before);
        sorted = true;
        identity = false;
    }

    // NaN or +inf would poison every probability; −inf is a legitimate mask.
    static void check_logit(size_t i, float l) {
        check(!std::isnan(l) && l != std::numeric_limits<float>::infinity(), errc::invalid_argument, [&] {
            return "sampler chain: logit of token " + std::to_string(i) + " is " + std::to_string(l);
        });
    }

    static bool before(const candidate& a, const candidate& b) noexcept {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    }

    void sort_descending() {
        if (!sorted) std::sort(items.begin(), items.end(), before);
        sorted = true;
        identity = false;
    }

    float max_logit() const {
        float m = -std::numeric_limits<float>::infinity();
        for (const auto& c : items) m = std::max(m, c.logit);
        return m;
    }

    // softmax over the current candidates, in items order, in double.
    std::vector<double> probabilities() const {
        const float m = max_logit();
        check(m > -std::numeric_limits<float>::infinity(), errc::invalid_argument,
              "sampler chain: every candidate token is masked (all logits are -inf)");
        std::vector<double> p(items.size());
        double total = 0.0;
        for (size_t i = 0; i < items.size(); ++i) total += p[i] = std::exp(double(items[i].logit) - double(m));
        for (auto& v : p) v /= total;
        return p;
    }
};

// Greedy: keeps the argmax (the lowest id among equal logits), a point mass.
struct greedy_stage {
    void validate() const {}
    void apply(candidate_set& c, std::span<const int32_t>) const {
        check(!c.items.empty(), errc::invalid_argument, "greedy: no candidates");
        candidate best = c.items[0];
        for (const auto& x : c.items)
            if (candidate_set::before(x, best)) best = x;
        c.items.assign(1, best);
        c.sorted = true;
        c.identity = false;
    }
};

// logit / t, t > 0 (t ≤ 0 in sampling_params means greedy_stage instead).
struct temperature_stage {
    float t = 1.0f;
    void validate() const {
        check(std::isfinite(t) && t > 0.0f, errc::invalid_argument,
              [&] { return "temperature: " + std::to_string(t) + " (need a finite value > 0; use greedy for 0)"; });
    }
    void apply(candidate_set& c, std::span<const int32_t>) const {
        if (t == 1.0f) return;
        for (auto& x : c.items) x.logit /= t;
    }
};

// Keeps the k largest logits; k ≤ 0 or k ≥ size keeps everything.
struct top_k_stage {
    int32_t k = 40;
    void validate() const {}
    void apply(candidate_set& c, std::span<const int32_t>) const {
        if (k <= 0 || size_t(k) >= c.items.size()) return;
        if (!c.sorted) std::partial_sort(c.items.begin(), c.items.begin() + k, c.items.end(), candidate_set::before);
        c.items.resize(size_t(k));
        c.sorted = true;
        c.identity = false;
    }
};

// Nucleus: the smallest prefix of the sorted candidates whose mass reaches p (at least one).
struct top_p_stage {
    float p = 0.95f;
    void validate() const {
        check(p > 0.0f && p <= 1.0f, errc::invalid_argument,
              [&] { return "top_p: " + std::to_string(p) + " (need 0 < top_p <= 1; 1 turns it off)"; });
    }
    void apply(candidate_set& c, std::span<const int32_t>) const {
        if (p >= 1.0f) return;
        // The normaliser needs every candidate, the order only the nucleus: sort a growing head
        // (128, 1024, ... candidates) until its mass reaches p, instead of the whole vocabulary.
        const double m = double(c.max_logit());
        check(m > -std::numeric_limits<double>::infinity(), errc::invalid_argument,
              "sampler chain: every candidate token is masked (all logits are -inf)");
        double total = 0.0;
        for (const auto& x : c.items) total += std::exp(double(x.logit) - m);
        for (size_t head = 128;; head *= 8) {
            head = std::min(head, c.items.size());
            if (!c.sorted)
                std::partial_sort(c.items.begin(), c.items.begin() + std::ptrdiff_t(head), c.items.end(),
                                  candidate_set::before);
            double cumulative = 0.0;
            for (size_t n = 0; n < head; ++n) {
                cumulative += std::exp(double(c.items[n].logit) - m) / total;
                if (cumulative >= double(p)) {
                    c.items.resize(n + 1);
                    c.sorted = true;
                    c.identity = false;
                    return;
                }
            }
            if (head == c.items.size()) {  // rounding kept the sum just below p: keep everything
                c.sorted = true;
                c.identity = false;
                return;
            }
        }
    }
};

// Keeps tokens with probability ≥ p · max probability, i.e. logit ≥ max logit + ln p.
struct min_p_stage {
    float p = 0.05f;
    void validate() const {
        check(p >= 0.0f && p <= 1.0f, errc::invalid_argument,
              [&] { return "min_p: " + std::to_string(p) + " (need 0 <= min_p <= 1; 0 turns it off)"; });
    }
    void apply(candidate_set& c, std::span<const int32_t>) const {
        if (p <= 0.0f) return;
        const double threshold = double(c.max_logit()) + std::log(double(p));
        const auto end = std::stable_partition(c.items.begin(), c.items.end(),
                                               [&](const candidate& x) { return double(x.logit) >= threshold; });
        if (end != c.items.end()) {
            c.items.erase(end, c.items.end());
            c.identity = false;
        }
    }
};

// Locally typical sampling (Meister et al. 2022): rank tokens by |−ln p − H| (H the entropy) and
// keep the smallest prefix of that ranking whose mass reaches p.
struct typical_stage {
    float p = 1.0f;
    void validate() const {
        check(p > 0.0f && p <= 1.0f, errc::invalid_argument,
              [&] { return "typical_p: " + std::to_string(p) + " (need 0 < typical_p <= 1; 1 turns it off)"; });
    }
    void apply(candidate_set& c, std::span<const int32_t>) const {
        if (p >= 1.0f) return;
        const std::vector<double> prob = c.probabilities();
        double entropy = 0.0;
        for (double q : prob)
            if (q > 0.0) entropy -= q * std::log(q);
        struct ranked {
            double score;
            double prob;
            candidate cand;
        };
        std::vector<ranked> r(prob.size());
        for (size_t i = 0; i < prob.size(); ++i) {
            const double surprise = prob[i] > 0.0 ? -std::log(prob[i]) : std::numeric_limits<double>::infinity();
            r[i] = {std::abs(surprise - entropy), prob[i], c.items[i]};
        }
        std::sort(r.begin(), r.end(), [](const ranked& a, const ranked& b) {
            return a.score < b.score || (a.score == b.score && a.cand.id < b.cand.id);
        });
        double cumulative = 0.0;
        size_t n = 0;
        while (n < r.size()) {
            cumulative += r[n++].prob;
            if (cumulative >= double(p)) break;
        }
        c.items.resize(n);
        for (size_t i = 0; i < n; ++i) c.items[i] = r[i].cand;
        c.sorted = false;
        c.identity = false;
    }
};

// Repetition, frequency and presence penalties over the last `last_n` tokens of the history
// (−1: all of it, 0: off). For a token seen `count` > 0 times:
//   logit ← logit ≤ 0 ? logit · repeat : logit / repeat;  logit ← logit − count · frequency − presence
struct penalty_stage {
    int32_t last_n = 64;
    float repeat = 1.0f;
    float frequency = 0.0f;
    float presence = 0.0f;

    void validate() const {
        check(last_n >= -1, errc::invalid_argument,
              [&] { return "penalty_last_n: " + std::to_string(last_n) + " (need -1 for all, 0 for off, or > 0)"; });
        check(std::isfinite(repeat) && repeat > 0.0f, errc::invalid_argument,
              [&] { return "repeat_penalty: " + std::to_string(repeat) + " (need a finite value > 0; 1 turns it off)"; });
        check(std::isfinite(frequency) && std::isfinite(presence), errc::invalid_argument, [&] {
            return "frequency_penalty " + std::to_string(frequency) + " / presence_penalty " + std::to_string(presence) +
                   ": need finite values";
        });
    }

    bool active() const noexcept { return last_n != 0 && (repeat != 1.0f || frequency != 0.0f || presence != 0.0f); }

    void apply(candidate_set& c, std::span<const int32_t> history) const {
        if (!active() || history.empty()) return;
        const size_t n = last_n < 0 ? history.size() : std::min(history.size(), size_t(last_n));
        std::unordered_map<int32_t, int32_t> counts;
        for (int32_t t : history.subspan(history.size() - n)) ++counts[t];
        const auto penalize = [&](candidate& x, int32_t count) {
            x.logit = x.logit <= 0.0f ? x.logit * repeat : x.logit / repeat;
            x.logit -= float(count) * frequency + presence;
        };
        if (c.identity) {
            for (const auto& [id, count] : counts)
                if (id >= 0 && size_t(id) < c.items.size()) penalize(c.items[size_t(id)], count);
        } else {
            for (auto& x : c.items)
                if (const auto it = counts.find(x.id); it != counts.end()) penalize(x, it->second);
        }
        c.sorted = false;
    }
};

using sampler_stage =
    std::variant<penalty_stage, top_k_stage, typical_stage, top_p_stage, min_p_stage, temperature_stage, greedy_stage>;

}  // namespace llmrt::sample
