// generate(prompt, n): plain decoding of a target model, or speculative decoding when drafters
// are attached. Both paths share the sampler chain and its counter-based RNG, so with
// point-mass drafts (or verification::sample_and_compare) the speculative token stream is the
// plain one, token for token, for the same seed; with sampled drafts it is equal in distribution.
//
// Bookkeeping: before each step the target's cache holds every sequence token but the last; a
// round evaluates [last, x_1 .. x_n] at position L − 1 and truncates the cache back to the
// accepted part afterwards. A target that is a greedy_model, under a chain that picks the argmax,
// is read as its rows' argmax ids alone: no logits travel.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/sample/draft_length.hpp"
#include "llmrt/sample/draft_policy.hpp"
#include "llmrt/sample/drafter.hpp"
#include "llmrt/sample/model.hpp"
#include "llmrt/sample/overlap.hpp"
#include "llmrt/sample/sampler_chain.hpp"
#include "llmrt/sample/stats.hpp"
#include "llmrt/sample/verify.hpp"

namespace llmrt::sample {

struct generation_options {
    bool stop_at_eos = true;        // stop after the target's EOS token
    std::function<double()> clock;  // seconds, for timings and the fallback; empty: steady_clock
    // Draft ahead: while the target verifies a round (on a second thread), a draft model drafts the
    // next one on the guess that this one is wholly accepted, its first token a guess of the
    // target's next token, for as long as the verification takes; when both guesses come true the
    // next round's draft is already there, and a round costs about one verification. The tokens
    // are the same either way (only which drafts are proposed changes). Off by default:
    // it needs a target and a draft model that can run at once from two threads, each on its own
    // (two models of the CUDA backend, each on its own stream, or of the CPU backend), and the
    // clock is then read on the calling thread only.
    bool overlap = false;
};

enum class stop_reason { length, eos, context_full };

struct generation_result {
    std::vector<int32_t> tokens;  // the generated tokens (the prompt excluded)
    stop_reason reason = stop_reason::length;
};

template <class Target, class Rule = ratio_rule>
class generator {
    static_assert(causal_model<Target>,
                  "generator<Target>: Target must satisfy llmrt::sample::causal_model (vocab, vocab_size, "
                  "context_length, cache_length, eval, truncate)");
    static_assert(rejection_rule<Rule>, "generator<Target, Rule>: Rule must provide static accept(p, q, r) and recovery(p, q)");

public:
    // The chain is the target's; it draws from rng_stream::target_sample.
    generator(Target& target, sampler_chain chain, draft_policy policy = {}, generation_options options = {})
        : target_(target), chain_(std::move(chain)), policy_(policy), options_(std::move(options)) {
        policy_.validate();
        chain_.set_stream(rng_stream::target_sample);
    }

    // Drafters are tried in the order they were added (n-gram first, then a draft model); the
    // first to supply a draft of at least n_min tokens drafts the round. A drafter backed by a
    // model with another vocabulary is refused.
    template <class D>
    D& add_drafter(std::unique_ptr<D> d) {
        static_assert(std::is_base_of_v<drafter, D>, "generator::add_drafter: D must derive from llmrt::sample::drafter");
        check(d != nullptr, errc::invalid_argument, "generator::add_drafter: null drafter");
        if (const vocabulary* v = d->vocab()) check_draft_vocabulary(target_.vocab(), *v);
        D& ref = *d;
        slots_.push_back(std::move(d));
        stats_.per_drafter.push_back(named_stats(ref.name()));
        return ref;
    }

    sampler_chain& chain() noexcept { return chain_; }
    draft_policy& policy() noexcept { return policy_; }
    const speculative_stats& stats() const noexcept { return stats_; }
    void reset_stats() {
        speculative_stats fresh;
        for (const auto& d : stats_.per_drafter) fresh.per_drafter.push_back(named_stats(d.name));
        stats_ = std::move(fresh);
    }

