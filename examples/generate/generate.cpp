// llmrt-generate: generation (greedy, or sampled with --temp) with a llama, qwen2, qwen3, qwen3moe or gpt-oss GGUF on
// the best backend present; the text streams as it comes (SentencePiece or byte-level BPE
// vocabularies) and stops at the end of generation (eos, eot).
//
//   llmrt-generate                              make a small random model in memory and run it
//   llmrt-generate MODEL.gguf [options]         run a model file
//   llmrt-generate --make-model OUT.gguf [shape options]   write a random llama GGUF
//
// Options:  --backend NAME   cpu, cpu:f32, cpu:ggml (default: the best present: CUDA, Vulkan, CPU)
//           -p TEXT          the prompt as text, tokenized with the file's vocabulary
//           --prompt-ids IDS comma-separated token ids instead (default 1,259,260,261; --prompt too)
//           -n N             tokens to generate (default 32)
//           --ctx N          cache length (default: min(context length, 2048))
//           --batch N        most tokens per forward call (default 8)
//           --cache-type T   the KV cache's type, f16 or f32 (default f32)
//           --temp T         sample at temperature T through the sampler chain (default 0: greedy),
//           --top-k N (40)   --top-p P (0.95)  --min-p P (0.05)  --seed N (1): the same text every run
//           --margins        greedy: also print each generated token's top-2 logit margin (the
//                            logits read back): how near a tie each step was, where two runs part
//           --tp N           tensor parallelism on the CPU backend: N ranks, one thread each, every
//                            rank its slices of the weights (model/tensor_parallel.hpp); the same ids
//           --gpus N         tensor parallelism on CUDA devices 0..N-1 (one rank each, collectives over
//                            NCCL; needs a build with CUDA and NCCL): the same ids as one GPU
//           --draft D.gguf   speculative decoding with draft model D (same vocabulary), greedy drafts:
//                            the same tokens as without it (sample/generator.hpp; the text at the end)
//           --ngram          speculative decoding with the n-gram (prompt lookup) drafter, before D
//           --no-overlap     with --draft: draft only after each verification, not during it
//           --p-min P        with --draft: the draft stops below this top-1 probability (default 0.5)
// Both drive the ranks in lockstep through model/tensor_parallel_llama.hpp.
// Shape options (--make-model and the no-argument demo):
//           --type T (q4_K)  --vocab N (512)  --embd N (256)  --layers N (4)  --heads N (4)
//           --kv-heads N (2) --ff N (768)     --ctx N (512)   --seed N (1)    --tied
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <llmrt/comm/local.hpp>
#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/model.hpp>
#include <llmrt/model/tensor_parallel_llama.hpp>
#include <llmrt/sample/sample.hpp>
#include <llmrt/text/detokenizer.hpp>

#include "arguments.hpp"
#include "backend_choice.hpp"

