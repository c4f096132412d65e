// llmrt-speculative: speculative decoding with a target and a draft model (and/or the n-gram
// drafter), against plain decoding of the target with the same sampler chain and seed.
//
//   llmrt-speculative                       a random Q8_0 target, the same weights as Q2_K draft
//   llmrt-speculative --ngram --repeat 6    add the n-gram drafter, on a repetitive prompt
//   llmrt-speculative --target T.gguf --draft D.gguf --prompt 1,2,3 -n 64 --temp 0.8
//
// Prints tokens/s without and with speculation, the speculative statistics, and whether the
// speculative output equals plain decoding token for token (it must for greedy decoding, and for
// sampling with point-mass drafts: the verifier draws the target's token from the same
// counter-based RNG value plain decoding uses at that position). Exit status 2 when it does not.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/model.hpp>
#include <llmrt/sample/sample.hpp>

#include "../generate/arguments.hpp"
#include "../generate/backend_choice.hpp"
#include "speculative_run.hpp"

namespace {

using llmrt_examples::command_line;
using llmrt_examples::to_ids;

namespace spec = llmrt_examples::speculative;

constexpr const char* usage =
    "usage: llmrt-speculative [--target T.gguf] [--draft D.gguf | --no-draft] [--ngram] [--prompt IDS]\n"
    "                         [--repeat N] [-n N] [--temp T] [--seed N] [--draft-temp T] [--repeat-penalty F]\n"
    "                         [--n-max N] [--p-min P] [--no-fallback] [--no-overlap] [--backend NAME]\n"
    "\n"
    "  --target, --draft  GGUF models sharing one vocabulary. Default: a random llama made in memory,\n"
    "                     Q8_0 as the target and the same weights as Q2_K as the draft.\n"
    "  --no-draft         no draft model (then --ngram drafts alone)\n"
    "  --ngram            the n-gram (prompt lookup) drafter, asked before the draft model\n"
    "  --prompt IDS       comma-separated token ids (default 1,259,260,261)\n"
    "  --repeat N         the prompt N times after its first token (repetitive input for --ngram)\n"
    "  -n N               tokens to generate (default 128)\n"
    "  --temp T           target temperature; 0 = greedy (default 0)\n"
    "  --seed N           sampler seed (default 1)\n"
    "  --draft-temp T     sample the draft model at T and verify by speculative sampling (default 0:\n"
    "                     greedy drafts, so the output equals plain decoding token for token)\n"
    "  --repeat-penalty F llama.cpp's repeat penalty over the last 64 tokens (default 1 = off)\n"
    "  --n-max N          most draft tokens per round (default 16)\n"
    "  --p-min P          a draft model stops drafting below this top-1 probability. Default 0 for the\n"
    "                     generated pair (a random model's top-1 probability is about 0.03), else 0.5.\n"
    "  --no-fallback      keep drafting while speculation measures slower. By default the fallback\n"
    "                     times drafting rounds and plain steps (2 plain probes at the start and every\n"
    "                     128 rounds) and, once 8 rounds cost more per token than a plain step,\n"
    "                     decodes 32 tokens plainly, doubling up to 1024 while drafting keeps losing\n"
    "                     (llmrt::sample::fallback_policy). --no-fallback shows speculation itself;\n"
    "                     with --draft-temp it also makes the token stream independent of timing.\n"
    "  --no-overlap       draft only after each verification. By default, on the CUDA and CPU backends,\n"
    "                     the draft model drafts the next round while the target verifies this one\n"
    "                     (on a second thread), guessing that it is wholly accepted; the tokens are\n"
    "                     the same either way (llmrt::sample::generation_options::overlap)\n"
    "  --backend NAME     cpu, cpu:f32, cpu:ggml (default: the best present)\n";

struct arguments {
    std::string target_path, draft_path, backend;
    bool no_draft = false, ngram = false, fallback = true, overlap = true;
    std::vector<int32_t> prompt = spec::default_prompt();
    int32_t repeat = 1, n_new = 128, n_max = 16;
    float temperature = 0.0f, draft_temperature = 0.0f, repeat_penalty = 1.0f, p_min = -1.0f;
    uint64_t seed = 1;
};

arguments parse(int argc, char** argv) {
    arguments a;
    for (command_line cl(argc, argv); cl.next();) {
        const std::string& o = cl.option();
        if (o == "--target") a.target_path = cl.value();
        else if (o == "--draft") a.draft_path = cl.value();
        else if (o == "--no-draft") a.no_draft = true;
        else if (o == "--ngram") a.ngram = true;
        else if (o == "--prompt") a.prompt = to_ids(cl.value());
        else if (o == "--repeat") a.repeat = cl.int_value(1);
        else if (o == "-n") a.n_new = cl.int_value();
        else if (o == "--temp") a.temperature = float(cl.number_value());
        else if (o == "--seed") a.seed = uint64_t(cl.int_value());
        else if (o == "--draft-temp") a.draft_temperature = float(cl.number_value());
        else if (o == "--repeat-penalty") a.repeat_penalty = float(cl.number_value());
        else if (o == "--n-max") a.n_max = cl.int_value(1);
        else if (o == "--p-min") a.p_min = float(cl.number_value(0.0, 1.0));
        else if (o == "--no-fallback") a.fallback = false;
        else if (o == "--fallback") a.fallback = true;  // the default, still accepted
        else if (o == "--no-overlap") a.overlap = false;
        else if (o == "--backend") a.backend = cl.value();
        else if (o == "-h" || o == "--help") {
            std::fputs(usage, stdout);
            std::exit(0);
        } else cl.reject();
    }
    if (!a.draft_path.empty() && a.no_draft)
        throw llmrt::error(llmrt::errc::invalid_argument, "--draft and --no-draft contradict each other");
    if (!a.draft_path.empty() && a.target_path.empty())
        throw llmrt::error(llmrt::errc::invalid_argument, "--draft needs --target (the generated pair has its own draft)");
    if (!a.target_path.empty() && a.draft_path.empty()) a.no_draft = true;  // a given target has no implied draft
    if (a.no_draft && !a.ngram)
        throw llmrt::error(llmrt::errc::invalid_argument,
                           "nothing would draft: give --draft, or --ngram for the n-gram drafter alone");
    return a;
}

// The first token (BOS) once, the rest `repeat` times.
std::vector<int32_t> repeated(const std::vector<int32_t>& prompt, int32_t repeat) {
    if (prompt.size() < 2 || repeat == 1) return prompt;
    std::vector<int32_t> out{prompt.front()};
    for (int32_t r = 0; r < repeat; ++r) out.insert(out.end(), prompt.begin() + 1, prompt.end());
    return out;
}

void print_tokens(const char* label, const std::vector<int32_t>& tokens, std::size_t at_most = 48) {
    std::printf("%s", label);
    for (std::size_t i = 0; i < tokens.size() && i < at_most; ++i) std::printf("%d ", tokens[i]);
    if (tokens.size() > at_most) std::printf("... (%zu tokens)", tokens.size());
    std::printf("\n");
}

void print_stats(const llmrt::sample::speculative_stats& s) {
    std::printf("statistics:\n");
    std::printf("  rounds %lld (target calls with a draft; drafted ahead %lld), plain steps %lld (of them fallback %lld), "
                "target calls %lld\n",
                (long long)s.rounds, (long long)s.drafted_ahead, (long long)s.plain_steps, (long long)s.fallback_steps,
                (long long)s.target_calls);
    std::printf("  drafted %lld, accepted %lld: acceptance rate %.3f, mean acceptance length %.2f tokens per round\n",
                (long long)s.drafted, (long long)s.accepted, s.acceptance_rate(), s.mean_acceptance_length());
    std::printf("  acceptance rate by draft position:");
    for (std::size_t i = 0; i < s.drafted_at.size(); ++i)
        std::printf(" %zu:%.2f(%lld)", i + 1, s.acceptance_rate_at(i), (long long)s.drafted_at[i]);
    std::printf("\n  time in target %.1f ms, in drafters %.1f ms\n", s.target_seconds * 1e3, s.draft_seconds * 1e3);
    for (const auto& d : s.per_drafter) {
        std::printf("  drafter %-12s asked %lld, drafts verified %lld, drafted %lld, accepted %lld (%.3f), %.1f ms\n",
                    d.name.c_str(), (long long)d.calls, (long long)d.rounds, (long long)d.drafted, (long long)d.accepted,
                    d.acceptance_rate(), d.seconds * 1e3);
        if (d.work.tokens > 0)
            std::printf("          its model evaluated %lld tokens (%lld of them catching up) in %lld forward calls\n",
                        (long long)d.work.tokens, (long long)d.work.catch_up, (long long)d.work.forwards);
    }
}

template <class Backend>
int run(Backend& backend, const std::string& backend_description, const spec::model_pair& files, const arguments& a) {
    using namespace llmrt;
    const std::vector<int32_t> prompt = repeated(a.prompt, a.repeat);

    spec::run_config config;
    config.sampling = sample::sampling_params::greedy();
    if (a.temperature > 0.0f) {
        config.sampling = sample::sampling_params{};
        config.sampling.temperature = a.temperature;
    }
    config.sampling.repeat_penalty = a.repeat_penalty;
    config.sampling.seed = a.seed;
    config.draft_model = files.draft != nullptr;
    config.ngram = a.ngram;
    config.draft_temperature = a.draft_temperature;
    config.policy.n_max = a.n_max;
    config.policy.p_min = a.p_min >= 0.0f ? a.p_min : a.target_path.empty() ? 0.0f : config.policy.p_min;
    config.policy.fallback.enabled = a.fallback;
    config.policy.validate();
    config.overlap = a.overlap;

    const auto ctx_of = [](const gguf::file& f) { return model::load_llama_weights(f).hparams.n_ctx_train; };
    const int32_t n_ctx = spec::cache_length_for(ctx_of(*files.target), prompt.size(), a.n_new, config.policy);
    const model::llama_options options{.n_ctx = n_ctx, .max_batch = std::min(config.policy.n_max + 1, 64)};
    model::llama_options target_options = options;
    // Sampling reads each token's top candidates, picked on the device, not its logits.
    if (a.temperature > 0.0f) target_options.top_candidates = llmrt_examples::top_candidates;
    model::llama_model<Backend> target(backend, files.target, target_options);
    std::unique_ptr<model::llama_model<Backend>> draft;
    model::llama_options draft_options = options;
    draft_options.top_probability = true;  // the drafter's p_min without reading its logits back
    // Sampled drafts read candidates too; greedy drafts only argmax ids, so their model skips the top_k.
    if (a.draft_temperature > 0.0f) draft_options.top_candidates = target_options.top_candidates;
    if (files.draft) draft = std::make_unique<model::llama_model<Backend>>(backend, files.draft, draft_options);

    const auto& h = target.hparams();
    std::printf("target:   %s\n          llama, %d layers, n_embd %d, %d heads (%d kv), n_ff %d, vocab %d\n",
                files.target->source().c_str(), h.n_layer, h.n_embd, h.n_head, h.n_head_kv, h.n_ff, h.n_vocab);
    if (draft) {
        const auto& d = draft->hparams();
        std::printf("draft:    %s\n          llama, %d layers, n_embd %d, n_ff %d\n", files.draft->source().c_str(),
                    d.n_layer, d.n_embd, d.n_ff);
    }
    std::printf("backend:  %s\n", backend_description.c_str());
    std::printf("drafters: %s; n_max %d (adaptive), p_min %.2f, fallback %s\n", spec::drafters_name(config).c_str(),
                config.policy.n_max, double(config.policy.p_min), a.fallback ? "on" : "off");
    std::printf("overlap:  %s\n", config.overlap ? "on (the next round drafted during each verification)" : "off");
    std::printf("sampling: %s, seed %llu, repeat penalty %.2f\n",
                a.temperature > 0.0f ? ("temperature " + std::to_string(a.temperature) + ", top-k 40, top-p 0.95, min-p 0.05").c_str()
                                     : "greedy",
                (unsigned long long)a.seed, double(a.repeat_penalty));
    print_tokens("prompt:   ", prompt);

    spec::run_config plain_config = config;
    plain_config.draft_model = plain_config.ngram = false;
    const spec::run_result plain = spec::run(target, draft.get(), plain_config, prompt, a.n_new);
    const spec::run_result fast = spec::run(target, draft.get(), config, prompt, a.n_new);

    print_tokens("output:   ", fast.tokens);
    if (!target.vocab().token_text.empty()) {
        std::string text;
        for (unsigned char c : model::detokenize(target.vocab(), fast.tokens).substr(0, 160))
            text += c < 0x20 || c == 0x7f ? '.' : char(c);
        std::printf("text:     \"%s\"\n", text.c_str());
    }
    std::printf("plain:       %zu tokens in %8.1f ms: %7.1f tokens/s (stop: %s)\n", plain.tokens.size(), plain.seconds * 1e3,
                plain.tokens_per_second(), spec::to_string(plain.reason));
    std::printf("speculative: %zu tokens in %8.1f ms: %7.1f tokens/s (stop: %s), speedup %.2fx\n", fast.tokens.size(),
                fast.seconds * 1e3, fast.tokens_per_second(), spec::to_string(fast.reason),
                plain.tokens_per_second() > 0.0 ? fast.tokens_per_second() / plain.tokens_per_second() : 0.0);
    print_stats(fast.stats);

    const bool equal = fast.tokens == plain.tokens;
    const bool must_equal = !(config.draft_model && a.draft_temperature > 0.0f);
    const char* what = a.temperature > 0.0f ? "plain sampling with the same seed" : "plain greedy decoding";
    if (must_equal) {
        std::printf("output equals %s: %s\n", what, equal ? "yes" : "NO");
        return equal ? 0 : 2;
    }
    std::printf("output equals %s: %s (sampled drafts are verified by speculative sampling: the output follows the\n"
                "target's distribution, not the plain run's token stream)\n",
                what, equal ? "yes" : "no");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        using namespace llmrt;
        const arguments a = parse(argc, argv);
        spec::model_pair files;
        if (a.target_path.empty()) {
            std::printf("no target given: a random llama in memory, %s target and %s draft of the same weights\n",
                        name(spec::default_target_type), name(spec::default_draft_type));
            files = spec::generated_pair();
            if (a.no_draft) files.draft = nullptr;
        } else {
            files.target = std::make_shared<const gguf::file>(gguf::file::open(a.target_path));
            if (!a.no_draft) files.draft = std::make_shared<const gguf::file>(gguf::file::open(a.draft_path));
        }
        const std::string backend = a.backend.empty() ? llmrt_examples::backends_by_preference().front() : a.backend;
        int status = 0;
        arguments chosen = a;
        chosen.overlap = a.overlap && llmrt_examples::overlap_allowed(backend);
        chosen.backend = backend;
        llmrt_examples::with_backend(backend, [&](auto& b, const std::string& description) {
            status = run(b, description, files, chosen);
        });
        return status;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-speculative: %s\n", llmrt_examples::message_of(e));
        return 1;
    }
}
