// llmrt-bench-speculative-policy: what each draft-length rule would gain for given call costs, on
// a fake clock, without a GPU. A target and a draft model of hashed logits (the draft's with
// noise, so it agrees with the target less as the noise grows), the sampling tests' doubles
// (llmrt/testing/model_doubles.hpp), charge the clock what a backend's forward calls cost:
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
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <llmrt/sample/sample.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/model_doubles.hpp>

#include "../../examples/generate/arguments.hpp"

namespace {

using namespace llmrt::sample;
using namespace llmrt::sample::testing;
using llmrt::testing::mix64;  // splitmix64's output function, for the logits' and the prompts' hashes

constexpr int32_t vocabulary_size = 64;

struct call_costs {  // milliseconds
    double target = 0.34, token = 0.02, pass_extra = 0.35, draft = 0.144, row = 0.0;
    int32_t pass = 8;
};

// Logits: 8 · U(−1, 1) hashed from the whole history and the token, plus noise · U(−1, 1) hashed
// with another seed: the draft shares the target's logits and adds noise. Not the doubles'
// hash_logits: its hash draws other values, and bench/RESULTS.md's table comes from this one.
logits_function simulated_logits(float noise) {
    const auto unit = [](uint64_t h) { return float(double(mix64(h) >> 11) * 0x1.0p-52 - 1.0); };
    return [=](std::span<const int32_t> history, std::span<float> out) {
        uint64_t h = 11;
        for (int32_t t : history) h = mix64(h ^ uint32_t(t));
        const uint64_t hn = mix64(h ^ 0x5DEECE66Dull);
        for (std::size_t v = 0; v < out.size(); ++v)
            out[v] = 8.0f * unit(h + v * 0x632BE59BD9B4E019ull) + noise * unit(hn + v * 0x8CB92BA72F3D8DD7ull);
    };
}

// A simulated model: those logits, its calls charged to costs.clock.
function_model simulated_model(model_costs costs, float noise) {
    return function_model(make_vocabulary(vocabulary_size), 4096, simulated_logits(noise), std::move(costs));
}

struct outcome {
    double seconds = 0.0;
    speculative_stats stats;
};

// Decodes n tokens after each of `prompts` prompts; the prompt's processing is not counted.
outcome decode(const call_costs& c, float noise, float temperature, int rule, int32_t prompts, int32_t n,
               int32_t prompt_tokens, const fallback_policy& fallback) {
    fake_clock clock;
    const auto target_seconds = [&](int32_t m, bool rows) {
        return 1e-3 * (c.target + c.token * double(m - 1) + c.pass_extra * double((m - 1) / c.pass) +
                       (rows ? c.row * double(m) : 0.0));
    };
    function_model target = simulated_model({&clock, 0.0, 0.0, target_seconds}, 0.0f);
    function_model draft = simulated_model({&clock, 1e-3 * c.draft}, noise);
    draft_policy policy;
    policy.fallback = fallback;
    policy.adaptive.cost_aware = rule == 1;
    policy.p_min = 0.0f;  // hashed logits' top probability says nothing of agreement
    generation_options options;
    options.stop_at_eos = false;
    options.clock = std::ref(clock);
    sampling_params params = sampling_params::greedy();
    if (temperature > 0.0f) {
        params = sampling_params{};
        params.temperature = temperature;
    }
    generator<function_model> g(target, sampler_chain(params), policy, options);
    if (rule >= 0) g.add_drafter(std::make_unique<model_drafter<function_model>>(draft, sampler_chain(sampling_params::greedy())));
    outcome out;
    for (int32_t p = 0; p < prompts; ++p) {
        std::vector<int32_t> prompt;
        for (int32_t i = 0; i < prompt_tokens; ++i) prompt.push_back(int32_t(mix64(uint64_t(p) * 1000 + uint64_t(i)) % vocabulary_size));
        // The target's prefill is the same for both and left out: time from its end.
        const double before = clock.seconds + 1e-3 * c.target;
        g.generate(prompt, n);
        out.seconds += clock.seconds - before;
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
    fallback_policy fallback;
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
        else if (o == "--rounds-after-backoff") fallback.rounds_after_backoff = cl.int_value(1, 1000000);
        else if (o == "-h" || o == "--help") {
            std::puts("usage: llmrt-bench-speculative-policy [--target-ms A] [--token-ms B] [--pass N] [--pass-ms C]\n"
                      "                                      [--draft-ms D] [--row-ms R] [--noise X,X,...] [--temps T,T]\n"
                      "                                      [--prompts P] [-n N] [--prompt-tokens L] [--rounds-after-backoff K]\n"
                      "\n"
                      "Speedups of speculative decoding over plain decoding on a fake clock, for the two draft-length\n"
                      "rules (llmrt::sample::adaptive_length), with simulated models that charge a target call of m\n"
                      "tokens A + B (m - 1) + C floor((m - 1) / N) ms (+ R ms per row of logits read back) and a draft\n"
                      "call D ms. Defaults: the H200 pair's costs, A 0.34, B 0.02, N 8, C 0.35, D 0.144, R 0; noise\n"
                      "0.01,0.03,0.1,0.3 (the draft's logits' noise: the larger, the less it agrees); temperatures\n"
                      "0,0.8; 4 prompts of 128 tokens, 256 tokens each; the fallback's rounds before it judges again\n"
                      "after a back-off K 8 (llmrt::sample::fallback_policy). A model, not a measurement.");
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
            const outcome plain = decode(c, x, t, -1, prompts, n, prompt_tokens, fallback);
            const outcome accepted = decode(c, x, t, 0, prompts, n, prompt_tokens, fallback);
            const outcome costs = decode(c, x, t, 1, prompts, n, prompt_tokens, fallback);
            std::printf("| %.2f | %.2f | %.3fx | %.3f | %.3fx | %.3f | %lld of %d |\n", double(t), double(x),
                        plain.seconds / accepted.seconds, accepted.stats.acceptance_rate(), plain.seconds / costs.seconds,
                        costs.stats.acceptance_rate(), (long long)costs.stats.plain_steps, prompts * n);
        }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "llmrt-bench-speculative-policy: %s\n", llmrt_examples::message_of(e));
    return 1;
}
