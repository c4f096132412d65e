// Drafting with a second, smaller model. A greedy draft chain gives point-mass drafts; any other
// chain samples each draft token and reports the q it was drawn from (its fully processed
// distribution), for lossless speculative sampling. Before drafting, the draft model catches up on
// the sequence tokens it has not seen (a round's emitted tokens; a whole window after the fallback
// decoded plainly) in one forward call per max_batch tokens, not one per token; catch_up does it
// apart from a proposal, for all but the last tokens. A draft model that is a greedy_model, under
// a chain that picks the argmax, drafts from its rows' argmax ids and top probabilities alone; a
// top_k_probability_model, under a chain that starts with a top-k its candidates cover, from each
// row's top candidates and top probability: no rows of logits travel.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrt/sample/drafter.hpp"
#include "llmrt/sample/model.hpp"
#include "llmrt/sample/sampler_chain.hpp"

namespace llmrt::sample {

template <class Draft>
class model_drafter final : public drafter {
    static_assert(causal_model<Draft>,
                  "model_drafter<Draft>: Draft must satisfy llmrt::sample::causal_model (vocab, vocab_size, "
                  "context_length, cache_length, eval, truncate)");

public:
    // The chain draws from its own RNG stream (draft_sample) with its own seed.
    model_drafter(Draft& model, sampler_chain chain, std::string name = "draft-model")
        : model_(model), chain_(std::move(chain)), name_(std::move(name)) {
        chain_.set_stream(rng_stream::draft_sample);
    }

    std::string_view name() const override { return name_; }
    const vocabulary* vocab() const override { return &model_.vocab(); }
    const sampler_chain& chain() const noexcept { return chain_; }
    sampler_chain& chain() noexcept { return chain_; }  // e.g. to reseed; its history is resynced on each propose

    void begin(std::span<const int32_t>) override {
        model_.truncate(0);
        chain_.reset();
        synced_ = 0;
    }

    void propose(const draft_request& request, draft& out) override {
        out.clear();
        const auto seq = request.sequence;
        const size_t length = seq.size();
        const int32_t vocab = model_.vocab_size();
        if (length == 0 || request.n_max <= 0 || length > size_t(model_.context_length())) return;

        // 1. The chain and the cache follow the sequence (sync).
        // 2. The m tokens the cache lacks (one or two after a round; a whole window after the
        //    fallback decoded plainly, unless catch_up took it) are caught up in ceil(m / B) forward
        //    calls, B = catch_up_chunk(): the whole chunks without logits, then the remaining 1..B
        //    tokens with their rows, of which the last is kept.
        const size_t keep = sync(seq, request.settled);
        const std::span<const int32_t> missing = seq.subspan(keep);
        const size_t tail = (missing.size() - 1) % catch_up_chunk() + 1;
        const size_t head = missing.size() - tail;
        if (head > 0) evaluate(missing.first(head), int32_t(keep), {});
        work_.catch_up += int64_t(missing.size());
        const int32_t n_limit = int32_t(std::min<size_t>(size_t(request.n_max), size_t(model_.context_length()) - length + 1));
        if constexpr (greedy_model<Draft>) {
            if (chain_.picks_argmax() && (request.p_min <= 0.0f || model_.has_top_probability())) {
                draft_argmax(missing.last(tail), int32_t(keep + head), int32_t(length), n_limit, request, out);
                return;
            }
        }
        if constexpr (top_k_probability_model<Draft>) {
            if (reads_top_candidates(model_, chain_.leading_top_k()) &&
                (request.p_min <= 0.0f || model_.has_top_probability())) {
                draft_top(missing.last(tail), int32_t(keep + head), int32_t(length), n_limit, request, out);
                return;
            }
        }
        rows_.resize(tail * size_t(vocab));
        evaluate(missing.last(tail), int32_t(keep + head), rows_);
        logits_.assign(rows_.end() - vocab, rows_.end());
        draw_draft(
            int32_t(length), n_limit, request, out, [&] { return top1_probability(logits_); },
            [&] { return chain_.distribution(logits_); },
            [&](const int32_t& token, int32_t position) { evaluate(std::span<const int32_t>(&token, 1), position, logits_); });
    }

    // Steps 1 and 2 of propose for all but the last `leave` (at least 1) tokens of the sequence,
    // in forward calls of B tokens without logits.
    void catch_up(std::span<const int32_t> sequence, std::size_t leave) override {
        const size_t length = sequence.size(), left = std::max<size_t>(leave, 1);
        if (length <= left || length > size_t(model_.context_length())) return;
        const size_t keep = sync(sequence, length);
        if (length - keep <= left) return;
        evaluate(sequence.subspan(keep, length - left - keep), int32_t(keep), {});
        work_.catch_up += int64_t(length - left - keep);
    }

    drafter_work work() const override { return work_; }
    bool drafts_ahead() const override { return true; }
    const void* model_identity() const override { return &model_; }

