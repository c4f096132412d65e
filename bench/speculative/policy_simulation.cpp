// llmrt-bench-speculative-policy: what each draft-length rule would gain for given call costs, on
// a fake clock, without a GPU. A target and a draft model of hashed logits (the draft's with
// noise, so it agrees with the target less as the noise grows) charge the clock what a backend's
// forward calls cost:
//   target call of m tokens: target_ms + token_ms · (m − 1) + pass_ms · floor((m − 1) / pass)
//                            (+ row_ms per row of logits read back, when sampling reads them)
//   draft call:              draft_ms
// and the library's generator decodes with each rule (llmrt::sample::adaptive_length: the
// accepted tokens' moving average + 2, or the length from measured costs), the fallback on,
// no drafting ahead, p_min 0. Speedup = plain decoding's clock time over speculative decoding's, prompts
// processed outside both. The defaults are the H200 pair's costs (bench/RESULTS.md, Speculative).
//
//   llmrt-bench-speculative-policy [--target-ms A] [--token-ms B] [--pass N] [--pass-ms C]
//                                  [--draft-ms D] [--row-ms R] [--noise X,X,...] [--temps T,T]
//                                  [--prompts P] [-n N] [--prompt-tokens L]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <llmrt/core/error.hpp>
#include <llmrt/sample/sample.hpp>

#include "../../examples/generate/arguments.hpp"

namespace {

using namespace llmrt::sample;

constexpr int32_t vocabulary_size = 64;

struct call_costs {  // milliseconds
    double target = 0.34, token = 0.02, pass_extra = 0.35, draft = 0.144, row = 0.0;
    int32_t pass = 8;
};

// Logits: 8 · U(−1, 1) hashed from the whole history and the token, plus noise · U(−1, 1) hashed
// with another seed: the draft shares the target's logits and adds noise.
uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
float unit(uint64_t h) { return float(double(mix(h) >> 11) * 0x1.0p-52 - 1.0); }

class simulated_model {
public:
    simulated_model(double& clock, std::function<double(std::size_t tokens, bool rows)> cost, float noise)
        : clock_(clock), cost_(std::move(cost)), noise_(noise) {
        vocab_.size = vocabulary_size;
        vocab_.tokenizer = "simulated";
        for (int32_t i = 0; i < vocabulary_size; ++i) {
            char text[16];
            std::snprintf(text, sizeof text, "t%d", int(i));
            vocab_.token_text.emplace_back(text);
        }
    }
    const vocabulary& vocab() const { return vocab_; }
    int32_t vocab_size() const { return vocab_.size; }
    int32_t context_length() const { return 4096; }
    int32_t cache_length() const { return int32_t(cache_.size()); }
    void truncate(int32_t n) { cache_.resize(std::size_t(n)); }
    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) {
        llmrt::check(position == cache_length(), llmrt::errc::invalid_argument, "simulated_model: out-of-order eval");
        clock_ += 1e-3 * cost_(tokens.size(), !logits.empty());
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            cache_.push_back(tokens[i]);
            if (logits.empty()) continue;
            uint64_t h = 11;
            for (int32_t t : cache_) h = mix(h ^ uint32_t(t));
            const uint64_t hn = mix(h ^ 0x5DEECE66Dull);
            for (int32_t v = 0; v < vocabulary_size; ++v)
                logits[i * vocabulary_size + std::size_t(v)] =
                    8.0f * unit(h + uint64_t(v) * 0x632BE59BD9B4E019ull) + noise_ * unit(hn + uint64_t(v) * 0x8CB92BA72F3D8DD7ull);
        }
    }

private:
    double& clock_;
    std::function<double(std::size_t, bool)> cost_;
    float noise_;
    vocabulary vocab_;
    std::vector<int32_t> cache_;
};

struct outcome {
    double seconds = 0.0;
    speculative_stats stats;
};

// Decodes n tokens after each of `prompts` prompts; the prompt's processing is not counted.
outcome decode(const call_costs& c, float noise, float temperature, int rule, int32_t prompts, int32_t n,
               int32_t prompt_tokens) {
    double clock = 0.0;
    simulated_model target(clock, [&](std::size_t m, bool rows) {
        return c.target + c.token * double(m - 1) + c.pass_extra * double((int64_t(m) - 1) / c.pass) +
               (rows ? c.row * double(m) : 0.0);
    }, 0.0f);
    simulated_model draft(clock, [&](std::size_t, bool) { return c.draft; }, noise);
    draft_policy policy;
    policy.adaptive.cost_aware = rule == 1;
    policy.p_min = 0.0f;  // hashed logits' top probability says nothing of agreement
    generation_options options;
    options.stop_at_eos = false;
    options.clock = [&] { return clock; };
    sampling_params params = sampling_params::greedy();
    if (temperature > 0.0f) {
        params = sampling_params{};
        params.temperature = temperature;
    }
    generator<simulated_model> g(target, sampler_chain(params), policy, options);
    if (rule >= 0) g.add_drafter(std::make_unique<model_drafter<simulated_model>>(draft, sampler_chain(sampling_params::greedy())));
    outcome out;
    for (int32_t p = 0; p < prompts; ++p) {
        std::vector<int32_t> prompt;
        for (int32_t i = 0; i < prompt_tokens; ++i) prompt.push_back(int32_t(mix(uint64_t(p) * 1000 + uint64_t(i)) % vocabulary_size));
        // The target's prefill is the same for both and left out: time from its end.
        const double before = clock + 1e-3 * c.target;
        g.generate(prompt, n);
        out.seconds += clock - before;
    }
    out.stats = g.stats();
    return out;
}

