// Test doubles for llmrt::sample::causal_model, in namespace llmrt::sample::testing: models whose
// logits are a pure function of the token history, with a cache that refuses evaluations that do
// not continue it, and a fake clock that they charge what their calls would cost. llmrt's sampling
// tests use them, and so does llmrt-bench-speculative-policy, which times the draft-length rules
// on that clock.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/cpu/ops.hpp"
#include "llmrt/sample/model.hpp"
#include "llmrt/testing/generate.hpp"

namespace llmrt::sample::testing {

struct fake_clock {
    double seconds = 0.0;
    double operator()() const { return seconds; }
};

// What an eval of n tokens costs on the fake clock: per_call + per_token · n, plus extra(n, logits)
// where set, for costs of another shape (a second pass every so many tokens, logit rows read back:
// `logits` says whether the call hands logits out).
struct model_costs {
    fake_clock* clock = nullptr;
    double per_call = 0.0;
    double per_token = 0.0;
    std::function<double(int32_t tokens, bool logits)> extra = {};
};

// Logits of the token after `history` (history.size() ≥ 1), written to `out` (vocab floats).
using logits_function = std::function<void(std::span<const int32_t> history, std::span<float> out)>;

inline vocabulary make_vocabulary(int32_t size, int32_t eos = -1, const std::string& prefix = "tok") {
    vocabulary v;
    v.size = size;
    v.eos = eos;
    v.tokenizer = "test";
    for (int32_t i = 0; i < size; ++i) v.token_text.push_back(prefix + std::to_string(i));
    return v;
}

class function_model {
public:
    function_model(vocabulary vocab, int32_t context_length, logits_function f, model_costs costs = {})
        : vocab_(std::move(vocab)), context_(context_length), f_(std::move(f)), costs_(std::move(costs)) {}

    const vocabulary& vocab() const { return vocab_; }
    int32_t vocab_size() const { return vocab_.size; }
    int32_t context_length() const { return context_; }
    int32_t cache_length() const { return int32_t(cache_.size()); }
    std::span<const int32_t> cache() const { return cache_; }

    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        check(position == cache_length(), errc::invalid_argument, [&] {
            return "function_model: evaluated at position " + std::to_string(position) + " but its cache holds " +
                   std::to_string(cache_.size()) + " tokens";
        });
        check(!tokens.empty() && position + int64_t(tokens.size()) <= context_, errc::invalid_argument, [&] {
            return "function_model: " + std::to_string(tokens.size()) + " tokens at position " + std::to_string(position) +
                   " overflow the context of " + std::to_string(context_);
        });
        check(logits.empty() || logits.size() == tokens.size() * size_t(vocab_.size), errc::shape_mismatch, [&] {
            return "function_model: logits span of " + std::to_string(logits.size()) + " floats for " +
                   std::to_string(tokens.size()) + " tokens";
        });
        for (int32_t t : tokens)  // all checked before any enters the cache, as causal_model asks
            check(t >= 0 && t < vocab_.size, errc::invalid_argument,
                  [&] { return "function_model: token " + std::to_string(t) + " outside the vocabulary"; });
        for (size_t i = 0; i < tokens.size(); ++i) {
            cache_.push_back(tokens[i]);
            if (!logits.empty()) f_(cache_, logits.subspan(i * size_t(vocab_.size), size_t(vocab_.size)));
        }
        ++calls;
        tokens_evaluated += int64_t(tokens.size());
        max_batch = std::max(max_batch, int32_t(tokens.size()));
        if (costs_.clock)
            costs_.clock->seconds += costs_.per_call + costs_.per_token * double(tokens.size()) +
                                     (costs_.extra ? costs_.extra(int32_t(tokens.size()), !logits.empty()) : 0.0);
    }

    void truncate(int32_t n) {
        check(n >= 0 && n <= cache_length(), errc::invalid_argument, [&] {
            return "function_model: truncate to " + std::to_string(n) + " tokens, cache holds " + std::to_string(cache_.size());
        });
        cache_.resize(size_t(n));
    }

