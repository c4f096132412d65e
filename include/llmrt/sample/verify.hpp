// Verification of a draft against the target's logits: the two modes behind one call.
//
// Rows: the target evaluated [last, x_1 .. x_n] in one batch, so row i (0 ≤ i ≤ n) holds the
// logits of the token at sequence position L + i (L = sequence length before the round). Row i is
// turned into p_i by the target's sampler chain *after* the chain has accepted x_1 .. x_i, so
// stateful samplers (penalties) see the draft prefix, and the chain's RNG draws at position L + i.
// Verification stops at the first rejection, so the chain only ever holds accepted tokens: a
// partially accepted draft leaves it exactly where plain decoding would be.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/sample/draft_policy.hpp"
#include "llmrt/sample/drafter.hpp"
#include "llmrt/sample/sampler_chain.hpp"
#include "llmrt/sample/token_distribution.hpp"

namespace llmrt::sample {

// The accept/recover rule of speculative sampling; a type so that opt-in relaxations (and the
// deliberately wrong rule of the statistical test) can be plugged in.
template <class R>
concept rejection_rule = requires(float p, float q, double r, const token_distribution& d) {
    { R::accept(p, q, r) } -> std::convertible_to<bool>;
    { R::recovery(d, d) } -> std::convertible_to<token_distribution>;
};

// Modified rejection sampling (Leviathan et al. 2023; Chen et al. 2023): accept x with
// probability min(1, p(x)/q(x)) (r ~ U[0,1), accept iff r·q(x) < p(x)); on rejection draw from
// norm(max(0, p − q)). Then P(emit x) = min(p, q)(x) + (1 − Σ min(p, q)) · residual(x) = p(x).
struct ratio_rule {
    static bool accept(float p_x, float q_x, double r) noexcept { return r * double(q_x) < double(p_x); }
    static token_distribution recovery(const token_distribution& p, const token_distribution& q) { return residual(p, q); }
};
static_assert(rejection_rule<ratio_rule>, "ratio_rule must model rejection_rule");

struct verify_result {
    int32_t accepted = 0;               // draft tokens accepted
    std::vector<int32_t> emitted;       // accepted drafts, then the correction or bonus token (if any)
};

namespace detail {

// The draft's shape against its vocabulary and its distributions.
inline void check_draft(const draft& d, int32_t vocab_size, const char* who) {
    const size_t n = d.tokens.size();
    check(d.q.empty() || d.q.size() == n, errc::shape_mismatch, [&] {
        return std::string(who) + ": a sampled draft of " + std::to_string(n) + " tokens carries " +
               std::to_string(d.q.size()) + " distributions";
    });
    for (int32_t x : d.tokens)
        check(x >= 0 && x < vocab_size, errc::invalid_argument, [&] {
            return std::string(who) + ": draft token " + std::to_string(x) + " is outside the vocabulary of " +
                   std::to_string(vocab_size);
        });
}

// The verification itself, p_i = row_distribution(i) taken in row order (after the chain accepted
// x_1 .. x_i).
template <class Rule, class RowDistribution>
verify_result verify_rows(const draft& d, sampler_chain& chain, verification mode, int32_t stop_token,
                          RowDistribution&& row_distribution) {
    static_assert(rejection_rule<Rule>, "verify_draft<Rule>: Rule must provide static accept(p, q, r) and recovery(p, q)");
    const size_t n = d.tokens.size();
    const bool ratio_test = mode == verification::automatic && !d.point_mass();

    verify_result result;
    const auto emit = [&](int32_t token) {
        chain.accept(token);
        result.emitted.push_back(token);
        return token != stop_token;
    };
    for (size_t i = 0; i <= n; ++i) {
        const token_distribution p = row_distribution(i);
        if (i == n || !ratio_test) {
            // Sample-and-compare (and the bonus token): the target's own draw, exactly as plain
            // decoding makes it at this position; the draft survives while it matches.
            const int32_t y = chain.is_greedy() ? p.argmax() : p.draw(chain.uniform());
            const bool go_on = emit(y);
            if (i == n || y != d.tokens[i]) break;
            ++result.accepted;
            if (!go_on) break;
            continue;
        }
        const int32_t x = d.tokens[i];
        const float q_x = d.q[i].probability(x);
        check(q_x > 0.0f, errc::invalid_argument, [&] {
            return "verify_draft: draft token " + std::to_string(x) + " at draft position " + std::to_string(i) +
                   " has probability 0 under the q its drafter reported";
        });
        if (Rule::accept(p.probability(x), q_x, chain.uniform(rng_stream::accept_coin))) {
            ++result.accepted;
            if (!emit(x)) break;
            continue;
        }
        token_distribution recovered = Rule::recovery(p, d.q[i]);
        const token_distribution& from = recovered.empty() ? p : recovered;  // p == q up to rounding
        emit(from.draw(chain.uniform(rng_stream::residual)));
        break;
    }
    return result;
}

}  // namespace detail

// Verifies `d` against `rows` ((d.tokens.size() + 1) × vocab_size floats). Every emitted token is
// accepted into `chain`. Stops after an emitted `stop_token` (−1: none), so nothing follows EOS.
template <class Rule = ratio_rule>
verify_result verify_draft(const draft& d, std::span<const float> rows, int32_t vocab_size, sampler_chain& chain,
                           verification mode = verification::automatic, int32_t stop_token = -1) {
    const size_t n = d.tokens.size();
    check(vocab_size > 0 && rows.size() == (n + 1) * size_t(vocab_size), errc::shape_mismatch, [&] {
        return "verify_draft: " + std::to_string(rows.size()) + " logits for a draft of " + std::to_string(n) +
               " tokens and a vocabulary of " + std::to_string(vocab_size) + " (need (n + 1) x vocab)";
    });
    detail::check_draft(d, vocab_size, "verify_draft");
    return detail::verify_rows<Rule>(d, chain, mode, stop_token, [&](size_t i) {
        return chain.distribution(rows.subspan(i * size_t(vocab_size), size_t(vocab_size)));
    });
}

// verify_draft with each row given as its best candidates (a top_k_model's eval_top: k ids and
// logits per row, best first) for a chain that starts with top-k (sampler_chain::leading_top_k()
// <= k): the same result as verify_draft over the whole rows.
template <class Rule = ratio_rule>
verify_result verify_draft_top(const draft& d, std::span<const int32_t> ids, std::span<const float> logits, size_t k,
                               int32_t vocab_size, sampler_chain& chain, verification mode = verification::automatic,
                               int32_t stop_token = -1) {
    const size_t n = d.tokens.size();
    check(k > 0 && ids.size() == (n + 1) * k && logits.size() == ids.size(), errc::shape_mismatch, [&] {
        return "verify_draft_top: " + std::to_string(ids.size()) + " ids and " + std::to_string(logits.size()) +
               " logits for a draft of " + std::to_string(n) + " tokens and " + std::to_string(k) +
               " candidates per row (need (n + 1) x k of each)";
    });
    detail::check_draft(d, vocab_size, "verify_draft_top");
    return detail::verify_rows<Rule>(d, chain, mode, stop_token,
                                     [&](size_t i) { return chain.distribution_of_top(ids.subspan(i * k, k), logits.subspan(i * k, k)); });
}

// verify_draft for a point-mass draft and a chain that picks the argmax (sampler_chain::
// picks_argmax), from the rows' argmax ids alone (ids[i]: row i's argmax, d.tokens.size() + 1 of
// them): the same accepted count and emitted tokens, each accepted into the chain.
inline verify_result verify_argmax(const draft& d, std::span<const int32_t> ids, sampler_chain& chain,
                                   int32_t stop_token = -1) {
    const size_t n = d.tokens.size();
    check(ids.size() == n + 1 && d.point_mass() && chain.picks_argmax(), errc::invalid_argument, [&] {
        return "verify_argmax: " + std::to_string(ids.size()) + " argmax ids for a draft of " + std::to_string(n) +
               " tokens (need n + 1), a point-mass draft and a chain that picks the argmax";
    });
    verify_result result;
    for (size_t i = 0; i <= n; ++i) {
        const int32_t y = ids[i];
        chain.accept(y);
        result.emitted.push_back(y);
        if (i == n || y != d.tokens[i]) break;
        ++result.accepted;
        if (y == stop_token) break;
    }
    return result;
}

}  // namespace llmrt::sample
