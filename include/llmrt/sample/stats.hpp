// Speculative decoding statistics, with vLLM's definitions:
//   acceptance rate           = accepted / drafted
//   mean acceptance length    = 1 + accepted / rounds   (tokens per target call in a drafting
//                                                         round, the bonus or correction included)
//   acceptance rate at pos. i = accepted at i / rounds whose draft reached position i
//                               (with a fixed draft length this is vLLM's accepted_per_pos / drafts)
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmrt::sample {

// What a drafter's model evaluated. Forward calls count an eval of n tokens as
// ceil(n / max_batch), as llama_model splits it.
struct drafter_work {
    int64_t tokens = 0;    // tokens the model evaluated, catching up and drafting
    int64_t catch_up = 0;  // of them, sequence tokens it caught up on: each round's emitted tokens,
                           // and those it missed while another drafter drafted or the fallback
                           // decoded plainly
    int64_t forwards = 0;  // forward calls

    drafter_work& operator+=(const drafter_work& o) noexcept {
        tokens += o.tokens;
        catch_up += o.catch_up;
        forwards += o.forwards;
        return *this;
    }
    drafter_work operator-(const drafter_work& o) const noexcept {
        return {tokens - o.tokens, catch_up - o.catch_up, forwards - o.forwards};
    }
};

struct drafter_stats {
    std::string name;
    int64_t calls = 0;    // proposals asked for
    int64_t rounds = 0;   // drafts it supplied that were verified
    int64_t drafted = 0;
    int64_t accepted = 0;
    double seconds = 0.0;  // time in propose()
    drafter_work work;     // what its model evaluated (zeros for the n-gram drafter)

    double acceptance_rate() const noexcept { return drafted ? double(accepted) / double(drafted) : 0.0; }

    drafter_stats& operator+=(const drafter_stats& o) noexcept {
        calls += o.calls;
        rounds += o.rounds;
        drafted += o.drafted;
        accepted += o.accepted;
        seconds += o.seconds;
        work += o.work;
        return *this;
    }
};

struct speculative_stats {
    int64_t rounds = 0;        // drafting rounds: a non-empty draft verified by one target call
    int64_t drafted = 0;       // draft tokens verified
    int64_t accepted = 0;      // draft tokens accepted
    int64_t emitted = 0;       // tokens generated
    int64_t plain_steps = 0;   // target calls without a draft (no draft, dropped draft, fallback)
    int64_t fallback_steps = 0;  // of those, steps decoded plainly because speculation was (measured or predicted) slower
    int64_t target_calls = 0;  // target eval calls, prefill included
    int64_t drafted_ahead = 0;  // rounds whose draft was drafted while the round before was verified
    int64_t extended_ahead = 0;  // of those, drafts cut short by the verification's end and drafted on
    std::vector<int64_t> drafted_at;   // rounds whose draft reached position i
    std::vector<int64_t> accepted_at;  // rounds that accepted the draft token at position i
    double target_seconds = 0.0;  // in target eval calls (overlapped: until the verification was in hand)
    double draft_seconds = 0.0;   // in drafters' propose calls (overlapped ones included)
    // Decoding's target calls by their tokens m (plain steps: 1; a verification of n drafts: n + 1),
    // at [m − 1]: how many, and their time as target_seconds counts it. What a verification of m
    // tokens costs in the loop, beside what the backend's forward of m tokens costs alone.
    std::vector<int64_t> target_calls_by_tokens;
    std::vector<double> target_seconds_by_tokens;
    std::vector<drafter_stats> per_drafter;

    double acceptance_rate() const noexcept { return drafted ? double(accepted) / double(drafted) : 0.0; }
    double mean_acceptance_length() const noexcept { return rounds ? 1.0 + double(accepted) / double(rounds) : 0.0; }
    double acceptance_rate_at(size_t i) const noexcept {
        return i < drafted_at.size() && drafted_at[i] ? double(accepted_at[i]) / double(drafted_at[i]) : 0.0;
    }

    // The statistics of two runs as one (several prompts, say): counts and times added, per
    // position and per drafter; drafters match by position, and o's extra ones are appended.
    speculative_stats& operator+=(const speculative_stats& o) {
        rounds += o.rounds;
        drafted += o.drafted;
        accepted += o.accepted;
        emitted += o.emitted;
        plain_steps += o.plain_steps;
        fallback_steps += o.fallback_steps;
        target_calls += o.target_calls;
        drafted_ahead += o.drafted_ahead;
        extended_ahead += o.extended_ahead;
        target_seconds += o.target_seconds;
        draft_seconds += o.draft_seconds;
        add_into(drafted_at, o.drafted_at);
        add_into(accepted_at, o.accepted_at);
        add_into(target_calls_by_tokens, o.target_calls_by_tokens);
        add_into(target_seconds_by_tokens, o.target_seconds_by_tokens);
        for (size_t d = 0; d < o.per_drafter.size(); ++d) {
            if (d < per_drafter.size()) per_drafter[d] += o.per_drafter[d];
            else per_drafter.push_back(o.per_drafter[d]);
        }
        return *this;
    }

    // to[i] += from[i], to grown with zeros to from's length.
    template <class T>
    static void add_into(std::vector<T>& to, const std::vector<T>& from) {
        if (to.size() < from.size()) to.resize(from.size(), T{});
        for (size_t i = 0; i < from.size(); ++i) to[i] += from[i];
    }

    void record_target_call(size_t tokens, double seconds) {
        if (tokens == 0) return;
        if (target_calls_by_tokens.size() < tokens) {
            target_calls_by_tokens.resize(tokens, 0);
            target_seconds_by_tokens.resize(tokens, 0.0);
        }
        ++target_calls_by_tokens[tokens - 1];
        target_seconds_by_tokens[tokens - 1] += seconds;
    }

    void record_round(int32_t n_drafted, int32_t n_accepted) {
        ++rounds;
        drafted += n_drafted;
        accepted += n_accepted;
        if (drafted_at.size() < size_t(n_drafted)) {
            drafted_at.resize(size_t(n_drafted), 0);
            accepted_at.resize(size_t(n_drafted), 0);
        }
        for (int32_t i = 0; i < n_drafted; ++i) ++drafted_at[size_t(i)];
        for (int32_t i = 0; i < n_accepted; ++i) ++accepted_at[size_t(i)];
    }
};

}  // namespace llmrt::sample