    // The most tokens one forward call of the model takes: its max_batch() where it has one (a
    // llama_model's eval splits longer spans into calls of that many), else 8, which bounds the
    // logits rows a catch-up reads back from a model that takes any span in one call.
    size_t catch_up_chunk() const {
        if constexpr (requires(const Draft& d) {
                          { d.max_batch() } -> std::convertible_to<int32_t>;
                      })
            return size_t(std::max<int32_t>(1, int32_t(model_.max_batch())));
        else
            return 8;
    }

private:
    // 1. Rolls the chain back to the longest prefix it shares with seq, then extends it; the first
    //    synced_ tokens are known to match (requests only extend the sequence's settled part; what
    //    lies past it may be revised). The cache keeps that shared prefix, minus the last sequence
    //    token, which is evaluated again if need be to get the logits of the first draft position;
    //    returns its length.
    size_t sync(std::span<const int32_t> seq, size_t settled) {
        const auto history = chain_.history();
        size_t common = std::min(synced_, history.size());
        while (common < history.size() && common < seq.size() && history[common] == seq[common]) ++common;
        chain_.restore(common);
        chain_.accept(seq.subspan(common));
        synced_ = std::min(seq.size(), settled);
        const size_t keep = std::min({size_t(model_.cache_length()), common, seq.size() - 1});
        model_.truncate(int32_t(keep));
        return keep;
    }

    void evaluate(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        model_.eval(tokens, position, logits);
        count(tokens.size());
    }

    void count(size_t tokens) {
        work_.tokens += int64_t(tokens);
        work_.forwards += int64_t((tokens + catch_up_chunk() - 1) / catch_up_chunk());
    }

    // Steps 2 (the caught-up tail) and 3 from argmax ids and top probabilities: the same tokens
    // the rows would give (the chain picks the argmax), the threshold on the device's probability.
    void draft_argmax(std::span<const int32_t> tail, int32_t tail_position, int32_t length, int32_t n_limit,
                      const draft_request& request, draft& out) {
        const float p_min = request.p_min;
        const bool threshold = p_min > 0.0f;
        ids_.resize(tail.size());
        top_.resize(threshold ? tail.size() : 0);
        model_.eval_greedy(tail, tail_position, ids_, top_);
        count(tail.size());
        for (int32_t k = 0; k < n_limit; ++k) {
            if (threshold && top_.back() < p_min) break;
            const int32_t x = ids_.back();
            out.tokens.push_back(x);
            chain_.accept(x);
            if (x == model_.vocab().eos || k + 1 == n_limit) break;
            if (stopped(request)) {
                out.interrupted = true;
                break;
            }
            ids_.resize(1);
            top_.resize(threshold ? 1 : 0);
            model_.eval_greedy(std::span<const int32_t>(&out.tokens.back(), 1), length + k, ids_, top_);
            count(1);
        }
    }

    // Steps 2 and 3 from each row's top candidates (the chain starts with a top-k the model's
    // candidates cover): the same q, so the same draft, as the rows give; the p_min threshold on
    // the device's top probability, as in draft_argmax.
    void draft_top(std::span<const int32_t> tail, int32_t tail_position, int32_t length, int32_t n_limit,
                   const draft_request& request, draft& out) {
        const size_t k = size_t(model_.top_candidates());
        const bool threshold = request.p_min > 0.0f;
        auto evaluate_top = [&](std::span<const int32_t> tokens, int32_t position) {
            ids_.resize(tokens.size() * k);
            logits_.resize(tokens.size() * k);
            top_.resize(threshold ? tokens.size() : 0);
            model_.eval_top(tokens, position, ids_, logits_, top_);
            count(tokens.size());
        };
        evaluate_top(tail, tail_position);
        const auto row = [&] { return ids_.size() / k - 1; };  // the last token's candidates
        draw_draft(
            length, n_limit, request, out, [&] { return top_[row()]; },
            [&] {
                return chain_.distribution_of_top(std::span<const int32_t>(ids_).subspan(row() * k, k),
                                                  std::span<const float>(logits_).subspan(row() * k, k));
            },
            [&](const int32_t& token, int32_t position) { evaluate_top(std::span<const int32_t>(&token, 1), position); });
    }

    // Step 3, sampled or greedy from the chain's distribution: while the last evaluated position's
    // top probability (top_probability(), read only with a p_min) reaches p_min, draw token k from
    // distribution() and, unless it ends the draft, evaluate it at position length + k (next) to
    // draft token k + 1.
    template <class TopProbability, class Distribution, class Next>
    void draw_draft(int32_t length, int32_t n_limit, const draft_request& request, draft& out,
                    TopProbability top_probability, Distribution distribution, Next next) {
        for (int32_t k = 0; k < n_limit; ++k) {
            if (request.p_min > 0.0f && top_probability() < request.p_min) break;
            token_distribution q = distribution();
            const int32_t x = chain_.is_greedy() ? q.argmax() : q.draw(chain_.uniform());
            out.tokens.push_back(x);
            if (!chain_.is_greedy()) out.q.push_back(std::move(q));
            chain_.accept(x);
            if (x == model_.vocab().eos || k + 1 == n_limit) break;
            if (stopped(request)) {
                out.interrupted = true;
                break;
            }
            next(out.tokens.back(), length + k);
        }
    }

    static bool stopped(const draft_request& request) {
        return request.stop && request.stop->load(std::memory_order_acquire);
    }

    Draft& model_;
    sampler_chain chain_;
    std::string name_;
    size_t synced_ = 0;
    std::vector<float> logits_, rows_, top_;
    std::vector<int32_t> ids_;
    drafter_work work_;
};

}  // namespace llmrt::sample
