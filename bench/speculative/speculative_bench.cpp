// llmrt-bench-speculative: what speculative decoding gains over plain decoding of the target.
//
//   llmrt-bench-speculative [--backend NAME] [-n N] [--reps R] [--clock wall|cpu] [--json FILE|-]
//                           [--period P] [--repeats R] [--n-max N] [--no-fallback]
//
// Workloads, all greedy, each against plain decoding of the same prompt with the same generator,
// with the library's fallback policy on (plain decoding while speculation measures slower) unless
// --no-fallback:
//   draft model           the default pair (Q8_0 target, Q2_K draft of the same weights)
//   draft, fallback off   the same without the fallback, to show speculation itself (left out with
//                         --no-fallback, where the first row already is that)
//   ngram                 the n-gram drafter alone on a repetitive prompt (BOS, P words R times)
//   ngram + draft model   both, chained (n-gram first), on the repetitive prompt
// Each timing is the fastest of R runs, plain and speculative runs interleaved. Decoding tokens/s is
// the generated tokens over the generate() call less the target's prompt processing (timed on its
// own: the target evaluating the prompt but its last token); a draft model's own pass over the
// prompt stays in the speculative time, as a cost of drafting with it. The statistics (vLLM's
// definitions, llmrt/sample/stats.hpp) are those of the fastest speculative run; their target time
// includes the prompt. --clock cpu times with process CPU time, which on a shared
// machine measures a single-threaded CPU backend's work rather than the machine's load; it does
// not see GPU work. Prints a table, then writes JSON (default speculative.json; '-' for stdout).
#include <algorithm>
#include <chrono>
#include <span>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/model.hpp>
#include <llmrt/sample/sample.hpp>

#include "../../examples/generate/arguments.hpp"
#include "../../examples/generate/backend_choice.hpp"
#include "../../examples/speculative/speculative_run.hpp"

namespace {

namespace spec = llmrt_examples::speculative;

struct arguments {
    std::string backend, json_path = "speculative.json", clock = "wall";
    int32_t n = 256, reps = 3, period = 8, repeats = 8, n_max = llmrt::sample::draft_policy{}.n_max;
    bool fallback = llmrt::sample::fallback_policy{}.enabled;
};

arguments parse(int argc, char** argv) {
    arguments a;
    for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
        const std::string& o = cl.option();
        if (o == "--backend") a.backend = cl.value();
        else if (o == "-n") a.n = cl.int_value(2, 1000000);
        else if (o == "--reps") a.reps = cl.int_value(1, 1000000);
        else if (o == "--clock") a.clock = cl.value();
        else if (o == "--json") a.json_path = cl.value();
        else if (o == "--period") a.period = cl.int_value(1, 1000000);
        else if (o == "--repeats") a.repeats = cl.int_value(1, 1000000);
        else if (o == "--n-max") a.n_max = cl.int_value(1, 1000000);
        else if (o == "--no-fallback") a.fallback = false;
        else if (o == "-h" || o == "--help") {
            std::puts("usage: llmrt-bench-speculative [--backend NAME] [-n N] [--reps R] [--clock wall|cpu] [--json FILE|-]\n"
                      "                               [--period P] [--repeats R] [--n-max N] [--no-fallback]\n"
                      "\n"
                      "Defaults: -n 256, --reps 3, --clock wall, --json speculative.json, --period 8 --repeats 8,\n"
                      "--n-max 16 (adaptive), p_min 0, greedy. The fallback policy is on in every row but one that\n"
                      "shows the draft model without it: plain decoding while speculation measures slower (after 8\n"
                      "timed rounds, 32 plain tokens, doubling up to 1024; llmrt::sample::fallback_policy).\n"
                      "--no-fallback turns it off everywhere.");
            std::exit(0);
        } else cl.reject();
    }
    if (a.clock != "wall" && a.clock != "cpu")
        throw llmrt::error(llmrt::errc::invalid_argument, "--clock is wall or cpu, not '" + a.clock + "'");
    return a;
}

struct workload {
    std::string name;
    const std::vector<int32_t>* prompt;
    spec::run_config config;
};

struct measurement {
    std::string workload, drafters;
    std::size_t prompt_tokens = 0;
    double prompt_seconds = 0.0;          // the target's prompt processing, the fastest of R
    spec::run_result plain, speculative;  // the fastest of each
    bool equal = false;

    double decode_rate(const spec::run_result& r) const {
        const double seconds = r.seconds - prompt_seconds;
        return seconds > 0.0 ? double(r.tokens.size()) / seconds : 0.0;
    }
    double plain_rate() const { return decode_rate(plain); }
    double speculative_rate() const { return decode_rate(speculative); }
    double speedup() const { return plain_rate() > 0.0 ? speculative_rate() / plain_rate() : 0.0; }
};