std::vector<float> to_floats(const std::string& option, const std::string& v, double max) {
    std::vector<float> out;
    for (const std::string& t : llmrt_examples::to_list(option, v)) out.push_back(float(llmrt_examples::to_number(option, t, 0.0, max)));
    return out;
}

}  // namespace

int main(int argc, char** argv) try {
    call_costs c;
    std::vector<float> noises{0.01f, 0.03f, 0.1f, 0.3f}, temps{0.0f, 0.8f};
    int32_t prompts = 4, n = 256, prompt_tokens = 128;
    for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
        const std::string& o = cl.option();
        if (o == "--target-ms") c.target = cl.number_value(0.0, 1e4);
        else if (o == "--token-ms") c.token = cl.number_value(0.0, 1e4);
        else if (o == "--pass") c.pass = cl.int_value(1, 1 << 20);
        else if (o == "--pass-ms") c.pass_extra = cl.number_value(0.0, 1e4);
        else if (o == "--draft-ms") c.draft = cl.number_value(0.0, 1e4);
        else if (o == "--row-ms") c.row = cl.number_value(0.0, 1e4);
        else if (o == "--noise") noises = to_floats("--noise", cl.value(), 100.0);
        else if (o == "--temps") temps = to_floats("--temps", cl.value(), 100.0);
        else if (o == "--prompts") prompts = cl.int_value(1, 1000);
        else if (o == "-n") n = cl.int_value(1, 4000);
        else if (o == "--prompt-tokens") prompt_tokens = cl.int_value(1, 3000);
        else if (o == "-h" || o == "--help") {
            std::puts("usage: llmrt-bench-speculative-policy [--target-ms A] [--token-ms B] [--pass N] [--pass-ms C]\n"
                      "                                      [--draft-ms D] [--row-ms R] [--noise X,X,...] [--temps T,T]\n"
                      "                                      [--prompts P] [-n N] [--prompt-tokens L]\n"
                      "\n"
                      "Speedups of speculative decoding over plain decoding on a fake clock, for the two draft-length\n"
                      "rules (llmrt::sample::adaptive_length), with simulated models that charge a target call of m\n"
                      "tokens A + B (m - 1) + C floor((m - 1) / N) ms (+ R ms per row of logits read back) and a draft\n"
                      "call D ms. Defaults: the H200 pair's costs, A 0.34, B 0.02, N 8, C 0.35, D 0.144, R 0; noise\n"
                      "0.01,0.03,0.1,0.3 (the draft's logits' noise: the larger, the less it agrees); temperatures\n"
                      "0,0.8; 4 prompts of 128 tokens, 256 tokens each. A model, not a measurement.");
            return 0;
        } else {
            llmrt_examples::bad_argument("unknown option " + o + " (--help lists them)");
        }
    }
    if (n + prompt_tokens + 64 > 4096) llmrt_examples::bad_argument("-n plus --prompt-tokens must leave room in a context of 4096");
    std::printf("llmrt-bench-speculative-policy: target %.3f + %.3f (m - 1) + %.3f floor((m - 1) / %d) ms, rows %.3f ms, "
                "draft %.3f ms; %d prompts of %d tokens, %d tokens each\n\n",
                c.target, c.token, c.pass_extra, c.pass, c.row, c.draft, prompts, prompt_tokens, n);
    std::printf("| temperature | draft noise | accepted + 2: speedup | acceptance | from costs: speedup | acceptance | plain steps |\n"
                "|---|---|---|---|---|---|---|\n");
    for (float t : temps)
        for (float x : noises) {
            const outcome plain = decode(c, x, t, -1, prompts, n, prompt_tokens);
            const outcome accepted = decode(c, x, t, 0, prompts, n, prompt_tokens);
            const outcome costs = decode(c, x, t, 1, prompts, n, prompt_tokens);
            std::printf("| %.2f | %.2f | %.3fx | %.3f | %.3fx | %.3f | %lld of %d |\n", double(t), double(x),
                        plain.seconds / accepted.seconds, accepted.stats.acceptance_rate(), plain.seconds / costs.seconds,
                        costs.stats.acceptance_rate(), (long long)costs.stats.plain_steps, prompts * n);
        }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "llmrt-bench-speculative-policy: %s\n", llmrt_examples::message_of(e));
    return 1;
}
