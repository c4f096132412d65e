// What llmrt-speculative and llmrt-bench-speculative share: the default target/draft pair, the
// prompts, and one timed run of plain or speculative decoding on llama_model<Backend>.
//
// The default pair is one random llama written twice from the same seed: as Q8_0 (the target)
// and as Q2_K (the draft), so the draft holds the target's weights at about 2.6 bits each. Every
// matrix's k (n_embd, n_ff) is a multiple of 256, as Q2_K's super-blocks need.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <llmrt/core/error.hpp>
#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/model.hpp>
#include <llmrt/sample/sample.hpp>

namespace llmrt_examples::speculative {

// 4 layers, n_embd 256, n_ff 768, vocabulary 512: big enough that a forward call is mostly
// mat-vec work, small enough to run in a second on the CPU reference backend.
inline llmrt::model::llama_shape default_shape() {
    return {.n_vocab = 512, .n_embd = 256, .n_layer = 4, .n_head = 4, .n_head_kv = 2, .n_ff = 768, .n_ctx = 2048};
}

inline constexpr llmrt::qtype default_target_type = llmrt::qtype::q8_0;
inline constexpr llmrt::qtype default_draft_type = llmrt::qtype::q2_K;

struct model_pair {
    std::shared_ptr<const llmrt::gguf::file> target, draft;  // draft: null for n-gram drafting alone
};

inline std::shared_ptr<const llmrt::gguf::file> generated_model(const llmrt::model::llama_shape& shape, llmrt::qtype type,
                                                                uint64_t seed) {
    return std::make_shared<const llmrt::gguf::file>(llmrt::gguf::file::from_bytes(
        llmrt::model::make_random_llama(shape, type, seed).to_bytes(),
        std::string("random llama ") + llmrt::name(type) + " (in memory)"));
}

// One random model as the Q8_0 target and the same weights as the Q2_K draft.
inline model_pair generated_pair(const llmrt::model::llama_shape& shape = default_shape(), uint64_t seed = 1) {
    return {generated_model(shape, default_target_type, seed), generated_model(shape, default_draft_type, seed)};
}

inline std::vector<int32_t> default_prompt() { return {1, 259, 260, 261}; }

// BOS, then `period` distinct word tokens repeated `repeats` times: input for the n-gram drafter.
// (A random model does not copy its prompt, but it falls into loops of its own, which the n-gram
// drafter then finds in the sequence.)
inline std::vector<int32_t> repetitive_prompt(int32_t period = 8, int32_t repeats = 6) {
    std::vector<int32_t> p{1};
    for (int32_t r = 0; r < repeats; ++r)
        for (int32_t i = 0; i < period; ++i) p.push_back(300 + 7 * i);
    return p;
}

// How one run decodes.
struct run_config {
    llmrt::sample::sampling_params sampling = llmrt::sample::sampling_params::greedy();  // the target's chain
    bool draft_model = true;         // draft with the draft model (needs one)
    bool ngram = false;              // draft with the n-gram drafter (first, when both are on)
    float draft_temperature = 0.0f;  // ≤ 0: greedy (point-mass) drafts; > 0: sampled drafts with their q
    llmrt::sample::draft_policy policy;
    bool stop_at_eos = true;
    std::function<double()> clock;  // seconds, for every timing of the run; empty: steady_clock
    bool overlap = false;           // draft ahead while the target verifies (generation_options::overlap)
};

// Seconds of processor time this process has used. On a shared machine, where wall time depends on
// what else runs, it measures a single-threaded CPU backend's work; it says nothing of GPU work.
inline double process_cpu_seconds() { return double(std::clock()) / double(CLOCKS_PER_SEC); }

struct run_result {
    std::vector<int32_t> tokens;
    llmrt::sample::stop_reason reason = llmrt::sample::stop_reason::length;
    double seconds = 0.0;  // the whole generate() call, prompt processing included
    llmrt::sample::speculative_stats stats;

    double tokens_per_second() const { return seconds > 0.0 ? double(tokens.size()) / seconds : 0.0; }
};

inline const char* to_string(llmrt::sample::stop_reason r) {
    switch (r) {
        case llmrt::sample::stop_reason::length: return "length";
        case llmrt::sample::stop_reason::eos: return "eos";
        case llmrt::sample::stop_reason::context_full: return "context full";
    }
    return "unknown";
}

// Names the drafters of a configuration, in the order they are asked.
inline std::string drafters_name(const run_config& c) {
    std::string s = c.ngram ? "ngram" : "";
    if (c.draft_model) s += std::string(s.empty() ? "" : " + ") + (c.draft_temperature > 0.0f ? "draft model (sampled)" : "draft model");
    return s.empty() ? "none (plain)" : s;
}

// Decodes n tokens after `prompt` with `target`, drafting with `draft` (may be null when
// config.draft_model is off) and the n-gram drafter as configured; with neither, plain decoding
// through the same generator and sampler chain.
template <class Model>
run_result run(Model& target, Model* draft, const run_config& config, std::span<const int32_t> prompt, int32_t n) {
    using namespace llmrt::sample;
    llmrt::check(!config.draft_model || draft != nullptr, llmrt::errc::invalid_argument,
                 "speculative run: drafting with a draft model needs one");
    const std::function<double()> now = config.clock ? config.clock : [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
    generator<Model> g(target, sampler_chain(config.sampling), config.policy, {.stop_at_eos = config.stop_at_eos, .clock = now, .overlap = config.overlap});
    if (config.ngram) g.add_drafter(std::make_unique<ngram_drafter>());
    if (config.draft_model) {
        sampling_params dp = config.draft_temperature > 0.0f ? config.sampling : sampling_params::greedy();
        if (config.draft_temperature > 0.0f) dp.temperature = config.draft_temperature;
        g.add_drafter(std::make_unique<model_drafter<Model>>(*draft, sampler_chain(dp)));
    }
    const double start = now();
    generation_result out = g.generate(prompt, n);
    run_result r;
    r.seconds = now() - start;
    r.tokens = std::move(out.tokens);
    r.reason = out.reason;
    r.stats = g.stats();
    return r;
}

// A cache long enough for the prompt, n tokens and one more draft, within the model's context.
inline int32_t cache_length_for(int32_t context_length, std::size_t prompt_tokens, int32_t n,
                                const llmrt::sample::draft_policy& policy) {
    const int64_t want = int64_t(prompt_tokens) + int64_t(n) + int64_t(policy.n_max) + 1;
    return int32_t(std::min<int64_t>(context_length, want));
}

}  // namespace llmrt_examples::speculative