    generation_result generate(std::span<const int32_t> prompt, int32_t n_tokens) {
        policy_.validate();
        const int32_t vocab = target_.vocab_size();
        const int32_t context = target_.context_length();
        check(!prompt.empty(), errc::invalid_argument, "generate: empty prompt (the first token needs a context)");
        check(n_tokens >= 0, errc::invalid_argument, [&] { return "generate: n_tokens " + std::to_string(n_tokens) + " < 0"; });
        check(prompt.size() <= size_t(context), errc::invalid_argument, [&] {
            return "generate: prompt of " + std::to_string(prompt.size()) + " tokens exceeds the target's context of " +
                   std::to_string(context);
        });
        for (size_t i = 0; i < prompt.size(); ++i)
            check(prompt[i] >= 0 && prompt[i] < vocab, errc::invalid_argument, [&] {
                return "generate: prompt token " + std::to_string(i) + " is " + std::to_string(prompt[i]) +
                       ", outside the vocabulary of " + std::to_string(vocab);
            });

        const int32_t stop_token = options_.stop_at_eos ? target_.vocab().eos : -1;
        sequence_.assign(prompt.begin(), prompt.end());
        chain_.reset();
        chain_.accept(prompt);
        target_.truncate(0);
        for (auto& d : slots_) d->begin(prompt);
        lengths_.begin(policy_, slots_.size());
        start_schedule();
        carried_.clear();
        lookahead_held_ = 1.0;
        verify_ = draft_forward_ = -1.0;
        rounds_without_lookahead_ = 0;
        if (prompt.size() > 1) timed_eval(prompt.first(prompt.size() - 1), 0, {});

        generation_result result;
        while (int32_t(result.tokens.size()) < n_tokens) {
            const size_t length = sequence_.size();
            if (length >= size_t(context)) {
                result.reason = stop_reason::context_full;
                break;
            }
            const double start = now();
            // A round emits up to n + 1 tokens: n ≤ tokens still wanted − 1, and the last emitted
            // token must still fit in the context.
            const int32_t cap = std::min(n_tokens - int32_t(result.tokens.size()) - 1, context - int32_t(length) - 1);
            const bool speculating = !slots_.empty() && phase_ == phase::speculating && cap >= policy_.n_min;
            const std::vector<int32_t> emitted = speculating ? speculative_step(cap) : plain_step();
            observe_step(speculating, now() - start, int32_t(emitted.size()));

            result.tokens.insert(result.tokens.end(), emitted.begin(), emitted.end());
            sequence_.insert(sequence_.end(), emitted.begin(), emitted.end());
            stats_.emitted += int64_t(emitted.size());
            if (stop_token >= 0 && !emitted.empty() && emitted.back() == stop_token) {
                result.reason = stop_reason::eos;
                break;
            }
        }
        return result;
    }

private:
    enum class phase { probing, speculating, backing_off };

    static drafter_stats named_stats(std::string_view name) {
        drafter_stats s;
        s.name = std::string(name);
        return s;
    }

    double now() const {
        if (options_.clock) return options_.clock();
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }

    // eval() is one target call, timed into the statistics; decoding's calls (tokens > 0) also by
    // their tokens.
    template <class Eval>
    void timed_target(Eval&& eval, size_t tokens = 0) {
        const double t0 = now();
        eval();
        const double seconds = now() - t0;
        stats_.target_seconds += seconds;
        ++stats_.target_calls;
        stats_.record_target_call(tokens, seconds);
    }

    void timed_eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        timed_target([&] { target_.eval(tokens, position, logits); });
    }

    // Whether the target's rows can be read as their argmax ids alone (greedy_model).
    bool argmax_rows() const {
        if constexpr (greedy_model<Target>) return chain_.picks_argmax();
        else return false;
    }

