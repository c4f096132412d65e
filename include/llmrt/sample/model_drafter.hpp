// Drafting with a second, smaller model. A greedy draft chain gives point-mass drafts; any other
// chain samples each draft token and reports the q it was drawn from (its fully processed
// distribution), for lossless speculative sampling.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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

        // 1. Roll the chain back to the longest prefix it shares with the sequence, then extend it.
        //    The first synced_ tokens are known to match (requests only extend the sequence).
        const auto history = chain_.history();
        size_t common = std::min(synced_, history.size());
        while (common < history.size() && common < length && history[common] == seq[common]) ++common;
        chain_.restore(common);
        chain_.accept(seq.subspan(common));
        synced_ = length;

        // 2. The cache keeps that shared prefix, minus the last sequence token, which is evaluated
        //    again if need be to get the logits of the first draft position.
        const size_t keep = std::min({size_t(model_.cache_length()), common, length - 1});
        model_.truncate(int32_t(keep));
        const std::span<const int32_t> missing = seq.subspan(keep);
        if (missing.size() <= 4) {  // short catch-up (the usual case): one call with every row's logits
            rows_.resize(missing.size() * size_t(vocab));
            model_.eval(missing, int32_t(keep), rows_);
            logits_.assign(rows_.end() - vocab, rows_.end());
        } else {  // prefill without logits, then the last token
            model_.eval(missing.first(missing.size() - 1), int32_t(keep), {});
            logits_.resize(size_t(vocab));
            model_.eval(missing.last(1), int32_t(length - 1), logits_);
        }

        // 3. Draft. Draft token k is evaluated at position length + k to draft token k + 1.
        const int32_t n_limit = int32_t(std::min<size_t>(size_t(request.n_max), size_t(model_.context_length()) - length + 1));
        for (int32_t k = 0; k < n_limit; ++k) {
            if (request.p_min > 0.0f && top1_probability(logits_) < request.p_min) break;
            token_distribution q = chain_.distribution(logits_);
            const int32_t x = chain_.is_greedy() ? q.argmax() : q.draw(chain_.uniform());
            out.tokens.push_back(x);
            if (!chain_.is_greedy()) out.q.push_back(std::move(q));
            chain_.accept(x);
            if (x == model_.vocab().eos || k + 1 == n_limit) break;
            model_.eval(std::span<const int32_t>(&out.tokens.back(), 1), int32_t(length) + k, logits_);
        }
    }

private:
    // softmax(logits) at its largest entry = 1 / Σ exp(l − max).
    static float top1_probability(std::span<const float> logits) {
        float m = -std::numeric_limits<float>::infinity();
        for (float l : logits) m = std::max(m, l);
        if (!(m > -std::numeric_limits<float>::infinity())) return 0.0f;
        double sum = 0.0;
        for (float l : logits) sum += std::exp(double(l) - double(m));
        return float(1.0 / sum);
    }

    Draft& model_;
    sampler_chain chain_;
    std::string name_;
    size_t synced_ = 0;
    std::vector<float> logits_, rows_;
};

}  // namespace llmrt::sample