namespace {

using llmrt_examples::command_line;
using llmrt_examples::to_ids;

struct arguments {
    std::string model_path, make_model_path, backend;
    std::vector<int32_t> prompt{1, 259, 260, 261};
    std::string prompt_text;  // -p: tokenized with the model's vocabulary (replaces `prompt`)
    bool has_prompt_text = false;
    int32_t n_new = 32, n_ctx = 0, max_batch = 8;
    llmrt::model::llama_shape shape{.n_vocab = 512, .n_embd = 256, .n_layer = 4, .n_head = 4, .n_head_kv = 2,
                                    .n_ff = 768, .n_ctx = 512};
    llmrt::qtype type = llmrt::qtype::q4_K;
    uint64_t seed = 1;  // the random model's (--make-model) and the sampler's
    float temperature = 0.0f, top_p = 0.95f, min_p = 0.05f;
    int32_t top_k = 40;
    int32_t tp = 0;    // --tp N: N ranks of a tensor-parallel group on N threads (CPU backend)
    int32_t gpus = 0;  // --gpus N: N ranks on CUDA devices 0..N-1 over NCCL
    llmrt::qtype kv_type = llmrt::qtype::f32;  // --cache-type
    bool margins = false;                      // --margins
    std::string draft_path;                    // --draft
    bool ngram = false, overlap = true;        // --ngram, --no-overlap
    float p_min = llmrt::sample::draft_policy{}.p_min;  // --p-min
};

llmrt::qtype cache_type_named(const std::string& s) {
    if (s == "f16") return llmrt::qtype::f16;
    if (s == "f32") return llmrt::qtype::f32;
    throw llmrt::error(llmrt::errc::invalid_argument, "--cache-type takes f16 or f32, not '" + s + "'");
}

bool speculative(const arguments& a) { return !a.draft_path.empty() || a.ngram; }

arguments parse(int argc, char** argv) {
    arguments a;
    bool ctx_given = false;
    for (command_line cl(argc, argv); cl.next();) {
        const std::string& o = cl.option();
        if (o == "--make-model") a.make_model_path = cl.value();
        else if (o == "--backend") a.backend = cl.value();
        else if (o == "-p") a.prompt_text = cl.value(), a.has_prompt_text = true;
        else if (o == "--prompt-ids" || o == "--prompt") a.prompt = to_ids(cl.value());
        else if (o == "-n") a.n_new = cl.int_value();
        else if (o == "--ctx") a.n_ctx = a.shape.n_ctx = cl.int_value(), ctx_given = true;
        else if (o == "--batch") a.max_batch = cl.int_value();
        else if (o == "--cache-type") a.kv_type = cache_type_named(cl.value());
        else if (o == "--type") a.type = llmrt::qtype_from_name(cl.value());
        else if (o == "--vocab") a.shape.n_vocab = cl.int_value();
        else if (o == "--embd") a.shape.n_embd = cl.int_value();
        else if (o == "--layers") a.shape.n_layer = cl.int_value();
        else if (o == "--heads") a.shape.n_head = cl.int_value();
        else if (o == "--kv-heads") a.shape.n_head_kv = cl.int_value();
        else if (o == "--ff") a.shape.n_ff = cl.int_value();
        else if (o == "--seed") a.seed = uint64_t(cl.int_value());
        else if (o == "--temp") a.temperature = float(cl.number_value());
        else if (o == "--top-k") a.top_k = cl.int_value();
        else if (o == "--top-p") a.top_p = float(cl.number_value());
        else if (o == "--min-p") a.min_p = float(cl.number_value());
        else if (o == "--tied") a.shape.tied_output = true;
        else if (o == "--tp") a.tp = cl.int_value();
        else if (o == "--gpus") a.gpus = cl.int_value(1, 64);
        else if (o == "--margins") a.margins = true;
        else if (o == "--draft") a.draft_path = cl.value();
        else if (o == "--ngram") a.ngram = true;
        else if (o == "--no-overlap") a.overlap = false;
        else if (o == "--p-min") a.p_min = float(cl.number_value(0.0, 1.0));
        else if (o == "-h" || o == "--help") {
            std::puts("usage: llmrt-generate [MODEL.gguf] [--backend NAME] [-p TEXT | --prompt-ids IDS] [-n N] [--ctx N] [--batch N]\n"
                      "                      [--cache-type f16|f32]\n"
                      "                      [--temp T] [--top-k N] [--top-p P] [--min-p P] [--seed N] [--tp N | --gpus N]\n"
                      "                      [--margins] [--draft D.gguf] [--ngram] [--no-overlap] [--p-min P]\n"
                      "       llmrt-generate --make-model OUT.gguf [--type T] [--vocab N] [--embd N] [--layers N]\n"
                      "                      [--heads N] [--kv-heads N] [--ff N] [--ctx N] [--seed N] [--tied]\n"
                      "With no model, a small random llama is made in memory and run.\n"
                      "--tp N    tensor parallel over N CPU ranks, one thread each (--backend cpu, cpu:f32, cpu:ggml)\n"
                      "--gpus N  tensor parallel over CUDA devices 0..N-1, one rank each, collectives over NCCL\n"
                      "          (needs a build with CUDA and NCCL; --backend cuda or none)\n"
                      "--margins greedy: print each generated token's top-2 logit margin (reads the logits back)\n"
                      "--draft D.gguf  speculative decoding with draft model D (its vocabulary the model's): the\n"
                      "          same tokens, the text printed at the end; --ngram adds the n-gram drafter (alone\n"
                      "          without --draft); --no-overlap drafts only after each verification; --p-min P: the\n"
                      "          draft stops below this top-1 probability (default 0.5; a random model needs 0)");
            std::exit(0);
        } else if (!o.empty() && o[0] != '-' && a.model_path.empty()) a.model_path = o;
        else cl.reject();
    }
    if (!ctx_given) a.n_ctx = 0;
    if (a.margins && a.temperature > 0.0f)
        throw llmrt::error(llmrt::errc::invalid_argument, "--margins is for greedy decoding; --temp samples");
    if (speculative(a) && (a.margins || a.tp != 0 || a.gpus != 0))
        throw llmrt::error(llmrt::errc::invalid_argument,
                           "--draft and --ngram decode speculatively on one backend: not with --margins, --tp or --gpus");
    return a;
}

// Text safe for a terminal: control bytes (random models emit any byte token) as \xNN.
std::string printable(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
        if (c < 0x20 || c == 0x7f) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\x%02x", c);
            out += esc;
        } else {
            out += char(c);
        }
    }
    return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// What a run needs before its model exists: the cache length and the prompt's ids.