    // The logits after `history`, straight from the function (no cache involved).
    std::vector<float> logits_after(std::span<const int32_t> history) const {
        std::vector<float> out(size_t(vocab_.size));
        f_(history, out);
        return out;
    }

    int64_t calls = 0;
    int64_t tokens_evaluated = 0;
    int32_t max_batch = 0;

private:
    vocabulary vocab_;
    int32_t context_;
    logits_function f_;
    model_costs costs_;
    std::vector<int32_t> cache_;
};

static_assert(causal_model<function_model>, "function_model must satisfy causal_model");

// What the doubles that wrap a function_model forward to it unchanged: its vocabulary, context and
// cache; each double adds its own eval (and what else it models).
class wrapped_model {
public:
    explicit wrapped_model(function_model inner) : inner_(std::move(inner)) {}

    const vocabulary& vocab() const { return inner_.vocab(); }
    int32_t vocab_size() const { return inner_.vocab_size(); }
    int32_t context_length() const { return inner_.context_length(); }
    int32_t cache_length() const { return inner_.cache_length(); }
    const function_model& inner() const { return inner_; }
    void truncate(int32_t n) { inner_.truncate(n); }

protected:
    function_model inner_;
};

// A function_model that takes at most max_batch() tokens per forward call, as llama_model does:
// eval splits a longer span into calls of max_batch() tokens, and inner().calls counts the calls.
class batched_model : public wrapped_model {
public:
    batched_model(function_model inner, int32_t max_batch) : wrapped_model(std::move(inner)), max_batch_(max_batch) {}

    int32_t max_batch() const { return max_batch_; }

    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        const size_t v = size_t(vocab_size());
        for (size_t done = 0; done < tokens.size();) {
            const size_t n = std::min(tokens.size() - done, size_t(max_batch_));
            inner_.eval(tokens.subspan(done, n), position + int32_t(done),
                        logits.empty() ? logits : logits.subspan(done * v, n * v));
            done += n;
        }
    }

private:
    int32_t max_batch_;
};

static_assert(causal_model<batched_model>, "batched_model must satisfy causal_model");

// A function_model that also finds each row's argmax and top probability itself (greedy_model),
// as llama_model does on its device; logit_rows counts the rows eval handed out, argmax_rows
// those eval_greedy reduced.
class argmax_model : public wrapped_model {
public:
    explicit argmax_model(function_model inner, bool top_probability = true)
        : wrapped_model(std::move(inner)), top_(top_probability) {}

    bool has_top_probability() const { return top_; }

    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        inner_.eval(tokens, position, logits);
        if (!logits.empty()) logit_rows += int64_t(tokens.size());
    }
    void eval_greedy(std::span<const int32_t> tokens, int32_t position, std::span<int32_t> ids, std::span<float> top) {
        check(ids.size() == tokens.size() && (top.empty() || (top_ && top.size() == tokens.size())),
              errc::invalid_argument, "argmax_model: one id per token, and one top probability per token or none");
        const size_t v = size_t(vocab_size());
        std::vector<float> rows(tokens.size() * v);
        inner_.eval(tokens, position, rows);
        for (size_t i = 0; i < tokens.size(); ++i) {
            const std::span<const float> row(rows.data() + i * v, v);
            const size_t best = size_t(std::max_element(row.begin(), row.end()) - row.begin());  // the first largest
            ids[i] = int32_t(best);
            if (!top.empty()) top[i] = top1_probability(row);  // the formula model_drafter applies to the rows
        }
        argmax_rows += int64_t(tokens.size());
    }

    int64_t logit_rows = 0, argmax_rows = 0;

private:
    bool top_;
};

static_assert(greedy_model<argmax_model>, "argmax_model must satisfy greedy_model");

// A function_model that also picks each row's `k` best candidates itself (top_k_model), with the
// graph's top_k (cpu::top_k, the order every backend gives), as llama_model does on its device with
// llama_options::top_candidates; logit_rows counts the rows eval handed out, top_rows those
// eval_top reduced.
class top_candidates_model : public wrapped_model {
public:
    top_candidates_model(function_model inner, int32_t k, bool top_probability = true)
        : wrapped_model(std::move(inner)), k_(k), top_(top_probability) {}

