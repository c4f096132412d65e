// A sampler chain: ordered stages over a row of logits, then a draw with the counter-based RNG.
//
// Its state is the token history (penalties read the last n tokens) and the seed; the draw for
// the token at sequence position t uses uniform01(seed, t, stream) with t = history().size().
// Restoring the chain after a partially accepted draft is therefore restore(checkpoint): the
// history shrinks back, and the RNG "rewinds" with it because the position is its counter.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/sample/rng.hpp"
#include "llmrt/sample/samplers.hpp"
#include "llmrt/sample/token_distribution.hpp"

namespace llmrt::sample {

// The usual knobs, with llama.cpp's common defaults pinned here so a default chain behaves the
// same as theirs. build_stages() orders them as llama.cpp does:
//   penalties → top_k → typical → top_p → min_p → temperature (or greedy when temperature ≤ 0).
struct sampling_params {
    float temperature = 0.8f;   // ≤ 0: greedy
    int32_t top_k = 40;         // ≤ 0: off
    float top_p = 0.95f;        // 1: off
    float min_p = 0.05f;        // 0: off
    float typical_p = 1.0f;     // 1: off
    int32_t penalty_last_n = 64;  // −1: the whole history, 0: off
    float repeat_penalty = 1.0f;  // 1: off
    float frequency_penalty = 0.0f;
    float presence_penalty = 0.0f;
    uint64_t seed = 0;

    static sampling_params greedy() {
        sampling_params p;
        p.temperature = 0.0f;
        return p;
    }

    std::vector<sampler_stage> build_stages() const {
        std::vector<sampler_stage> s;
        // Room for every stage up front: g++ 13 at -O3 reports a false stringop-overflow in the
        // vector's regrowth path for variants (and the project builds with -Werror).
        s.reserve(6);
        const penalty_stage pen{penalty_last_n, repeat_penalty, frequency_penalty, presence_penalty};
        pen.validate();
        if (pen.active()) s.emplace_back(pen);
        if (top_k > 0) s.emplace_back(top_k_stage{top_k});
        s.emplace_back(typical_stage{typical_p});
        s.emplace_back(top_p_stage{top_p});
        s.emplace_back(min_p_stage{min_p});
        check(!std::isnan(temperature), errc::invalid_argument, "temperature is NaN");
        if (temperature <= 0.0f)
            s.emplace_back(greedy_stage{});
        else
            s.emplace_back(temperature_stage{temperature});
        return s;
    }
};

// One chain per sequence: it keeps scratch space between calls, so it is not shared across threads.
class sampler_chain {
public:
    explicit sampler_chain(const sampling_params& params = {}, rng_stream stream = rng_stream::target_sample)
        : sampler_chain(params.build_stages(), params.seed, stream) {}

    sampler_chain(std::vector<sampler_stage> stages, uint64_t seed, rng_stream stream = rng_stream::target_sample)
        : stages_(std::move(stages)), seed_(seed), stream_(stream) {
        for (const auto& s : stages_) {
            std::visit([](const auto& stage) { stage.validate(); }, s);
            if (std::holds_alternative<greedy_stage>(s)) greedy_ = true;
        }
        argmax_ = greedy_ && std::all_of(stages_.begin(), stages_.end(), [](const sampler_stage& s) {
            // Stages that keep the largest logit, and its rank among equal ones: the lowest id.
            // Penalties and typical sampling can drop it; a temperature can round two logits equal.
            if (const auto* p = std::get_if<penalty_stage>(&s)) return !p->active();
            if (const auto* t = std::get_if<typical_stage>(&s)) return t->p >= 1.0f;
            return std::holds_alternative<greedy_stage>(s) || std::holds_alternative<top_k_stage>(s) ||
                   std::holds_alternative<top_p_stage>(s) || std::holds_alternative<min_p_stage>(s);
        });
    }

    // ---- state ----
    void accept(int32_t token) {
        check(token >= 0, errc::invalid_argument,
              [&] { return "sampler_chain::accept: token id " + std::to_string(token) + " is negative"; });
        history_.push_back(token);
    }
    void accept(std::span<const int32_t> tokens) {
        for (int32_t t : tokens) accept(t);
    }
    std::span<const int32_t> history() const noexcept { return history_; }
    uint64_t position() const noexcept { return history_.size(); }  // the position of the next token

    size_t checkpoint() const noexcept { return history_.size(); }
    void restore(size_t checkpoint) {
        check(checkpoint <= history_.size(), errc::invalid_argument, [&] {
            return "sampler_chain::restore: checkpoint " + std::to_string(checkpoint) + " is past the history of " +
                   std::to_string(history_.size()) + " tokens";
        });
        history_.resize(checkpoint);
    }
    void reset() noexcept { history_.clear(); }

    uint64_t seed() const noexcept { return seed_; }
    void set_seed(uint64_t seed) noexcept { seed_ = seed; }
    rng_stream stream() const noexcept { return stream_; }
    void set_stream(rng_stream s) noexcept { stream_ = s; }

