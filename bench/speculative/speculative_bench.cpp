// llmrt-bench-speculative: what speculative decoding gains over plain decoding of the target.
//
//   llmrt-bench-speculative [--backend NAME] [-n N] [--reps R] [--clock wall|cpu] [--json FILE|-]
//                           [--period P] [--repeats R] [--n-max N] [--p-min P] [--no-fallback]
//                           [--target T.gguf --draft D.gguf --prompt-file NAME=PATH[,PATH...] ... [--temps T,T]]
//                           [--logits-on-host]
//
// Workloads, each against plain decoding of the same prompt with the same generator and sampler
// chain, with the library's fallback policy on (plain decoding while speculation measures slower)
// unless --no-fallback. Without --target, on the default pair (greedy):
//   draft model           the default pair (Q8_0 target, Q2_K draft of the same weights)
//   draft, fallback off   the same without the fallback, to show speculation itself (left out with
//                         --no-fallback, where the first row already is that)
//   ngram                 the n-gram drafter alone on a repetitive prompt (BOS, P words R times)
//   ngram + draft model   both, chained (n-gram first), on the repetitive prompt
// With --target and --draft (a trained pair sharing one vocabulary), for each --prompt-file (text
// files, each tokenized with the target's vocabulary, BOS first, decoded in turn; the workload's
// figures are their sums, each prompt's runs the fastest of R):
//   draft model           at every temperature of --temps (default 0,0.8; 0 is greedy), with greedy
//                         (point-mass) drafts, so that the output equals plain decoding's with the
//                         same seed token for token
//   ngram                 the n-gram drafter alone, greedy
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
#include <deque>
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

struct prompt_file {
    std::string name;
    std::vector<std::string> paths;
};

struct arguments {
    std::string backend, json_path = "speculative.json", clock = "wall";
    int32_t n = 256, reps = 3, period = 8, repeats = 8, n_max = llmrt::sample::draft_policy{}.n_max;
    float p_min = -1.0f;  // < 0: 0 for the default pair, the library's default for a given pair
    bool fallback = llmrt::sample::fallback_policy{}.enabled;
    int32_t min_rounds = llmrt::sample::fallback_policy{}.min_rounds;          // --min-rounds
    int32_t backoff_tokens = llmrt::sample::fallback_policy{}.backoff_tokens;  // --backoff
    int32_t rounds_after_backoff = llmrt::sample::fallback_policy{}.rounds_after_backoff;  // --rounds-after-backoff
    float draft_temperature = 0.0f;  // --draft-temp: the sampled workloads' drafts sampled at it (0: greedy)
    bool overlap = true;  // --no-overlap: off; off on Vulkan (llmrt_examples::overlap_allowed)
    bool cost_aware = llmrt::sample::adaptive_length{}.cost_aware;  // --length cost|acceptance
    std::string target_path, draft_path;
    std::vector<prompt_file> prompt_files;
    std::vector<float> temperatures{0.0f, 0.8f};
    bool logits_on_host = false;
};

// "NAME=PATH[,PATH...]"
prompt_file to_prompt_file(const std::string& v) {
    const std::size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw llmrt::error(llmrt::errc::invalid_argument, "--prompt-file takes NAME=PATH[,PATH...], not '" + v + "'");
    return {v.substr(0, eq), llmrt_examples::to_list("--prompt-file " + v.substr(0, eq), v.substr(eq + 1))};
}