    // What a target call reads of each row: its argmax id, its best candidates (a top_k_model, for
    // a chain that starts with top-k), or the row itself.
    enum class row_read { argmax, top, rows };
    row_read reading(bool point_mass_draft) const {
        if (argmax_rows() && point_mass_draft) return row_read::argmax;
        return reads_top_candidates(target_, chain_.leading_top_k()) ? row_read::top : row_read::rows;
    }

    // The target evaluates tokens at position: ids_ = the argmax of each row, top_ids_ and
    // top_logits_ = each row's best candidates, or rows_ = the rows themselves. Untimed: the
    // callers time it, on whichever thread.
    void evaluate(std::span<const int32_t> tokens, int32_t position, row_read read) {
        if (read == row_read::argmax) {
            if constexpr (greedy_model<Target>) {
                ids_.resize(tokens.size());
                target_.eval_greedy(tokens, position, ids_, {});
            }
        } else if (read == row_read::top) {
            if constexpr (top_k_model<Target>) {
                top_ids_.resize(tokens.size() * candidates_per_row());
                top_logits_.resize(top_ids_.size());
                target_.eval_top(tokens, position, top_ids_, top_logits_);
            }
        } else {
            rows_.resize(tokens.size() * size_t(target_.vocab_size()));
            target_.eval(tokens, position, rows_);
        }
    }

    size_t candidates_per_row() const {
        if constexpr (top_k_model<Target>) return size_t(target_.top_candidates());
        else return 0;
    }

    // The token the chain draws from the target's first row (plain decoding).
    int32_t sample_first_row(row_read read) const {
        if (read == row_read::argmax) return ids_[0];
        if (read == row_read::rows) return chain_.sample(rows_);
        const size_t k = candidates_per_row();
        return chain_.sample_top(std::span<const int32_t>(top_ids_).first(k), std::span<const float>(top_logits_).first(k));
    }

    std::vector<int32_t> plain_step() {
        carried_.clear();  // drafted for a round that this step replaces
        const row_read read = reading(true);
        const double t0 = now();
        timed_target([&] { evaluate(std::span<const int32_t>(&sequence_.back(), 1), int32_t(sequence_.size()) - 1, read); }, 1);
        const int32_t y = sample_first_row(read);
        lengths_.observe_verify(1, now() - t0);
        chain_.accept(y);
        ++stats_.plain_steps;
        if (phase_ == phase::backing_off) ++stats_.fallback_steps;
        return {y};
    }

