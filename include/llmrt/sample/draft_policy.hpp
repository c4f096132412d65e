// Every default of speculative decoding, in one place. Change them here, and say why.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"

namespace llmrt::sample {

// How a draft is verified.
enum class verification {
    // Point-mass drafts (greedy draft model, n-gram) by sample-and-compare; drafts that report
    // their q by speculative sampling (accept min(1, p/q), else draw from norm(max(0, p − q))).
    automatic,
    // Sample-and-compare for every draft: exact for any drafter and the token stream equals plain
    // sampling with the same seed, but a sampled draft is accepted with Σ p·q instead of Σ min(p, q).
    sample_and_compare,
};

// How long a round's draft may be, from what recent rounds measured.
//
// cost_aware: the length n in 1..n_max that emits tokens fastest,
//   E(n) / (n·d + v(n + 1)),   E(n) = Σ_{i=0..n} α^i,
// where E(n) is a round's expected tokens when each draft token is accepted with probability α
// given the ones before it (α = accepted / (accepted + rejections), moving averages over rounds),
// d is the seconds of one forward call of the drafter's model (a draft of n tokens takes about n,
// the first shared with the catch-up on the round's emitted tokens; a drafter without a model: its
// seconds per proposed token), and v(m) the seconds of evaluating m tokens on the target and
// verifying them (m = 1: a plain step), each a moving average of what was measured. d is timed on
// a round's proposal alone: what the drafter missed beyond a round's tokens (the prompt, a plain
// phase) it catches up on first, apart (drafter::catch_up), so every drafting round measures d. A
// v(m) not yet measured is taken as the nearest measured one below it (0 below all): optimistic,
// so a round tries that length and measures it. A verification's cost is not linear in m on every
// backend: the CUDA mat-vec takes 8 columns at once, so 9..16 tokens cost about two passes over the
// weights. On tools/train_pair's pair (H200) a draft token costs 0.42× a target step, which makes
// long drafts a loss even when most of their tokens are accepted. With the fallback on, when no
// drafter's fastest length is predicted to beat a plain step (1 / v(1)), the step is decoded
// plainly and counted as a fallback step; after fallback.backoff_tokens such steps one round
// speculates anyway, to measure α and d again, and while the prediction holds the interval doubles
// up to fallback.max_backoff_tokens. Until a round has measured d and some v, and with cost_aware
// off: the length follows the accepted tokens, a moving average of the accepted tokens per round
// (a fully accepted draft counts as at least the limit it was drafted under, so a drafter that is
// always right keeps growing) plus `headroom`, clamped to [1, n_max]. The costs are timed with the
// generation's clock (generation_options::clock): with a wall clock the lengths depend on timing,
// and so, like the fallback's schedule, does a speculative-sampling token stream. Where one must be
// bit-reproducible, pass a deterministic clock or turn cost_aware off.
//
// cost_aware is off by default until it is measured on the GPU. Its first run there (H200,
// tools/train_pair's quick pair) priced a draft token with the draft model's prompt prefill in it
// and went plain (0.95x where the acceptance rule gave 1.20x); it took the n-gram drafter from
// 2.84x to 2.92x on code and from 2.91x to 3.09x on prose. Its second (a trained 174M target, a
// 10x smaller draft, code, greedy, acceptance 0.99) gave 1.19x for the acceptance rule's 1.39x:
// d was then seconds per draft token, which drafts cut short by p_min inflated, and was timed only
// on proposals that caught up on no more than a round's tokens, so never again after a plain
// phase, and decoding stayed plain. Both are mended (d per forward call, catch-up apart) but not
// yet measured.
struct adaptive_length {
    bool enabled = true;
    bool cost_aware = false;
    float ema_weight = 0.3f;  // weight of the newest round
    int32_t headroom = 2;     // tokens drafted beyond the accepted average (HF's schedule grows by 2)
};

// Plain decoding while speculation is measured slower. Seconds per emitted token are measured
// for speculative rounds (drafting + verification, empty drafts included) and for plain steps.
// Plain steps come from `probe_steps` probes at the start and every `reprobe_rounds` speculative
// rounds, and from back-off windows. After `min_rounds` speculative rounds, if speculation costs
// more than `margin` × the plain cost per token, decoding goes plain for `backoff_tokens` tokens,
// doubling up to `max_backoff_tokens` while speculation keeps losing. After a back-off it judges
// again after `rounds_after_backoff` speculative rounds: at min_rounds or more, on those rounds
// alone (the averages start afresh); below, on its moving averages from before the back-off
// updated by them, so a losing drafter costs fewer rounds per retry and a recovered one needs
// more retries to show it (the policy simulator, bench/RESULTS.md: at temperature 0.8, 0.88× →
// 0.92× with 1; at a draft noise of 0.1, greedy, 1.05× → 1.02×). With a wall clock this makes
// the schedule, hence a speculative-sampling token stream, depend on timing: turn it off (or pass
// a deterministic clock) where a sampled-draft run must be bit-reproducible. Sample-and-compare
// streams never depend on the schedule.
struct fallback_policy {
    bool enabled = true;
    int32_t probe_steps = 2;
    int32_t reprobe_rounds = 128;
    int32_t min_rounds = 8;
    int32_t rounds_after_backoff = 8;
    double margin = 1.0;
    int32_t backoff_tokens = 32;
    int32_t max_backoff_tokens = 1024;
    float ema_weight = 0.25f;
};

struct draft_policy {
    // At most this many draft tokens per round (llama.cpp's default); further clamped to the
    // tokens still wanted − 1 and to the target's context left − 1 (a round emits up to n + 1).
    int32_t n_max = 16;
    // Drafts shorter than this are dropped and the step is decoded plainly (1: keep every draft).
    int32_t n_min = 1;
    // A draft model stops drafting when its top-1 probability (softmax of its raw logits) at a
    // position is below p_min; per position, not cumulative. 0.5, not llama.cpp's long-standing
    // 0.75: on tools/train_pair's pair (H200, 4 code and 4 prose prompts, greedy) a draft that
    // stops at 0.75 leaves many steps undrafted that it would have guessed right (acceptance 1.000
    // at 0.75, 0.94 at 0.5), and a drafted token costs far less than a target step: 1.05x plain
    // at 0.75, 1.27x at 0.5, 1.28x at 0.3 (bench/RESULTS.md, "Speculative").
    float p_min = 0.5f;
    adaptive_length adaptive;
    fallback_policy fallback;
    verification mode = verification::automatic;

