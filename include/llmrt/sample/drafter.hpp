// The drafter interface: something that proposes the next tokens of a sequence.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "llmrt/sample/model.hpp"
#include "llmrt/sample/stats.hpp"
#include "llmrt/sample/token_distribution.hpp"

namespace llmrt::sample {

// Draft tokens x_1..x_n. A point-mass draft (q empty) makes no claim about how its tokens were
// chosen; a sampled draft reports, for each x_i, the distribution q_i it was really drawn from
// (q_i(x_i) > 0), which is what lossless speculative sampling needs.
struct draft {
    std::vector<int32_t> tokens;
    std::vector<token_distribution> q;
    // The drafter stopped because draft_request::stop was set, not by its own rule (length, p_min,
    // EOS): asked again past these tokens, it would go on.
    bool interrupted = false;

    bool point_mass() const noexcept { return q.empty(); }
    void clear() noexcept {
        tokens.clear();
        q.clear();
        interrupted = false;
    }
};

struct draft_request {
    std::span<const int32_t> sequence;  // prompt + tokens generated so far
    int32_t n_max = 0;                  // propose at most this many tokens
    float p_min = 0.0f;                 // per-position confidence cutoff, for drafters that have one
    // Leading tokens of `sequence` that later requests keep. Past them the sequence is a guess (the
    // generator drafting the next round while this one is verified) that a later request may
    // revise; only drafters whose drafts_ahead() is true are asked that.
    std::size_t settled = std::numeric_limits<std::size_t>::max();
    // Once this is set, a drafter stops before its next forward call (while the generator drafts
    // ahead: the verification it overlaps is in hand, so more drafting would only delay the round).
    const std::atomic<bool>* stop = nullptr;
};

class drafter {
public:
    virtual ~drafter() = default;
    virtual std::string_view name() const = 0;
    // A new sequence starts; within it, later requests only ever extend the sequence, or its
    // settled part (draft_request::settled) for a drafter that drafts ahead.
    virtual void begin(std::span<const int32_t> prompt) = 0;
    // Writes at most request.n_max tokens to `out` (cleared first); may propose nothing.
    virtual void propose(const draft_request& request, draft& out) = 0;
    // A drafter whose model evaluates the sequence tokens it missed (the prompt, a window decoded
    // without it) evaluates them here, all but the last `leave`, which the next propose of this
    // sequence evaluates in its first forward call; nothing when it missed no more than `leave`.
    // The generator calls it before a round's proposal so that it times that proposal's drafting
    // alone, not a prefill. Drafters without a model need not (the default does nothing).
    virtual void catch_up(std::span<const int32_t> /*sequence*/, std::size_t /*leave*/) {}
    // The vocabulary of a drafter backed by a model, checked against the target's; null for
    // drafters that copy target tokens (n-gram).
    virtual const vocabulary* vocab() const { return nullptr; }
    // What its model evaluated so far; zeros for drafters without a model.
    virtual drafter_work work() const { return {}; }
    // Whether it takes requests whose sequence ends in a guess (draft_request::settled) and can
    // run on another thread while the target evaluates: a model drafter, whose model is not the
    // target (model_identity() tells the generator which object that is).
    virtual bool drafts_ahead() const { return false; }
    virtual const void* model_identity() const { return nullptr; }
};

}  // namespace llmrt::sample