    std::vector<int32_t> speculative_step(int32_t cap) {
        if (carried_.tokens.empty() && lengths_.predicted_slower(policy_, cap)) {
            ++stats_.fallback_steps;
            return plain_step();
        }
        size_t chosen = slots_.size();
        int32_t limit = 0;
        if (!carried_.tokens.empty()) {  // drafted ahead, during the last round's verification
            limit = lengths_.limit(policy_, carried_slot_, cap);
            draft_.clear();
            const size_t take = std::min(carried_.tokens.size(), size_t(std::max(limit, 0)));
            draft_.tokens.assign(carried_.tokens.begin(), carried_.tokens.begin() + std::ptrdiff_t(take));
            // Cut short by the verification's end, not by its own rule: the drafter goes on from it.
            if (carried_.interrupted && take == carried_.tokens.size() && int32_t(take) < limit && take > 0)
                extend_carried(limit - int32_t(take));
            carried_.clear();
            if (draft_.tokens.size() >= size_t(policy_.n_min)) {
                chosen = carried_slot_;
                ++stats_.drafted_ahead;
            }
        }
        // Ask the drafters in order for the first draft of at least n_min tokens.
        for (size_t i = 0; i < slots_.size() && chosen == slots_.size(); ++i) {
            limit = lengths_.limit(policy_, i, cap);
            if (limit < policy_.n_min) continue;
            // What it missed beyond a round's tokens (the prompt, a plain phase) first, so that
            // the proposal's time is a round's drafting: d is measured on every drafting round.
            timed_drafter(i, [&](drafter& d) { d.catch_up(sequence_, size_t(adaptive_draft_length::max_round_catch_up)); });
            timed_propose(i, {sequence_, limit, policy_.p_min}, draft_);
            if (draft_.tokens.size() >= size_t(policy_.n_min)) chosen = i;
        }
        if (chosen == slots_.size()) return plain_step();

        const int32_t vocab = target_.vocab_size();
        const size_t length = sequence_.size();
        const int32_t n = int32_t(draft_.tokens.size());
        const int32_t stop = options_.stop_at_eos ? target_.vocab().eos : -1;
        batch_.assign(1, sequence_.back());
        batch_.insert(batch_.end(), draft_.tokens.begin(), draft_.tokens.end());
        // The rows' argmax ids are all a verification of point-mass drafts reads.
        const row_read read = reading(draft_.point_mass());
        const bool ahead = worth_drafting_ahead(chosen);
        auto eval = [&, position = int32_t(length) - 1] { evaluate(batch_, position, read); };
        const double t0 = now();
        if (ahead) {
            evaluate_while_drafting_ahead(eval, chosen);
        } else {
            const auto steady0 = std::chrono::steady_clock::now();
            timed_target(eval, batch_.size());
            detail::moving_average(verify_, steady_seconds_since(steady0), lookahead_weight);
        }
        const verify_result v =
            read == row_read::argmax ? verify_argmax(draft_, ids_, chain_, stop)
            : read == row_read::top  ? verify_draft_top<Rule>(draft_, top_ids_, top_logits_, candidates_per_row(), vocab,
                                                              chain_, policy_.mode, stop)
                                     : verify_draft<Rule>(draft_, rows_, vocab, chain_, policy_.mode, stop);
        lengths_.observe_verify(batch_.size(), now() - t0);
        // The cache must end up holding the new sequence minus its last token.
        const int32_t keep = int32_t(length + v.emitted.size()) - 1;
        if (target_.cache_length() > keep) target_.truncate(keep);
        // The look-ahead holds: every draft token accepted and the target's next token guessed.
        if (ahead) {
            const bool held = v.accepted == n && ahead_.tokens.size() >= 2 && v.emitted.back() == ahead_.tokens.front();
            if (held) {
                carried_.tokens.assign(ahead_.tokens.begin() + 1, ahead_.tokens.end());
                carried_.interrupted = ahead_.interrupted;
                carried_slot_ = chosen;
            }
            detail::moving_average(lookahead_held_, held ? 1.0 : 0.0, lookahead_weight);
        }

        stats_.record_round(n, v.accepted);
        auto& ds = stats_.per_drafter[chosen];
        ++ds.rounds;
        ds.drafted += n;
        ds.accepted += v.accepted;
        lengths_.observe_round(policy_, chosen, n, limit, v.accepted);
        return std::move(v.emitted);
    }

    // The carried draft (in draft_), cut short when the verification it overlapped came in, goes on
    // by up to `more` tokens from the same drafter, on the sequence extended by it.
    void extend_carried(int32_t more) {
        timed_propose(carried_slot_, {sequence_with_draft(), more, policy_.p_min, sequence_.size()}, extension_);
        draft_.tokens.insert(draft_.tokens.end(), extension_.tokens.begin(), extension_.tokens.end());
        ++stats_.extended_ahead;
    }

    // The sequence followed by this round's draft (in guess_): what a drafter drafting past the
    // draft is asked about, its settled part the sequence's length.
    std::span<const int32_t> sequence_with_draft() {
        guess_.assign(sequence_.begin(), sequence_.end());
        guess_.insert(guess_.end(), draft_.tokens.begin(), draft_.tokens.end());
        return guess_;
    }