// "0,0.8"
std::vector<float> to_temperatures(const std::string& v) {
    std::vector<float> out;
    for (const std::string& t : llmrt_examples::to_list("--temps", v))
        out.push_back(float(llmrt_examples::to_number("--temps", t, 0.0, 100.0)));
    return out;
}

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
        else if (o == "--p-min") a.p_min = float(cl.number_value(0.0, 1.0));
        else if (o == "--no-fallback") a.fallback = false;
        else if (o == "--min-rounds") a.min_rounds = cl.int_value(1, 1000000);
        else if (o == "--backoff") a.backoff_tokens = cl.int_value(1, 1024);
        else if (o == "--rounds-after-backoff") a.rounds_after_backoff = cl.int_value(1, 1000000);
        else if (o == "--draft-temp") a.draft_temperature = float(cl.number_value(0.0, 100.0));
        else if (o == "--no-overlap") a.overlap = false;
        else if (o == "--length") {
            const std::string v = cl.value();
            llmrt::check(v == "cost" || v == "acceptance", llmrt::errc::invalid_argument,
                         [&] { return "--length takes cost or acceptance, not '" + v + "'"; });
            a.cost_aware = v == "cost";
        }
        else if (o == "--logits-on-host") a.logits_on_host = true;
        else if (o == "--target") a.target_path = cl.value();
        else if (o == "--draft") a.draft_path = cl.value();
        else if (o == "--prompt-file") a.prompt_files.push_back(to_prompt_file(cl.value()));
        else if (o == "--temps") a.temperatures = to_temperatures(cl.value());
        else if (o == "-h" || o == "--help") {
            std::puts("usage: llmrt-bench-speculative [--backend NAME] [-n N] [--reps R] [--clock wall|cpu] [--json FILE|-]\n"
                      "                               [--period P] [--repeats R] [--n-max N] [--p-min P] [--no-fallback]\n"
                      "                               [--target T.gguf --draft D.gguf --prompt-file NAME=PATH[,PATH...] ... [--temps T,T]]\n"
                      "                               [--logits-on-host] [--no-overlap] [--length cost|acceptance]\n"
                      "                               [--min-rounds N] [--backoff N] [--rounds-after-backoff N] [--draft-temp T]\n"
                      "\n"
                      "Defaults: -n 256, --reps 3, --clock wall, --json speculative.json, --period 8 --repeats 8,\n"
                      "--n-max 16 (adaptive), --length acceptance: the accepted tokens' moving average + 2 (the\n"
                      "library's default); --length cost: each round's draft length is the one the measured costs say\n"
                      "emits tokens fastest, and plain steps while none is predicted to pay\n"
                      "(llmrt::sample::adaptive_length::cost_aware). The fallback policy is on in every row but one\n"
                      "that shows the default pair's draft model without it: plain decoding while speculation measures\n"
                      "slower (after 8 timed rounds, 32 plain tokens, doubling up to 1024;\n"
                      "llmrt::sample::fallback_policy; --min-rounds and --backoff set the 8 and the 32,\n"
                      "--rounds-after-backoff the rounds before it judges again after a back-off, 8).\n"
                      "--no-fallback turns it off everywhere. The draft model drafts\n"
                      "the next round while the target verifies this one (generation_options::overlap; on the CUDA and\n"
                      "CPU backends): --no-overlap drafts only after each verification.\n"
                      "\n"
                      "Without --target: the default pair (a random llama as Q8_0 target and Q2_K draft), greedy,\n"
                      "p_min 0. With --target and --draft: for each --prompt-file (text files, tokenized with the\n"
                      "target's vocabulary and decoded in turn, their figures added up), the draft model at each\n"
                      "temperature of --temps (default 0,0.8; greedy drafts, or sampled at --draft-temp T from the\n"
                      "draft's top candidates) and the n-gram drafter (greedy); p_min\n"
                      "defaults to the library's 0.5.\n"
                      "\n"
                      "--logits-on-host: greedy decoding reads every row of logits back and takes its argmax on the\n"
                      "host, as sampling does, instead of the argmax ids (and top probabilities) the model finds on\n"
                      "its device: what those save.");
            std::exit(0);
        } else cl.reject();
    }
    if (a.clock != "wall" && a.clock != "cpu")
        throw llmrt::error(llmrt::errc::invalid_argument, "--clock is wall or cpu, not '" + a.clock + "'");
    if (a.target_path.empty() != a.draft_path.empty())
        throw llmrt::error(llmrt::errc::invalid_argument, "--target and --draft come together (a trained pair)");
    if (!a.target_path.empty() && a.prompt_files.empty())
        throw llmrt::error(llmrt::errc::invalid_argument, "--target needs at least one --prompt-file NAME=PATH");
    if (a.target_path.empty() && !a.prompt_files.empty())
        throw llmrt::error(llmrt::errc::invalid_argument, "--prompt-file needs --target and --draft");
    return a;
}