struct run_setup {
    int32_t n_ctx = 0;
    std::vector<int32_t> prompt;
};

run_setup setup(const llmrt::gguf::file& file, const arguments& a) {
    using namespace llmrt;
    run_setup s;
    const model::llama_hparams file_hparams = model::load_llama_weights(file).hparams;
    // The model's context, capped: a cache for 128k positions is rarely what a demo wants.
    s.n_ctx = a.n_ctx != 0 ? a.n_ctx : std::min<int32_t>(file_hparams.n_ctx_train, 2048);
    // -p: the text through the file's own tokenizer (bos as the vocabulary says, special tokens
    // such as <|begin_of_text|> written in the text taken as those tokens).
    s.prompt = a.prompt;
    if (a.has_prompt_text) {
        const sample::vocabulary v = model::read_vocabulary(file.metadata(), file_hparams.n_vocab);
        s.prompt = model::tokenizer_of(file.metadata(), v).encode(a.prompt_text, {.parse_special = true});
        check(!s.prompt.empty(), errc::invalid_argument, "-p: the prompt text gives no tokens");
    }
    // The prompt and every new token but the last take a position: refuse before anything runs.
    const int64_t positions = int64_t(s.prompt.size()) + std::max(a.n_new - 1, 0);
    check(positions <= s.n_ctx, errc::invalid_argument, [&] {
        return "the prompt (" + std::to_string(s.prompt.size()) + " tokens) and -n " + std::to_string(a.n_new) + " need " +
               std::to_string(positions) + " positions; the cache holds " + std::to_string(s.n_ctx) + " (--ctx)";
    });
    return s;
}

llmrt::model::llama_options model_options(const run_setup& s, const arguments& a) {
    return {.n_ctx = s.n_ctx, .max_batch = a.max_batch, .kv_type = a.kv_type};
}

template <class Model>
void print_header(const Model& m, const std::string& backend_description, const llmrt::gguf::file& file, const run_setup& s) {
    const auto& h = m.hparams();
    std::printf("model:   %s\n         %.*s, %d layers, n_embd %d, %d heads (%d kv) of %d, n_ff %d, vocab %d, cache %d\n",
                file.source().c_str(), int(h.arch->name.size()), h.arch->name.data(), h.n_layer, h.n_embd, h.n_head,
                h.n_head_kv, h.head_dim(), h.n_ff, h.n_vocab, s.n_ctx);
    std::printf("backend: %s\n", backend_description.c_str());
    std::printf("prompt:  ");
    for (int32_t t : s.prompt) std::printf("%d ", t);
    std::printf("\n");
}

