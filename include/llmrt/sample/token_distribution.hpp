// A probability distribution over token ids: the output of a sampler chain (p for the target,
// q for a sampling drafter) and the input of verification.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"

namespace llmrt::sample {

struct token_prob {
    int32_t id = 0;
    float p = 0.0f;
};

// Entries are kept in ascending id order with p > 0, normalised to sum to 1 (within float
// rounding). Sampling walks the ids in that order, so a draw is a pure function of the
// probabilities and the uniform, whatever order the sampler chain left its candidates in.
class token_distribution {
public:
    token_distribution() = default;

    static token_distribution point_mass(int32_t id) {
        check(id >= 0, errc::invalid_argument, [&] { return "token_distribution: token id " + std::to_string(id) + " is negative"; });
        token_distribution d;
        d.entries_.push_back({id, 1.0f});
        return d;
    }

    // Non-negative weights in any order (ids unique); zero weights are dropped, the rest
    // normalised. Throws on a negative or non-finite weight, a repeated id, or no positive weight.
    static token_distribution from_weights(std::vector<std::pair<int32_t, double>> weights) {
        const auto by_id = [](const auto& a, const auto& b) { return a.first < b.first; };
        if (!std::is_sorted(weights.begin(), weights.end(), by_id)) std::sort(weights.begin(), weights.end(), by_id);
        double total = 0.0;
        for (size_t i = 0; i < weights.size(); ++i) {
            // Plain variables, not a structured binding: the lambdas below capture them, which
            // clang before 16 refuses for bindings.
            const int32_t id = weights[i].first;
            const double w = weights[i].second;
            check(id >= 0 && std::isfinite(w) && w >= 0.0, errc::invalid_argument, [&] {
                return "token_distribution: token " + std::to_string(id) + " has weight " + std::to_string(w) +
                       " (need a non-negative id and a finite weight >= 0)";
            });
            check(i == 0 || weights[i - 1].first != id, errc::invalid_argument,
                  [&] { return "token_distribution: token " + std::to_string(id) + " appears twice"; });
            total += w;
        }
        check(total > 0.0 && std::isfinite(total), errc::invalid_argument,
              "token_distribution: the weights sum to zero (or overflow): no token can be drawn");
        token_distribution d;
        d.entries_.reserve(weights.size());
        for (const auto& [id, w] : weights)
            if (w > 0.0) {
                const float p = float(w / total);
                if (p > 0.0f) d.entries_.push_back({id, p});
            }
        if (d.entries_.empty()) {  // every weight underflowed to 0 in float: keep the largest
            const auto best = std::max_element(weights.begin(), weights.end(),
                                               [](const auto& a, const auto& b) { return a.second < b.second; });
            d.entries_.push_back({best->first, 1.0f});
        }
        return d;
    }

    std::span<const token_prob> entries() const noexcept { return entries_; }
    size_t size() const noexcept { return entries_.size(); }
    bool empty() const noexcept { return entries_.empty(); }
    bool is_point_mass() const noexcept { return entries_.size() == 1; }

    float probability(int32_t id) const noexcept {
        const auto it = std::lower_bound(entries_.begin(), entries_.end(), id,
                                         [](const token_prob& e, int32_t v) { return e.id < v; });
        return (it != entries_.end() && it->id == id) ? it->p : 0.0f;
    }

    // The most probable token; the lowest id among equals.
    int32_t argmax() const {
        check(!entries_.empty(), errc::invalid_argument, "token_distribution::argmax: empty distribution");
        const token_prob* best = &entries_[0];
        for (const auto& e : entries_)
            if (e.p > best->p) best = &e;
        return best->id;
    }

    // Inverse CDF in id order: the first token whose cumulative mass exceeds u · total.
    int32_t draw(double u) const {
        check(!entries_.empty(), errc::invalid_argument, "token_distribution::draw: empty distribution");
        double total = 0.0;
        for (const auto& e : entries_) total += e.p;
        const double target = u * total;
        double cumulative = 0.0;
        for (const auto& e : entries_) {
            cumulative += e.p;
            if (cumulative > target) return e.id;
        }
        return entries_.back().id;  // u·total rounded up to the total
    }

private:
    std::vector<token_prob> entries_;
};

// norm(max(0, p − q)): what speculative sampling draws from after rejecting a draft token.
// Empty when p ≤ q everywhere (p == q up to rounding): the caller then falls back to p.
inline token_distribution residual(const token_distribution& p, const token_distribution& q) {
    std::vector<std::pair<int32_t, double>> weights;
    double total = 0.0;
    for (const auto& e : p.entries()) {
        const double w = double(e.p) - double(q.probability(e.id));
        if (w > 0.0) {
            weights.emplace_back(e.id, w);
            total += w;
        }
    }
    if (!(total > 0.0)) return {};
    return token_distribution::from_weights(std::move(weights));
}

// Total-variation distance ½ Σ |p − q|; 1 − TV is the acceptance probability of speculative sampling.
inline double total_variation(const token_distribution& p, const token_distribution& q) {
    double sum = 0.0;
    for (const auto& e : p.entries()) sum += std::abs(double(e.p) - double(q.probability(e.id)));
    for (const auto& e : q.entries())
        if (p.probability(e.id) == 0.0f) sum += double(e.p);
    return 0.5 * sum;
}

}  // namespace llmrt::sample