    // Drafter i's call(drafter&), its time and its model's work counted into the statistics.
    template <class Call>
    std::pair<double, drafter_work> timed_drafter(size_t i, Call&& call) {
        const double t0 = now();
        const drafter_work before = slots_[i]->work();
        call(*slots_[i]);
        const std::pair<double, drafter_work> done{now() - t0, slots_[i]->work() - before};
        stats_.per_drafter[i].work += done.second;
        stats_.draft_seconds += done.first;
        stats_.per_drafter[i].seconds += done.first;
        return done;
    }

    // Drafter i proposes into out, timed into the statistics.
    void timed_propose(size_t i, const draft_request& request, draft& out) {
        const auto steady0 = std::chrono::steady_clock::now();
        const auto [seconds, did] = timed_drafter(i, [&](drafter& d) { d.propose(request, out); });
        ++stats_.per_drafter[i].calls;
        if (!request.stop) {  // a look-ahead's time overlaps a verification: not what a draft costs
            if (did.forwards > 0)
                detail::moving_average(draft_forward_, steady_seconds_since(steady0) / double(did.forwards), lookahead_weight);
            lengths_.observe_draft(i, seconds, did, out.tokens.size());
        }
        check(out.tokens.size() <= size_t(request.n_max), errc::invalid_argument, [&] {
            return "drafter \"" + std::string(slots_[i]->name()) + "\" proposed " + std::to_string(out.tokens.size()) +
                   " tokens when asked for at most " + std::to_string(request.n_max);
        });
    }

    // eval (the target's verification) on the worker thread while drafter `chosen` drafts the round
    // after this one into ahead_: for the sequence, this round's draft and a guess of the target's
    // next token (its first token), up to its next limit past that guess, stopping before another
    // forward call once the verification is in hand. The target's time is the wall time until the
    // verification is in hand.
    template <class Eval>
    void evaluate_while_drafting_ahead(Eval& eval, size_t chosen) {
        if (!worker_) worker_ = std::make_unique<overlap_worker>();
        std::atomic<bool> verified{false};
        const double t0 = now();
        double verify_seconds = 0.0;  // steady clock, on the worker: the gate's measure, not the statistics'
        worker_->start([&] {
            struct mark {  // set however eval ends
                std::atomic<bool>& flag;
                ~mark() { flag.store(true, std::memory_order_release); }
            } done{verified};
            const auto steady0 = std::chrono::steady_clock::now();
            eval();
            verify_seconds = steady_seconds_since(steady0);
        });
        try {
            timed_propose(chosen,
                          {sequence_with_draft(), lengths_.limit(policy_, chosen, policy_.n_max) + 1, policy_.p_min,
                           sequence_.size(), &verified},
                          ahead_);
        } catch (...) {
            try {
                worker_->wait();  // eval refers to this frame: it must be over before the frame is
            } catch (...) {
            }
            throw;
        }
        worker_->wait();
        detail::moving_average(verify_, verify_seconds, lookahead_weight);
        const double seconds = now() - t0;
        stats_.target_seconds += seconds;
        ++stats_.target_calls;
        stats_.record_target_call(batch_.size(), seconds);
    }

    // Whether to draft ahead this round: allowed (overlap on, a point-mass draft from a drafter
    // that drafts ahead on a model other than the target), and worth it. A look-ahead always makes
    // one forward call of the draft model, which delays the round when it outlasts the
    // verification (a draft model slower than its target: none then), and it pays only when its
    // guesses hold (while they mostly fail, one round in reprobe_rounds tries again).
    bool worth_drafting_ahead(size_t chosen) {
        if (!options_.overlap || !draft_.point_mass() || !slots_[chosen]->drafts_ahead() ||
            slots_[chosen]->model_identity() == static_cast<const void*>(&target_))
            return false;
        if (draft_forward_ > 0.0 && verify_ > 0.0 && draft_forward_ > verify_) return false;
        if (lookahead_held_ >= lookahead_floor) return true;
        if (++rounds_without_lookahead_ < reprobe_rounds) return false;
        rounds_without_lookahead_ = 0;
        return true;
    }