    void validate() const {
        check(n_max >= 1 && n_min >= 1 && n_min <= n_max, errc::invalid_argument, [&] {
            return "draft_policy: n_min " + std::to_string(n_min) + ", n_max " + std::to_string(n_max) +
                   " (need 1 <= n_min <= n_max)";
        });
        check(p_min >= 0.0f && p_min <= 1.0f, errc::invalid_argument,
              [&] { return "draft_policy: p_min " + std::to_string(p_min) + " (need 0 <= p_min <= 1)"; });
        check(adaptive.ema_weight > 0.0f && adaptive.ema_weight <= 1.0f && adaptive.headroom >= 0,
              errc::invalid_argument, [&] {
                  return "draft_policy.adaptive: ema_weight " + std::to_string(adaptive.ema_weight) + ", headroom " +
                         std::to_string(adaptive.headroom) + " (need 0 < ema_weight <= 1, headroom >= 0)";
              });
        check(fallback.probe_steps >= 1 && fallback.reprobe_rounds >= 1 && fallback.min_rounds >= 1 &&
                  fallback.rounds_after_backoff >= 1 &&
                  std::isfinite(fallback.margin) && fallback.margin > 0.0 && fallback.backoff_tokens >= 1 &&
                  fallback.max_backoff_tokens >= fallback.backoff_tokens && fallback.ema_weight > 0.0f &&
                  fallback.ema_weight <= 1.0f,
              errc::invalid_argument,
              "draft_policy.fallback: need probe_steps, reprobe_rounds, min_rounds, rounds_after_backoff, backoff_tokens >= 1, "
              "max_backoff_tokens >= backoff_tokens, margin > 0 and 0 < ema_weight <= 1");
    }
};

// Prompt lookup: match the last n tokens (n from ngram_max down to ngram_min) against an earlier
// occurrence in the sequence and propose what followed it. HF's default match size is 2; 1-token
// matches fire often on chat text and are mostly wrong, so the minimum is 2.
struct ngram_params {
    int32_t ngram_min = 2;
    int32_t ngram_max = 4;

    void validate() const {
        check(ngram_min >= 1 && ngram_max >= ngram_min, errc::invalid_argument, [&] {
            return "ngram_params: ngram_min " + std::to_string(ngram_min) + ", ngram_max " +
                   std::to_string(ngram_max) + " (need 1 <= ngram_min <= ngram_max)";
        });
    }
};

}  // namespace llmrt::sample