    // True when the chain always yields a point mass (it contains greedy).
    bool is_greedy() const noexcept { return greedy_; }
    // True when the chain's token is always its row's argmax, the first index of the largest
    // logit, whatever the history: greedy after stages that all keep that logit. A model that finds
    // the argmax on its device (greedy_model) then needs to read back no logits.
    bool picks_argmax() const noexcept { return argmax_; }
    std::span<const sampler_stage> stages() const noexcept { return stages_; }

    // ---- processing ----
    // The fully processed distribution of the next token, given one row of logits.
    token_distribution distribution(std::span<const float> logits) const {
        // A chain that starts with top-k (no penalty before it) loads only those k candidates:
        // the same set and order as the whole row and the stage give, in one pass.
        std::size_t first = 0;
        const top_k_stage* top = stages_.empty() ? nullptr : std::get_if<top_k_stage>(&stages_.front());
        if (top && top->k > 0 && std::size_t(top->k) < logits.size()) {
            work_.load_top_k(logits, std::size_t(top->k));
            first = 1;
        } else {
            work_.load(logits);
        }
        return finish(first);
    }

    // The k of a chain whose first stage is top-k (k > 0), else 0. Such a chain's distribution
    // depends on a row's k best candidates alone, which a model can pick on its device
    // (sample::top_k_model), so that k ids and logits travel instead of the vocabulary's logits.
    int32_t leading_top_k() const noexcept {
        const top_k_stage* top = stages_.empty() ? nullptr : std::get_if<top_k_stage>(&stages_.front());
        return top && top->k > 0 ? top->k : 0;
    }

    // distribution(row) from the row's best candidates alone: ids and logits of at least
    // leading_top_k() of them, best first in (logit descending, id ascending) order, as the graph's
    // top_k gives them; the first leading_top_k() are used. The same distribution as the whole row
    // gives whenever leading_top_k() is below the vocabulary's size.
    token_distribution distribution_of_top(std::span<const int32_t> ids, std::span<const float> logits) const {
        const int32_t k = leading_top_k();
        check(k > 0 && ids.size() == logits.size() && ids.size() >= std::size_t(k), errc::invalid_argument, [&] {
            return "sampler_chain::distribution_of_top: " + std::to_string(ids.size()) + " ids and " +
                   std::to_string(logits.size()) + " logits for a chain whose first stage keeps the top " + std::to_string(k) +
                   (k > 0 ? "" : " (the chain does not start with top-k)");
        });
        work_.items.resize(std::size_t(k));
        for (std::size_t i = 0; i < std::size_t(k); ++i) {
            candidate_set::check_logit(std::size_t(std::max(ids[i], 0)), logits[i]);
            work_.items[i] = {ids[i], logits[i]};
            // A model that picked them wrongly would give another distribution silently.
            check(ids[i] >= 0 && (i == 0 || candidate_set::before(work_.items[i - 1], work_.items[i])),
                  errc::invalid_argument, [&] {
                      return "sampler_chain::distribution_of_top: candidate " + std::to_string(i) + " (token " +
                             std::to_string(ids[i]) + ", logit " + std::to_string(logits[i]) +
                             ") is negative or does not follow the one before in (logit descending, id ascending) order";
                  });
        }
        work_.sorted = true;
        work_.identity = false;
        return finish(1);
    }

    // The chain's uniform at the current position, for a stream (its own by default).
    double uniform() const noexcept { return uniform01(seed_, position(), stream_); }
    double uniform(rng_stream s) const noexcept { return uniform01(seed_, position(), s); }

    // Samples the next token (does not accept it).
    int32_t sample(std::span<const float> logits) const {
        return pick(distribution(logits));
    }
    // The same, from a row's best candidates (distribution_of_top).
    int32_t sample_top(std::span<const int32_t> ids, std::span<const float> logits) const {
        return pick(distribution_of_top(ids, logits));
    }

private:
    int32_t pick(const token_distribution& d) const { return greedy_ ? d.argmax() : d.draw(uniform()); }

    // The stages from `first` on, applied to work_, and the survivors' distribution.
    token_distribution finish(std::size_t first) const {
        for (std::size_t i = first; i < stages_.size(); ++i)
            std::visit([&](const auto& stage) { stage.apply(work_, history_); }, stages_[i]);
        check(!work_.items.empty(), errc::invalid_argument, "sampler chain: no candidate survived the stages");
        if (work_.items.size() == 1) return token_distribution::point_mass(work_.items[0].id);
        const std::vector<double> p = work_.probabilities();
        std::vector<std::pair<int32_t, double>> weights(p.size());
        for (size_t i = 0; i < p.size(); ++i) weights[i] = {work_.items[i].id, p[i]};
        return token_distribution::from_weights(std::move(weights));
    }

    std::vector<sampler_stage> stages_;
    uint64_t seed_ = 0;
    rng_stream stream_ = rng_stream::target_sample;
    bool greedy_ = false;
    bool argmax_ = false;
    std::vector<int32_t> history_;
    mutable candidate_set work_;  // scratch, reused across calls
};

}  // namespace llmrt::sample