// --temp T and its chain's other settings (greedy below T = 0).
llmrt::sample::sampling_params sampling_of(const arguments& a) {
    if (a.temperature <= 0.0f) return llmrt::sample::sampling_params::greedy();
    llmrt::sample::sampling_params sp;
    sp.temperature = a.temperature;
    sp.top_k = a.top_k;
    sp.top_p = a.top_p;
    sp.min_p = a.min_p;
    sp.seed = a.seed;
    return sp;
}

// --draft / --ngram: the generator decodes the prompt's continuation speculatively (greedy drafts,
// so the tokens are those of plain decoding with the same chain), stopping at the end of
// generation; the text is printed once it is done.
template <class Model>
void run_speculative(Model& m, Model* draft, const std::string& backend_description, const llmrt::gguf::file& file,
                     const arguments& a, const run_setup& s, bool overlap) {
    using namespace llmrt;
    print_header(m, backend_description, file, s);
    sample::draft_policy policy;
    policy.p_min = a.p_min;
    sample::generator<Model> g(m, sample::sampler_chain(sampling_of(a)), policy,
                               {.stop_at_eos = true, .clock = {}, .overlap = overlap});
    if (a.ngram) g.add_drafter(std::make_unique<sample::ngram_drafter>());
    if (draft)
        g.add_drafter(std::make_unique<sample::model_drafter<Model>>(*draft, sample::sampler_chain(sample::sampling_params::greedy())));
    const auto start = std::chrono::steady_clock::now();
    std::vector<int32_t> out = g.generate(s.prompt, a.n_new).tokens;
    const double seconds = seconds_since(start);
    const auto end = std::find_if(out.begin(), out.end(), [&](int32_t id) { return m.vocab().ends_generation(id); });
    if (end != out.end()) out.erase(end + 1, out.end());  // eot as well as eos ends it, as without a draft
    if (!m.vocab().token_text.empty()) {
        text::detokenizer words(m.vocab());
        text::utf8_stream stream;
        std::string shown;
        for (int32_t id : out)
            if (!m.vocab().ends_generation(id)) shown += stream.push(words.piece(id));
        shown += stream.flush();
        std::printf("text:    \"%s\"%s\n", printable(shown).c_str(), end != out.end() ? " (end of generation)" : "");
    }
    std::printf("output:  ");
    for (int32_t t : out) std::printf("%d ", t);
    std::printf("\n");
    const auto& st = g.stats();
    std::printf("drafts:  %s%s; %lld rounds, %lld of %lld draft tokens accepted (%.3f), mean acceptance length %.2f, "
                "%lld rounds drafted ahead, %lld plain steps\n",
                a.ngram ? "n-gram" : "", draft ? (a.ngram ? " + draft model" : "draft model") : "",
                (long long)st.rounds, (long long)st.accepted, (long long)st.drafted, st.acceptance_rate(),
                st.mean_acceptance_length(), (long long)st.drafted_ahead, (long long)st.plain_steps);
    std::printf("speed:   prompt %zu tokens and generation %zu tokens in %.1f ms (%.1f tokens/s generated, the prompt included)\n",
                s.prompt.size(), out.size(), seconds * 1e3, seconds > 0.0 ? double(out.size()) / seconds : 0.0);
}