struct workload {
    std::string name;
    std::vector<const std::vector<int32_t>*> prompts;  // each decoded in turn; the results add up
    spec::run_config config;
};

// A workload's results: per prompt the fastest of R runs, then the prompts' sums.
struct measurement {
    std::string workload, drafters;
    std::size_t prompts = 0, prompt_tokens = 0, generated = 0;
    double prompt_seconds = 0.0;  // the target's prompt processing
    double plain_seconds = 0.0, speculative_seconds = 0.0;
    llmrt::sample::speculative_stats stats;  // the speculative runs'
    bool equal = true;
    bool compared = true;  // false for sampled drafts: speculative sampling keeps the distribution, not the stream

    double decode_rate(double seconds) const {
        seconds -= prompt_seconds;
        return seconds > 0.0 ? double(generated) / seconds : 0.0;
    }
    double plain_rate() const { return decode_rate(plain_seconds); }
    double speculative_rate() const { return decode_rate(speculative_seconds); }
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
// draft call of one. Timed as greedy decoding makes them (argmax ids, no logits, where the model
// finds them); sampling also reads the logits back.
struct call_costs {
    int32_t batch = 0;                          // n_max + 1: the longest verification
    double target_one = 0.0, target_batch = 0.0;  // seconds per call of 1 and of `batch` tokens
    double draft_one = 0.0;
};

constexpr int32_t cost_position = 64;  // where measure_costs times calls: a position typical of the runs

// The fastest of `reps` calls at position `at` (the cache refilled up to there first).
template <class Model>
double call_seconds(Model& m, int32_t at, int32_t tokens, int32_t reps, const std::function<double()>& now) {
    const std::vector<int32_t> filler(std::size_t(at + tokens), 300);
    m.truncate(0);
    m.eval(std::span<const int32_t>(filler).first(std::size_t(at)), 0, {});
    std::vector<float> logits(std::size_t(tokens) * std::size_t(m.vocab_size()));
    std::vector<int32_t> ids(static_cast<std::size_t>(tokens));
    double best = 0.0;
    for (int32_t r = 0; r < reps; ++r) {
        m.truncate(at);
        const auto span = std::span<const int32_t>(filler).subspan(std::size_t(at), std::size_t(tokens));
        const double start = now();
        // As greedy decoding calls it: the rows' argmax ids alone where the model finds them.
        if constexpr (llmrt::sample::greedy_model<Model>) m.eval_greedy(span, at, ids, {});
        else m.eval(span, at, logits);
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
    return {batch, call_seconds(target, cost_position, 1, reps, now),
            call_seconds(target, cost_position, batch, reps, now), call_seconds(draft, cost_position, 1, reps, now)};
}

template <class Model>
measurement measure(Model& target, Model& draft, const workload& w, const arguments& a) {
    measurement m;
    m.workload = w.name;
    m.compared = !(w.config.draft_model && w.config.draft_temperature > 0.0f);
    m.drafters = spec::drafters_name(w.config);
    spec::run_config plain_config = w.config;
    plain_config.draft_model = plain_config.ngram = false;
    for (const std::vector<int32_t>* prompt : w.prompts) {
        double prompt_best = 0.0;
        spec::run_result plain, fast;  // the fastest of each
        for (int32_t r = 0; r < a.reps; ++r) {
            const double p0 = prompt_seconds(target, *prompt, w.config);
            prompt_best = r == 0 ? p0 : std::min(prompt_best, p0);
            spec::run_result p = spec::run(target, &draft, plain_config, *prompt, a.n);
            spec::run_result s = spec::run(target, &draft, w.config, *prompt, a.n);
            if (m.compared) m.equal = m.equal && s.tokens == p.tokens;
            if (r == 0 || p.seconds < plain.seconds) plain = std::move(p);
            if (r == 0 || s.seconds < fast.seconds) fast = std::move(s);
        }
        ++m.prompts;
        m.prompt_tokens += prompt->size();
        m.generated += fast.tokens.size();
        m.prompt_seconds += prompt_best;
        m.plain_seconds += plain.seconds;
        m.speculative_seconds += fast.seconds;
        m.stats += fast.stats;
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
        const auto& s = m.stats;
        int64_t draft_forwards = 0;
        for (const auto& d : s.per_drafter) draft_forwards += d.work.forwards;
        std::printf("%-21s %-27s | %8.1f %8.1f %6.2fx | %6.3f %6.2f %6lld | %9.1f %9.1f %9lld | %-5s | %s\n",
                    m.workload.c_str(), m.drafters.c_str(), m.plain_rate(), m.speculative_rate(), m.speedup(),
                    s.acceptance_rate(), s.mean_acceptance_length(), (long long)s.target_calls, s.target_seconds * 1e3,
                    s.draft_seconds * 1e3, (long long)draft_forwards, !m.compared ? "n/a" : m.equal ? "yes" : "NO", rates_text(s, 8).c_str());
    }
    std::printf("\nplain/s, spec/s: decoding tokens/s (the target's prompt processing excluded)\n"
                "accept: acceptance rate (accepted / drafted); mean: mean acceptance length (1 + accepted / rounds)\n"
                "calls: target calls of the speculative run, prompt included (plain: one per token)\n"
                "target ms, draft ms: time in the target's eval calls and in the drafters, prompt included\n"
                "draft fwd: the draft model's forward calls (its prompt, catching up, drafting)\n"
                "exact: the speculative tokens equal plain decoding's (n/a: sampled drafts, which keep the\n"
                "distribution, not the token stream)\n");
    std::printf("\ntarget ms per decoding call of m tokens in the speculative runs (calls), m = 1: plain steps:\n");
    for (const auto& m : results) {
        const auto& s = m.stats;
        std::printf("%-21s %-27s |", m.workload.c_str(), m.drafters.c_str());
        for (std::size_t i = 0; i < s.target_calls_by_tokens.size(); ++i)
            if (s.target_calls_by_tokens[i] > 0)
                std::printf(" %zu: %.3f (%lld)", i + 1, 1e3 * s.target_seconds_by_tokens[i] / double(s.target_calls_by_tokens[i]),
                            (long long)s.target_calls_by_tokens[i]);
        std::printf("\n");
    }
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

// A model as greedy decoding read it before argmax ids (--logits-on-host): without eval_greedy,
// so the generator and the drafter read every row of logits back and reduce it on the host.
template <class Model>
class logits_on_host {
public:
    explicit logits_on_host(Model& m) : m_(m) {}
    const llmrt::sample::vocabulary& vocab() const { return m_.vocab(); }
    int32_t vocab_size() const { return m_.vocab_size(); }
    int32_t context_length() const { return m_.context_length(); }
    int32_t cache_length() const { return m_.cache_length(); }
    int32_t max_batch() const { return m_.max_batch(); }
    void eval(std::span<const int32_t> tokens, int32_t position, std::span<float> logits) { m_.eval(tokens, position, logits); }
    void truncate(int32_t n) { m_.truncate(n); }

private:
    Model& m_;
};

// What the table and the JSON say of the pair.
struct pair_info {
    std::string target, draft;  // "Q8_0" or a file path
    llmrt::model::llama_shape shape;
};

// item(0), ", ", item(1), ...: the items of a JSON array, item(p) printing the p-th.
template <class Item>
void write_items(std::FILE* f, std::size_t n, Item&& item) {
    for (std::size_t p = 0; p < n; ++p) {
        if (p) std::fputs(", ", f);
        item(p);
    }
}

void write_json(std::FILE* f, const std::vector<measurement>& results, const call_costs& costs, const std::string& backend,
                const arguments& a, const pair_info& info) {
    const auto& shape = info.shape;
    std::fprintf(f,
                 "{\n  \"backend\": \"%s\",\n  \"clock\": \"%s\",\n  \"tokens\": %d,\n  \"reps\": %d,\n  \"logits_on_host\": %s,\n"
                 "  \"overlap\": %s,\n  \"length\": \"%s\",\n",
                 json_escape(backend).c_str(), a.clock.c_str(), a.n, a.reps, a.logits_on_host ? "true" : "false",
                 a.overlap ? "true" : "false", a.cost_aware ? "cost" : "acceptance");
    std::fprintf(f,
                 "  \"call_seconds\": {\"target_1\": %.6f, \"target_batch\": %.6f, \"batch\": %d, \"draft_1\": %.6f},\n",
                 costs.target_one, costs.target_batch, costs.batch, costs.draft_one);
    std::fprintf(f,
                 "  \"model\": {\"target\": \"%s\", \"draft\": \"%s\", \"n_vocab\": %d, \"n_embd\": %d, "
                 "\"n_layer\": %d, \"n_head\": %d, \"n_head_kv\": %d, \"n_ff\": %d},\n  \"results\": [\n",
                 json_escape(info.target).c_str(), json_escape(info.draft).c_str(), shape.n_vocab,
                 shape.n_embd, shape.n_layer, shape.n_head, shape.n_head_kv, shape.n_ff);
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& m = results[i];
        const auto& s = m.stats;
        std::fprintf(f,
                     "    {\"workload\": \"%s\", \"drafters\": \"%s\", \"prompts\": %zu, \"prompt_tokens\": %zu, \"generated\": %zu,\n"
                     "     \"prompt_seconds\": %.6f, \"plain_seconds\": %.6f, \"speculative_seconds\": %.6f,\n"
                     "     \"plain_tokens_per_s\": %.3f, \"speculative_tokens_per_s\": %.3f, \"speedup\": %.4f, \"equal_to_plain\": %s,\n"
                     "     \"rounds\": %lld, \"drafted\": %lld, \"accepted\": %lld, \"acceptance_rate\": %.4f,\n"
                     "     \"mean_acceptance_length\": %.4f, \"plain_steps\": %lld, \"fallback_steps\": %lld, \"drafted_ahead\": %lld,\n"
                     "     \"extended_ahead\": %lld, \"target_calls\": %lld, \"target_seconds\": %.6f, \"draft_seconds\": %.6f,\n"
                     "     \"acceptance_rate_at\": [",
                     json_escape(m.workload).c_str(), json_escape(m.drafters).c_str(), m.prompts, m.prompt_tokens,
                     m.generated, m.prompt_seconds, m.plain_seconds, m.speculative_seconds,
                     m.plain_rate(), m.speculative_rate(), m.speedup(), !m.compared ? "null" : m.equal ? "true" : "false", (long long)s.rounds,
                     (long long)s.drafted, (long long)s.accepted, s.acceptance_rate(), s.mean_acceptance_length(),
                     (long long)s.plain_steps, (long long)s.fallback_steps, (long long)s.drafted_ahead,
                     (long long)s.extended_ahead, (long long)s.target_calls, s.target_seconds,
                     s.draft_seconds);
        write_items(f, s.drafted_at.size(), [&](std::size_t p) { std::fprintf(f, "%.4f", s.acceptance_rate_at(p)); });
        std::fprintf(f, "],\n     \"target_calls_by_tokens\": [");
        write_items(f, s.target_calls_by_tokens.size(),
                    [&](std::size_t p) { std::fprintf(f, "%lld", (long long)s.target_calls_by_tokens[p]); });
        std::fprintf(f, "],\n     \"target_seconds_by_tokens\": [");
        write_items(f, s.target_seconds_by_tokens.size(), [&](std::size_t p) { std::fprintf(f, "%.6f", s.target_seconds_by_tokens[p]); });
        std::fprintf(f, "],\n     \"drafted_at\": [");
        write_items(f, s.drafted_at.size(), [&](std::size_t p) { std::fprintf(f, "%lld", (long long)s.drafted_at[p]); });
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

// The default pair's workloads (greedy): the draft model, with and without the fallback, on a short
// prompt; the n-gram drafter alone and chained with the draft model on a repetitive prompt.
std::vector<workload> default_workloads(const arguments& a, const spec::run_config& base,
                                        std::deque<std::vector<int32_t>>& prompts) {
    const std::vector<int32_t>& plain_prompt = prompts.emplace_back(spec::default_prompt());
    const std::vector<int32_t>& repetitive = prompts.emplace_back(spec::repetitive_prompt(a.period, a.repeats));
    std::vector<workload> w;
    w.push_back({"default prompt", {&plain_prompt}, base});  // base drafts with the draft model
    if (a.fallback) {
        w.push_back({"default, fallback off", {&plain_prompt}, base});
        w.back().config.policy.fallback.enabled = false;
    }
    w.push_back({"repetitive prompt", {&repetitive}, base});
    w.back().config.draft_model = false;
    w.back().config.ngram = true;
    w.push_back({"repetitive prompt", {&repetitive}, base});
    w.back().config.ngram = true;
    return w;
}

std::string read_text(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw llmrt::error(llmrt::errc::io_error, "--prompt-file: cannot open " + path);
    std::string text;
    char buf[4096];
    for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, got);
    std::fclose(f);
    return text;
}

// A trained pair's workloads: per --prompt-file (its texts decoded in turn), the draft model at
// each temperature (greedy drafts) and the n-gram drafter alone (greedy).
std::vector<workload> pair_workloads(const llmrt::gguf::file& target, const arguments& a, const spec::run_config& base,
                                     std::deque<std::vector<int32_t>>& prompts) {
    using namespace llmrt;
    const model::llama_hparams h = model::load_llama_weights(target).hparams;
    const text::tokenizer tokenizer = model::tokenizer_of(target.metadata(), model::read_vocabulary(target.metadata(), h.n_vocab));
    std::vector<workload> w;
    for (const prompt_file& f : a.prompt_files) {
        std::vector<const std::vector<int32_t>*> ids;
        for (const std::string& path : f.paths) {
            ids.push_back(&prompts.emplace_back(tokenizer.encode(read_text(path))));
            check(ids.back()->size() >= 2, errc::invalid_argument,
                  [&] { return "--prompt-file " + f.name + ": " + path + " gives fewer than 2 tokens"; });
        }
        for (float t : a.temperatures) {
            char name[64];
            std::snprintf(name, sizeof name, "%s, %s", f.name.c_str(), t > 0.0f ? ("temp " + std::to_string(t).substr(0, 4)).c_str() : "greedy");
            w.push_back({name, ids, base});
            if (t > 0.0f) {
                w.back().config.sampling = sample::sampling_params{};
                w.back().config.sampling.temperature = t;
                w.back().config.sampling.seed = 1;
                w.back().config.draft_temperature = a.draft_temperature;
            }
        }
        w.push_back({f.name + ", greedy", ids, base});
        w.back().config.draft_model = false;
        w.back().config.ngram = true;
    }
    return w;
}

template <class Backend>
int run(Backend& backend, const std::string& description, const arguments& a) {
    using namespace llmrt;
    const bool given = !a.target_path.empty();
    spec::model_pair files;
    pair_info info;
    if (given) {
        files.target = std::make_shared<const gguf::file>(gguf::file::open(a.target_path));
        files.draft = std::make_shared<const gguf::file>(gguf::file::open(a.draft_path));
        const model::llama_hparams h = model::load_llama_weights(*files.target).hparams;
        info = {a.target_path, a.draft_path,
                {.n_vocab = h.n_vocab, .n_embd = h.n_embd, .n_layer = h.n_layer, .n_head = h.n_head,
                 .n_head_kv = h.n_head_kv, .n_ff = h.n_ff, .n_ctx = h.n_ctx_train}};
    } else {
        info = {name(spec::default_target_type), name(spec::default_draft_type), spec::default_shape()};
        files = spec::generated_pair(info.shape);
    }

    spec::run_config base;
    base.policy.n_max = std::min(a.n_max, 63);  // a verification batch of n_max + 1 within max_batch 64
    // A random model's top-1 probability is a few percent: 0.75 would never draft.
    base.policy.p_min = a.p_min >= 0.0f ? a.p_min : given ? base.policy.p_min : 0.0f;
    base.policy.fallback.enabled = a.fallback;
    base.policy.fallback.min_rounds = a.min_rounds;
    base.policy.fallback.backoff_tokens = a.backoff_tokens;
    base.policy.fallback.rounds_after_backoff = a.rounds_after_backoff;
    base.policy.fallback.max_backoff_tokens = std::max(a.backoff_tokens, base.policy.fallback.max_backoff_tokens);
    base.policy.adaptive.cost_aware = a.cost_aware;
    base.overlap = a.overlap;
    base.stop_at_eos = false;  // every run generates exactly n tokens
    if (a.clock == "cpu") base.clock = spec::process_cpu_seconds;

    std::deque<std::vector<int32_t>> prompts;  // the workloads point into it
    const std::vector<workload> workloads =
        given ? pair_workloads(*files.target, a, base, prompts) : default_workloads(a, base, prompts);
    std::size_t longest = 0;
    for (const auto& p : prompts) longest = std::max(longest, p.size());
    // Room for the runs, and for measure_costs' calls at position 64.
    const int32_t n_ctx = std::min(info.shape.n_ctx, std::max(spec::cache_length_for(info.shape.n_ctx, longest, a.n, base.policy),
                                                              cost_position + base.policy.n_max + 1));
    const model::llama_options options{.n_ctx = n_ctx, .max_batch = base.policy.n_max + 1};
    model::llama_model<Backend> target(backend, files.target, options);
    model::llama_options draft_options = options;
    draft_options.top_probability = true;  // the drafter's p_min without reading its logits back
    model::llama_model<Backend> draft(backend, files.draft, draft_options);
    // Sampled workloads' target (and sampled drafts' draft): the same files, each token's top
    // candidates picked on the device (llama_options::top_candidates), which a chain starting with
    // top-k reads instead of its row. Models of their own, so that greedy steps and greedy drafts
    // do not pay for the top_k.
    std::unique_ptr<model::llama_model<Backend>> sampling_target, sampling_draft;
    const auto any = [&](auto&& pred) { return std::any_of(workloads.begin(), workloads.end(), pred); };
    const int32_t candidates = a.logits_on_host ? 0 : llmrt_examples::top_candidates;
    const auto with_candidates = [&](const auto& file, model::llama_options o) {
        o.top_candidates = candidates;
        return std::make_unique<model::llama_model<Backend>>(backend, file, o);
    };
    if (candidates > 0 && any([](const workload& w) { return w.config.sampling.temperature > 0.0f; }))
        sampling_target = with_candidates(files.target, options);
    if (candidates > 0 && any([](const workload& w) { return w.config.draft_model && w.config.draft_temperature > 0.0f; }))
        sampling_draft = with_candidates(files.draft, draft_options);

    const auto& s = info.shape;
    if (given) std::printf("llmrt-bench-speculative: target %s, draft %s\n", info.target.c_str(), info.draft.c_str());
    else std::printf("llmrt-bench-speculative: %s target, %s draft of the same random weights\n", info.target.c_str(), info.draft.c_str());
    std::printf("model:   llama, %d layers, n_embd %d, %d heads (%d kv), n_ff %d, vocab %d\n", s.n_layer, s.n_embd,
                s.n_head, s.n_head_kv, s.n_ff, s.n_vocab);
    if (given) {
        const auto& d = draft.hparams();
        std::printf("draft:   llama, %d layers, n_embd %d, %d heads (%d kv), n_ff %d\n", d.n_layer, d.n_embd, d.n_head,
                    d.n_head_kv, d.n_ff);
    }
    std::printf("backend: %s\n", description.c_str());
    std::printf("runs:    %d tokens, fastest of %d, %s clock; n_max %d (adaptive), p_min %.2f, fallback %s", a.n, a.reps,
                a.clock == "cpu" ? "process CPU" : "wall", base.policy.n_max, double(base.policy.p_min),
                a.fallback ? "on" : "off");
    std::printf(", overlap %s, length %s", a.overlap ? "on" : "off", a.cost_aware ? "cost" : "acceptance");
    if (given) {
        std::printf("; prompts:");
        std::size_t at = 0;  // prompts holds each file's texts in order
        for (const prompt_file& f : a.prompt_files) {
            std::printf(" %s (", f.name.c_str());
            for (std::size_t i = 0; i < f.paths.size(); ++i, ++at) std::printf("%s%zu", i ? ", " : "", prompts[at].size());
            std::printf(" tokens)");
        }
        std::printf("\n");
    } else {
        std::printf("; greedy; repetitive prompt: %d words x %d\n", a.period, a.repeats);
    }

    call_costs costs;
    std::vector<measurement> results;
    const auto measure_all = [&](auto& t, auto& t_sampling, auto& d, auto& d_sampling) {
        costs = measure_costs(t, d, base.policy.n_max + 1, 5 * a.reps, base);
        std::printf("cost:    target %.2f ms for 1 token, %.2f ms for %d (%.1fx one); draft %.2f ms for 1 token (%.2fx "
                    "the target's)%s\n",
                    costs.target_one * 1e3, costs.target_batch * 1e3, costs.batch, costs.target_batch / costs.target_one,
                    costs.draft_one * 1e3, costs.draft_one / costs.target_one,
                    a.logits_on_host ? "; every row's logits read back (--logits-on-host)" : "");
        for (const auto& w : workloads) {
            auto& target_w = w.config.sampling.temperature > 0.0f ? t_sampling : t;
            results.push_back(measure(target_w, w.config.draft_temperature > 0.0f ? d_sampling : d, w, a));
            std::printf("  done: %s, %s\n", w.name.c_str(), results.back().drafters.c_str());
            std::fflush(stdout);
        }
    };
    if (a.logits_on_host) {
        logits_on_host<model::llama_model<Backend>> t(target), d(draft);
        measure_all(t, t, d, d);
    } else {
        measure_all(target, sampling_target ? *sampling_target : target, draft, sampling_draft ? *sampling_draft : draft);
    }
    print_table(results);

    if (a.json_path == "-") {
        write_json(stdout, results, costs, description, a, info);
    } else {
        std::FILE* f = std::fopen(a.json_path.c_str(), "w");
        if (!f) throw error(errc::io_error, "cannot write " + a.json_path);
        write_json(f, results, costs, description, a, info);
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
        arguments chosen = a;
        chosen.overlap = a.overlap && llmrt_examples::overlap_allowed(backend);
        chosen.backend = backend;
        llmrt_examples::with_backend(backend, [&](auto& b, const std::string& description) { status = run(b, description, chosen); });
        return status;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-bench-speculative: %s\n", e.what());
        return 1;
    }
}