// The generator's prefill: the prompt but its last token, evaluated without logits.
template <class Model>
double prompt_seconds(Model& target, const std::vector<int32_t>& prompt, const spec::run_config& config) {
    const auto now = config.clock ? config.clock : [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
    target.truncate(0);
    const double start = now();
    if (prompt.size() > 1) target.eval(std::span<const int32_t>(prompt).first(prompt.size() - 1), 0, {});
    return now() - start;
}

// What a forward call costs, which bounds what speculation can gain: verifying n draft tokens is one
// target call of n + 1 tokens in place of up to n + 1 calls of one, and each draft token costs a
// draft call of one.
struct call_costs {
    int32_t batch = 0;                          // n_max + 1: the longest verification
    double target_one = 0.0, target_batch = 0.0;  // seconds per call of 1 and of `batch` tokens
    double draft_one = 0.0;
};

// The fastest of `reps` calls at position `at` (the cache refilled up to there first).
template <class Model>
double call_seconds(Model& m, int32_t at, int32_t tokens, int32_t reps, const std::function<double()>& now) {
    const std::vector<int32_t> filler(std::size_t(at + tokens), 300);
    m.truncate(0);
    m.eval(std::span<const int32_t>(filler).first(std::size_t(at)), 0, {});
    std::vector<float> logits(std::size_t(tokens) * std::size_t(m.vocab_size()));
    double best = 0.0;
    for (int32_t r = 0; r < reps; ++r) {
        m.truncate(at);
        const double start = now();
        m.eval(std::span<const int32_t>(filler).subspan(std::size_t(at), std::size_t(tokens)), at, logits);
        const double s = now() - start;
        best = r == 0 ? s : std::min(best, s);
    }
    return best;
}

template <class Model>
call_costs measure_costs(Model& target, Model& draft, int32_t batch, int32_t reps, const spec::run_config& config) {
    const std::function<double()> now = config.clock ? config.clock : [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
    const int32_t at = 64;  // a position typical of the runs
    return {batch, call_seconds(target, at, 1, reps, now), call_seconds(target, at, batch, reps, now),
            call_seconds(draft, at, 1, reps, now)};
}

template <class Model>
measurement measure(Model& target, Model& draft, const workload& w, const arguments& a) {
    measurement m{w.name, spec::drafters_name(w.config), w.prompt->size(), 0.0, {}, {}, true};
    spec::run_config plain_config = w.config;
    plain_config.draft_model = plain_config.ngram = false;
    for (int32_t r = 0; r < a.reps; ++r) {
        const double p0 = prompt_seconds(target, *w.prompt, w.config);
        m.prompt_seconds = r == 0 ? p0 : std::min(m.prompt_seconds, p0);
        spec::run_result p = spec::run(target, &draft, plain_config, *w.prompt, a.n);
        spec::run_result s = spec::run(target, &draft, w.config, *w.prompt, a.n);
        m.equal = m.equal && s.tokens == p.tokens;
        if (r == 0 || p.seconds < m.plain.seconds) m.plain = std::move(p);
        if (r == 0 || s.seconds < m.speculative.seconds) m.speculative = std::move(s);
    }
    return m;
}

std::string rates_text(const llmrt::sample::speculative_stats& s, std::size_t at_most) {
    std::string out;
    char buf[16];
    for (std::size_t i = 0; i < s.drafted_at.size() && i < at_most; ++i) {
        std::snprintf(buf, sizeof buf, "%s%.2f", i ? " " : "", s.acceptance_rate_at(i));
        out += buf;
    }
    return out;
}

void print_table(const std::vector<measurement>& results) {
    std::printf("\n%-21s %-27s | %8s %8s %7s | %6s %6s %6s | %9s %9s %9s | %-5s | %s\n", "workload", "drafters",
                "plain/s", "spec/s", "speedup", "accept", "mean", "calls", "target ms", "draft ms", "draft fwd",
                "exact", "acceptance rate by draft position 1..8");
    for (const auto& m : results) {
        const auto& s = m.speculative.stats;
        int64_t draft_forwards = 0;
        for (const auto& d : s.per_drafter) draft_forwards += d.work.forwards;
        std::printf("%-21s %-27s | %8.1f %8.1f %6.2fx | %6.3f %6.2f %6lld | %9.1f %9.1f %9lld | %-5s | %s\n",
                    m.workload.c_str(), m.drafters.c_str(), m.plain_rate(), m.speculative_rate(), m.speedup(),
                    s.acceptance_rate(), s.mean_acceptance_length(), (long long)s.target_calls, s.target_seconds * 1e3,
                    s.draft_seconds * 1e3, (long long)draft_forwards, m.equal ? "yes" : "NO", rates_text(s, 8).c_str());
    }
    std::printf("\nplain/s, spec/s: decoding tokens/s (the target's prompt processing excluded)\n"
                "accept: acceptance rate (accepted / drafted); mean: mean acceptance length (1 + accepted / rounds)\n"
                "calls: target calls of the speculative run, prompt included (plain: one per token)\n"
                "target ms, draft ms: time in the target's eval calls and in the drafters, prompt included\n"
                "draft fwd: the draft model's forward calls (its prompt, catching up, drafting)\n"
                "exact: the speculative tokens equal plain decoding's\n");
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

void write_json(std::FILE* f, const std::vector<measurement>& results, const call_costs& costs, const std::string& backend,
                const arguments& a, const llmrt::model::llama_shape& shape) {
    std::fprintf(f, "{\n  \"backend\": \"%s\",\n  \"clock\": \"%s\",\n  \"tokens\": %d,\n  \"reps\": %d,\n",
                 json_escape(backend).c_str(), a.clock.c_str(), a.n, a.reps);
    std::fprintf(f,
                 "  \"call_seconds\": {\"target_1\": %.6f, \"target_batch\": %.6f, \"batch\": %d, \"draft_1\": %.6f},\n",
                 costs.target_one, costs.target_batch, costs.batch, costs.draft_one);
    std::fprintf(f,
                 "  \"model\": {\"target_type\": \"%s\", \"draft_type\": \"%s\", \"n_vocab\": %d, \"n_embd\": %d, "
                 "\"n_layer\": %d, \"n_head\": %d, \"n_head_kv\": %d, \"n_ff\": %d},\n  \"results\": [\n",
                 llmrt::name(spec::default_target_type), llmrt::name(spec::default_draft_type), shape.n_vocab,
                 shape.n_embd, shape.n_layer, shape.n_head, shape.n_head_kv, shape.n_ff);
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& m = results[i];
        const auto& s = m.speculative.stats;
        std::fprintf(f,
                     "    {\"workload\": \"%s\", \"drafters\": \"%s\", \"prompt_tokens\": %zu, \"generated\": %zu,\n"
                     "     \"prompt_seconds\": %.6f, \"plain_seconds\": %.6f, \"speculative_seconds\": %.6f,\n"
                     "     \"plain_tokens_per_s\": %.3f, \"speculative_tokens_per_s\": %.3f, \"speedup\": %.4f, \"equal_to_plain\": %s,\n"
                     "     \"rounds\": %lld, \"drafted\": %lld, \"accepted\": %lld, \"acceptance_rate\": %.4f,\n"
                     "     \"mean_acceptance_length\": %.4f, \"plain_steps\": %lld, \"fallback_steps\": %lld,\n"
                     "     \"target_calls\": %lld, \"target_seconds\": %.6f, \"draft_seconds\": %.6f,\n"
                     "     \"acceptance_rate_at\": [",
                     json_escape(m.workload).c_str(), json_escape(m.drafters).c_str(), m.prompt_tokens,
                     m.speculative.tokens.size(), m.prompt_seconds, m.plain.seconds, m.speculative.seconds,
                     m.plain_rate(), m.speculative_rate(), m.speedup(), m.equal ? "true" : "false", (long long)s.rounds,
                     (long long)s.drafted, (long long)s.accepted, s.acceptance_rate(), s.mean_acceptance_length(),
                     (long long)s.plain_steps, (long long)s.fallback_steps, (long long)s.target_calls, s.target_seconds,
                     s.draft_seconds);
        for (std::size_t p = 0; p < s.drafted_at.size(); ++p) std::fprintf(f, "%s%.4f", p ? ", " : "", s.acceptance_rate_at(p));
        std::fprintf(f, "],\n     \"drafted_at\": [");
        for (std::size_t p = 0; p < s.drafted_at.size(); ++p) std::fprintf(f, "%s%lld", p ? ", " : "", (long long)s.drafted_at[p]);
        std::fprintf(f, "],\n     \"per_drafter\": [");
        for (std::size_t d = 0; d < s.per_drafter.size(); ++d) {
            const auto& ds = s.per_drafter[d];
            std::fprintf(f,
                         "%s{\"name\": \"%s\", \"calls\": %lld, \"rounds\": %lld, \"drafted\": %lld, \"accepted\": %lld, "
                         "\"acceptance_rate\": %.4f, \"seconds\": %.6f, \"model_tokens\": %lld, \"catch_up_tokens\": %lld, "
                         "\"model_forwards\": %lld}",
                         d ? ", " : "", json_escape(ds.name).c_str(), (long long)ds.calls, (long long)ds.rounds,
                         (long long)ds.drafted, (long long)ds.accepted, ds.acceptance_rate(), ds.seconds,
                         (long long)ds.work.tokens, (long long)ds.work.catch_up, (long long)ds.work.forwards);
        }
        std::fprintf(f, "]}%s\n", i + 1 < results.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
}

template <class Backend>
int run(Backend& backend, const std::string& description, const arguments& a) {
    using namespace llmrt;
    const model::llama_shape shape = spec::default_shape();
    const spec::model_pair files = spec::generated_pair(shape);
    const std::vector<int32_t> plain_prompt = spec::default_prompt();
    const std::vector<int32_t> repetitive = spec::repetitive_prompt(a.period, a.repeats);

    spec::run_config base;
    base.policy.n_max = std::min(a.n_max, 63);  // a verification batch of n_max + 1 within max_batch 64
    base.policy.p_min = 0.0f;  // a random model's top-1 probability is a few percent: 0.75 would never draft
    base.policy.fallback.enabled = a.fallback;
    base.stop_at_eos = false;  // every run generates exactly n tokens
    if (a.clock == "cpu") base.clock = spec::process_cpu_seconds;

    std::vector<workload> workloads;
    workloads.push_back({"default prompt", &plain_prompt, base});  // base drafts with the draft model
    if (a.fallback) {
        workloads.push_back({"default, fallback off", &plain_prompt, base});
        workloads.back().config.policy.fallback.enabled = false;
    }
    workloads.push_back({"repetitive prompt", &repetitive, base});
    workloads.back().config.draft_model = false;
    workloads.back().config.ngram = true;
    workloads.push_back({"repetitive prompt", &repetitive, base});
    workloads.back().config.ngram = true;

    const int32_t longest = int32_t(std::max(plain_prompt.size(), repetitive.size()));
    const model::llama_options options{.n_ctx = spec::cache_length_for(shape.n_ctx, std::size_t(longest), a.n, base.policy),
                                       .max_batch = base.policy.n_max + 1};
    model::llama_model<Backend> target(backend, files.target, options);
    model::llama_model<Backend> draft(backend, files.draft, options);

    std::printf("llmrt-bench-speculative: %s target, %s draft of the same random weights\n", name(spec::default_target_type),
                name(spec::default_draft_type));
    std::printf("model:   llama, %d layers, n_embd %d, %d heads (%d kv), n_ff %d, vocab %d\n", shape.n_layer, shape.n_embd,
                shape.n_head, shape.n_head_kv, shape.n_ff, shape.n_vocab);
    std::printf("backend: %s\n", description.c_str());
    std::printf("runs:    %d tokens, greedy, fastest of %d, %s clock; n_max %d (adaptive), p_min 0, fallback %s; "
                "repetitive prompt: %d words x %d\n",
                a.n, a.reps, a.clock == "cpu" ? "process CPU" : "wall", base.policy.n_max, a.fallback ? "on" : "off",
                a.period, a.repeats);

    const call_costs costs = measure_costs(target, draft, base.policy.n_max + 1, 5 * a.reps, base);
    std::printf("cost:    target %.2f ms for 1 token, %.2f ms for %d (%.1fx one); draft %.2f ms for 1 token (%.2fx the "
                "target's)\n",
                costs.target_one * 1e3, costs.target_batch * 1e3, costs.batch, costs.target_batch / costs.target_one,
                costs.draft_one * 1e3, costs.draft_one / costs.target_one);

    std::vector<measurement> results;
    for (const auto& w : workloads) {
        results.push_back(measure(target, draft, w, a));
        std::printf("  done: %s, %s\n", w.name.c_str(), results.back().drafters.c_str());
        std::fflush(stdout);
    }
    print_table(results);

    if (a.json_path == "-") {
        write_json(stdout, results, costs, description, a, shape);
    } else {
        std::FILE* f = std::fopen(a.json_path.c_str(), "w");
        if (!f) throw error(errc::io_error, "cannot write " + a.json_path);
        write_json(f, results, costs, description, a, shape);
        std::fclose(f);
        std::printf("wrote %s\n", a.json_path.c_str());
    }
    const bool all_equal = std::all_of(results.begin(), results.end(), [](const measurement& m) { return m.equal; });
    return all_equal ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const arguments a = parse(argc, argv);
        const std::string backend = a.backend.empty() ? llmrt_examples::backends_by_preference().front() : a.backend;
        int status = 0;
        llmrt_examples::with_backend(backend, [&](auto& b, const std::string& description) { status = run(b, description, a); });
        return status;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-bench-speculative: %s\n", e.what());
        return 1;
    }
}