// Model: llama_model<Backend>, or tensor_parallel_llama<Backend> (its ranks in lockstep, rank 0's
// logits and ids).
template <class Model>
void run(Model& m, const std::string& backend_description, const llmrt::gguf::file& file, const arguments& a,
         const run_setup& s) {
    using namespace llmrt;
    const std::vector<int32_t>& prompt = s.prompt;
    print_header(m, backend_description, file, s);

    // The prompt, then each new token: timed apart, as prompt processing and generation differ.
    // The text streams as tokens come (whole characters only); an end-of-generation token
    // (eos, eot) ends the output early.
    // With --temp > 0 each token is drawn by the sampler chain (seeded: the same text every run),
    // else it is the argmax.
    std::optional<sample::sampler_chain> chain;
    if (a.temperature > 0.0f) {
        chain.emplace(sampling_of(a));
        chain->accept(prompt);
    }
    std::vector<float> margins;  // --margins: per generated token, its logit less the runner-up's
    std::vector<int32_t> top_ids;  // a top_k_model's candidates for the chain's top-k
    std::vector<float> top_logits;
    auto next_after = [&](int32_t last) {  // `last` enters the cache; the token after it
        if (!chain && !a.margins) return model::generate_greedy(m, std::span<const int32_t>(&last, 1), 1).front();
        const int32_t position = m.cache_length();
        if (!chain) {  // greedy from the logits: the argmax (the first largest) and the margin
            const auto row = m.forward(std::span<const int32_t>(&last, 1), std::span<const int32_t>(&position, 1));
            std::size_t best = 0;
            for (std::size_t i = 1; i < row.size(); ++i)
                if (row[i] > row[best]) best = i;
            float runner_up = -std::numeric_limits<float>::infinity();
            for (std::size_t i = 0; i < row.size(); ++i)
                if (i != best) runner_up = std::max(runner_up, row[i]);
            margins.push_back(row.size() > 1 ? row[best] - runner_up : 0.0f);
            return int32_t(best);
        }
        const int32_t token = [&] {
            if constexpr (sample::top_k_model<Model>) {
                if (sample::reads_top_candidates(m, chain->leading_top_k())) {  // k candidates travel, not the row
                    top_ids.resize(std::size_t(m.top_candidates()));
                    top_logits.resize(top_ids.size());
                    m.eval_top(std::span<const int32_t>(&last, 1), position, top_ids, top_logits);
                    return chain->sample_top(top_ids, top_logits);
                }
            }
            return chain->sample(m.forward(std::span<const int32_t>(&last, 1), std::span<const int32_t>(&position, 1)));
        }();
        chain->accept(token);
        return token;
    };
    const auto start = std::chrono::steady_clock::now();
    std::vector<int32_t> out;
    if (a.n_new == 0) {
        (void)model::generate_greedy(m, prompt, 0);
    } else {
        if (prompt.size() > 1) (void)model::generate_greedy(m, std::span<const int32_t>(prompt).first(prompt.size() - 1), 0);
        out.push_back(next_after(prompt.back()));
    }
    const double prompt_seconds = seconds_since(start);
    const bool has_text = !m.vocab().token_text.empty();
    std::optional<text::detokenizer> words;
    if (has_text) words.emplace(m.vocab());
    text::utf8_stream stream;
    auto show = [&](int32_t id) {
        if (!words || m.vocab().ends_generation(id)) return;
        std::fputs(printable(stream.push(words->piece(id))).c_str(), stdout);
        std::fflush(stdout);
    };
    if (has_text) std::printf("text:    \"");
    if (!out.empty()) show(out.back());
    const auto gen_start = std::chrono::steady_clock::now();
    while (int32_t(out.size()) < a.n_new && !m.vocab().ends_generation(out.back())) {
        out.push_back(next_after(out.back()));
        show(out.back());
    }
    const double gen_seconds = seconds_since(gen_start);
    if (has_text) std::printf("%s\"%s\n", printable(stream.flush()).c_str(),
                              !out.empty() && m.vocab().ends_generation(out.back()) ? " (end of generation)" : "");

    std::printf("output:  ");
    for (int32_t t : out) std::printf("%d ", t);
    std::printf("\n");
    if (a.margins) {
        std::printf("margins: ");
        for (float d : margins) std::printf("%.6f ", double(d));
        std::printf("\n");
    }
    const int generated = std::max(int(out.size()) - 1, 0);
    std::printf("speed:   prompt %zu tokens in %.1f ms (%.1f tokens/s), generation %d tokens in %.1f ms (%.1f tokens/s)\n",
                prompt.size(), prompt_seconds * 1e3, double(prompt.size()) / prompt_seconds, generated,
                gen_seconds * 1e3, generated > 0 ? double(generated) / gen_seconds : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        using namespace llmrt;
        const arguments a = parse(argc, argv);
        if (!a.make_model_path.empty()) {
            model::write_random_llama(a.make_model_path, a.shape, a.type, a.seed);
            std::printf("wrote %s: random llama, %d layers, n_embd %d, %d heads (%d kv), n_ff %d, vocab %d, context %d, %s\n",
                        a.make_model_path.c_str(), a.shape.n_layer, a.shape.n_embd, a.shape.n_head, a.shape.n_head_kv,
                        a.shape.n_ff, a.shape.n_vocab, a.shape.n_ctx, name(a.type));
            return 0;
        }
        std::shared_ptr<const gguf::file> file;
        if (a.model_path.empty()) {
            std::printf("no model given: generating a random %s llama in memory (llmrt-generate --help for more)\n",
                        name(a.type));
            file = std::make_shared<const gguf::file>(gguf::file::from_bytes(
                model::make_random_llama(a.shape, a.type, a.seed).to_bytes(), "random llama (in memory)"));
        } else {
            file = std::make_shared<const gguf::file>(gguf::file::open(a.model_path));
        }
        const std::string backend = a.backend.empty() ? llmrt_examples::backends_by_preference().front() : a.backend;
        const run_setup s = setup(*file, a);
        model::llama_options options = model_options(s, a);
        // Sampling reads each token's top candidates, picked on the device, not its logits.
        if (a.temperature > 0.0f) options.top_candidates = llmrt_examples::top_candidates;
        check(a.tp == 0 || a.gpus == 0, errc::invalid_argument,
              "--tp (CPU ranks) and --gpus (CUDA ranks) are two ways to run tensor parallel; give one");
        if (a.tp != 0) {  // N CPU backends, each one rank of an in-process group on a thread of its own
            check(a.tp >= 1 && a.tp <= 64 && backend.substr(0, backend.find(':')) == "cpu", errc::invalid_argument, [&] {
                return "--tp " + std::to_string(a.tp) + " with backend '" + backend +
                       "': tensor parallelism takes 1..64 ranks of the CPU backend (--backend cpu, cpu:f32, cpu:ggml)";
            });
            comm::local_group group(a.tp);
            const cpu::backend_options o = llmrt_examples::cpu_options(backend);
            model::tensor_parallel_llama<cpu::backend> m(
                a.tp,
                [&](int32_t r) {
                    cpu::backend_options rank_options = o;
                    rank_options.communicator = &group.rank(r);
                    return std::make_unique<cpu::backend>(rank_options);
                },
                file, options, [&] { group.cancel(); });
            run(m,
                "cpu (" + std::string(cpu::to_string(o.quantized_activations)) +
                    " activations for quantized weights), tensor parallel over " + std::to_string(a.tp) + " ranks on " +
                    std::to_string(a.tp) + " threads",
                *file, a, s);
            return 0;
        }
        if (a.gpus != 0) {
            llmrt_examples::with_gpus(a.gpus, a.backend, [&](auto make_backend, auto cancel, const std::string& description) {
                using backend_type = typename decltype(make_backend(0))::element_type;
                model::tensor_parallel_llama<backend_type> m(a.gpus, make_backend, file, options, cancel);
                run(m, description, *file, a, s);
            });
            return 0;
        }
        llmrt_examples::with_backend(backend, [&](auto& b, const std::string& description) {
            using backend_type = std::remove_reference_t<decltype(b)>;
            if (!speculative(a)) {
                model::llama_model<backend_type> m(b, file, options);
                run(m, description, *file, a, s);
                return;
            }
            // A verification of n_max + 1 tokens in one forward call; the draft's p_min read on its device.
            model::llama_options target_options = options;
            target_options.max_batch = std::max(options.max_batch, sample::draft_policy{}.n_max + 1);
            model::llama_model<backend_type> m(b, file, target_options);
            std::unique_ptr<model::llama_model<backend_type>> draft;
            if (!a.draft_path.empty()) {
                model::llama_options draft_options = target_options;
                draft_options.top_probability = true;
                draft_options.top_candidates = 0;  // it drafts greedily
                draft = std::make_unique<model::llama_model<backend_type>>(
                    b, std::make_shared<const gguf::file>(gguf::file::open(a.draft_path)), draft_options);
            }
            run_speculative(m, draft.get(), description, *file, a, s, a.overlap && llmrt_examples::overlap_allowed(backend));
        });
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-generate: %s\n", llmrt_examples::message_of(e));
        return 1;
    }
}
