// Prompt-lookup drafting: no second model. The last n tokens are looked up among earlier
// occurrences in the sequence (longest n first, most recent occurrence) and the tokens that
// followed are proposed as a point-mass draft.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llmrt/sample/draft_policy.hpp"
#include "llmrt/sample/drafter.hpp"

namespace llmrt::sample {

class ngram_drafter final : public drafter {
public:
    explicit ngram_drafter(ngram_params params = {}) : params_(params) {
        params_.validate();
        index_.resize(size_t(params_.ngram_max) + 1);
    }

    std::string_view name() const override { return "ngram"; }

    void begin(std::span<const int32_t> prompt) override {
        seen_.clear();
        for (auto& m : index_) m.clear();
        extend(prompt);
    }

    void propose(const draft_request& request, draft& out) override {
        out.clear();
        const auto seq = request.sequence;
        // Requests within a sequence only append; anything else is a new sequence.
        if (seq.size() < seen_.size() || (!seen_.empty() && seq[seen_.size() - 1] != seen_.back())) begin({});
        extend(seq);
        const size_t length = seen_.size();
        for (int32_t n = params_.ngram_max; n >= params_.ngram_min && request.n_max > 0; --n) {
            if (length < size_t(n) + 1) continue;
            const std::span<const int32_t> suffix(seen_.data() + length - size_t(n), size_t(n));
            const auto it = index_[size_t(n)].find(hash(suffix));
            if (it == index_[size_t(n)].end()) continue;
            const size_t next = it->second;  // the token after the earlier occurrence; next < length
            if (!std::equal(suffix.begin(), suffix.end(), seen_.begin() + std::ptrdiff_t(next) - n)) continue;
            // Copy what followed. Where the copy runs into the sequence's own end it continues
            // with what it has just proposed (a repeat with period length − next).
            for (int32_t i = 0; i < request.n_max; ++i) {
                const size_t src = next + size_t(i);
                out.tokens.push_back(src < length ? seen_[src] : out.tokens[src - length]);
            }
            return;
        }
    }

private:
    static uint64_t hash(std::span<const int32_t> tokens) noexcept {
        uint64_t h = 0x9E3779B97F4A7C15ull ^ tokens.size();
        for (int32_t t : tokens) {  // splitmix64 finaliser per token
            h ^= uint32_t(t);
            h += 0x9E3779B97F4A7C15ull;
            h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
            h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
            h ^= h >> 31;
        }
        return h;
    }

    // Indexes every n-gram that now has a following token: when token i arrives, the n-grams
    // ending at i − 1 map to i (later occurrences overwrite earlier ones: most recent wins).
    void extend(std::span<const int32_t> seq) {
        for (size_t i = seen_.size(); i < seq.size(); ++i) {
            seen_.push_back(seq[i]);
            for (int32_t n = params_.ngram_min; n <= params_.ngram_max; ++n)
                if (i >= size_t(n))
                    index_[size_t(n)][hash({seen_.data() + i - size_t(n), size_t(n)})] = i;
        }
    }

    ngram_params params_;
    std::vector<int32_t> seen_;
    std::vector<std::unordered_map<uint64_t, size_t>> index_;  // by n: hash of an n-gram → position after it
};

}  // namespace llmrt::sample