    static double steady_seconds_since(std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    }

    // ---- fallback schedule ----
    void start_schedule() {
        phase_ = policy_.fallback.enabled && !slots_.empty() ? phase::probing : phase::speculating;
        phase_left_ = policy_.fallback.probe_steps;
        backoff_ = policy_.fallback.backoff_tokens;
        plain_cost_ = -1.0;
        reset_speculative_cost();
        rounds_since_probe_ = 0;
    }

    void reset_speculative_cost() {
        spec_seconds_ = spec_tokens_ = 0.0;
        spec_rounds_ = 0;
    }

    void observe_step(bool speculating, double seconds, int32_t tokens) {
        if (!policy_.fallback.enabled || slots_.empty() || tokens <= 0) return;
        const auto& f = policy_.fallback;
        const double w = f.ema_weight;
        if (!speculating) {
            detail::moving_average(plain_cost_, seconds / double(tokens), w);
            if (phase_ != phase::speculating && (phase_left_ -= tokens) <= 0) {
                const bool after_backoff = phase_ == phase::backing_off;
                phase_ = phase::speculating;
                if (after_backoff && f.rounds_after_backoff < f.min_rounds)
                    spec_rounds_ = f.min_rounds - f.rounds_after_backoff;  // judged on the kept averages that many rounds on
                else
                    reset_speculative_cost();
            }
            return;
        }
        spec_seconds_ = spec_rounds_ == 0 ? seconds : (1.0 - w) * spec_seconds_ + w * seconds;
        spec_tokens_ = spec_rounds_ == 0 ? double(tokens) : (1.0 - w) * spec_tokens_ + w * double(tokens);
        ++spec_rounds_;
        ++rounds_since_probe_;
        if (spec_rounds_ >= f.min_rounds && plain_cost_ > 0.0) {
            if (spec_seconds_ / spec_tokens_ > f.margin * plain_cost_) {
                phase_ = phase::backing_off;
                phase_left_ = backoff_;
                backoff_ = std::min(2 * backoff_, f.max_backoff_tokens);
                rounds_since_probe_ = 0;
                return;
            }
            backoff_ = f.backoff_tokens;
        }
        if (rounds_since_probe_ >= f.reprobe_rounds) {
            phase_ = phase::probing;
            phase_left_ = f.probe_steps;
            rounds_since_probe_ = 0;
        }
    }

    Target& target_;
    sampler_chain chain_;
    draft_policy policy_;
    generation_options options_;
    std::vector<std::unique_ptr<drafter>> slots_;
    adaptive_draft_length lengths_;  // each drafter's draft length, from its measured acceptance and costs
    speculative_stats stats_;

    std::vector<int32_t> sequence_, batch_, ids_, guess_;
    std::vector<float> rows_, top_logits_;
    std::vector<int32_t> top_ids_;
    draft draft_, ahead_, carried_, extension_;  // carried_: ahead_ past its guess, when the guess came true
    size_t carried_slot_ = 0;
    // The look-ahead's gate (worth_drafting_ahead): moving averages (the newest weighing
    // lookahead_weight) of how often its guesses held, and of the steady-clock seconds of a
    // verification and of one draft forward call (< 0: none yet).
    static constexpr double lookahead_weight = 0.25, lookahead_floor = 0.2;
    static constexpr int32_t reprobe_rounds = 16;
    double lookahead_held_ = 1.0, verify_ = -1.0, draft_forward_ = -1.0;
    int32_t rounds_without_lookahead_ = 0;
    std::unique_ptr<overlap_worker> worker_;  // started on the first overlapped round

    phase phase_ = phase::speculating;
    int32_t phase_left_ = 0, backoff_ = 0, spec_rounds_ = 0, rounds_since_probe_ = 0;
    double plain_cost_ = -1.0, spec_seconds_ = 0.0, spec_tokens_ = 0.0;
};

}  // namespace llmrt::sample
