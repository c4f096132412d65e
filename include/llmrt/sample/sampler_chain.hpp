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
        for (std::size_t i = first; i < stages_.size(); ++i)
            std::visit([&](const auto& stage) { stage.apply(work_, history_); }, stages_[i]);
        check(!work_.items.empty(), errc::invalid_argument, "sampler chain: no candidate survived the stages");
        if (work_.items.size() == 1) return token_distribution::point_mass(work_.items[0].id);
        const std::vector<double> p = work_.probabilities();
        std::vector<std::pair<int32_t, double>> weights(p.size());
        for (size_t i = 0; i < p.size(); ++i) weights[i] = {work_.items[i].id, p[i]};
        return token_distribution::from_weights(std::move(weights));
    }

    // The chain's uniform at the current position, for a stream (its own by default).
    double uniform() const noexcept { return uniform01(seed_, position(), stream_); }
    double uniform(rng_stream s) const noexcept { return uniform01(seed_, position(), s); }

    // Samples the next token (does not accept it).
    int32_t sample(std::span<const float> logits) const {
        const token_distribution d = distribution(logits);
        return greedy_ ? d.argmax() : d.draw(uniform());
    }

private:
    std::vector<sampler_stage> stages_;
    uint64_t seed_ = 0;
    rng_stream stream_ = rng_stream::target_sample;
    bool greedy_ = false;
    bool argmax_ = false;
    std::vector<int32_t> history_;
    mutable candidate_set work_;  // scratch, reused across calls
};

}  // namespace llmrt::sample