    int32_t top_candidates() const { return k_; }
    bool has_top_probability() const { return top_; }

    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        inner_.eval(tokens, position, logits);
        if (!logits.empty()) logit_rows += int64_t(tokens.size());
    }
    // top: each row's top probability (top1_probability), or none.
    void eval_top(std::span<const int32_t> tokens, int32_t position, std::span<int32_t> ids, std::span<float> logits,
                  std::span<float> top = {}) {
        const size_t v = size_t(vocab_size()), k = size_t(k_);
        check(ids.size() == tokens.size() * k && logits.size() == ids.size() &&
                  (top.empty() || (top_ && top.size() == tokens.size())),
              errc::invalid_argument, "top_candidates_model: k ids and k logits per token, and one top probability per token or none");
        std::vector<float> rows(tokens.size() * v);
        inner_.eval(tokens, position, rows);
        cpu::top_k(rows.data(), ids.data(), int64_t(v), int64_t(k), int64_t(tokens.size()));
        for (size_t i = 0; i < ids.size(); ++i) logits[i] = rows[(i / k) * v + size_t(ids[i])];
        for (size_t i = 0; i < top.size(); ++i) top[i] = top1_probability(std::span<const float>(rows).subspan(i * v, v));
        top_rows += int64_t(tokens.size());
    }

    int64_t logit_rows = 0, top_rows = 0;

private:
    int32_t k_;
    bool top_;
};

static_assert(top_k_probability_model<top_candidates_model>, "top_candidates_model must satisfy top_k_probability_model");

// One step of splitmix64: x advanced by its gamma, then its output function (llmrt::testing::mix64).
inline uint64_t splitmix64(uint64_t x) { return llmrt::testing::mix64(x + 0x9E3779B97F4A7C15ull); }

// A uniform in [−1, 1) from a hash.
inline float hash_unit(uint64_t h) { return float(double(splitmix64(h) >> 11) * 0x1.0p-52 - 1.0); }

// Pseudo-random logits: scale · U(−1, 1) hashed from (seed, the last `order` tokens (0: all of
// them), token id), plus noise · U(−1, 1) hashed with noise_seed. A draft that shares the seed
// and adds a little noise mostly agrees with its target.
inline logits_function hash_logits(uint64_t seed, int32_t order, float scale = 4.0f, uint64_t noise_seed = 0,
                                   float noise = 0.0f) {
    return [=](std::span<const int32_t> history, std::span<float> out) {
        const size_t window = order <= 0 ? history.size() : std::min(history.size(), size_t(order));
        uint64_t h = splitmix64(seed);
        for (int32_t t : history.last(window)) h = splitmix64(h ^ uint32_t(t));
        uint64_t hn = splitmix64(h ^ splitmix64(noise_seed + 17));
        for (size_t v = 0; v < out.size(); ++v) {
            out[v] = scale * hash_unit(h + v * 0x632BE59BD9B4E019ull);
            if (noise != 0.0f) out[v] += noise * hash_unit(hn + v * 0x8CB92BA72F3D8DD7ull);
        }
    };
}

// A target of `vocab` tokens with hashed logits (seed 11, the whole history), and a draft of it
// whose logits add noise · U(−1, 1): the less noise, the more often the draft agrees.
inline function_model hashed_target(int32_t vocab, int32_t eos = -1) {
    return function_model(make_vocabulary(vocab, eos), 2048, hash_logits(11, 0));
}
inline function_model hashed_draft(int32_t vocab, float noise, int32_t eos = -1) {
    return function_model(make_vocabulary(vocab, eos), 2048, hash_logits(11, 0, 4.0f, 5, noise));
}

// Logits ln P(next | previous token) from a row-stochastic table (0 → −inf).
inline logits_function table_logits(std::vector<std::vector<double>> table) {
    return [table = std::move(table)](std::span<const int32_t> history, std::span<float> out) {
        const auto& row = table.at(size_t(history.back()));
        for (size_t v = 0; v < out.size(); ++v)
            out[v] = row[v] > 0.0 ? float(std::log(row[v])) : -std::numeric_limits<float>::infinity();
    };
}

}  // namespace llmrt::sample::testing
