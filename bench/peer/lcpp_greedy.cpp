// lcpp-greedy: greedy decoding with llama.cpp from token ids, the outside reference for
// llmrt-generate on the same GGUF file (bench/peer/compare.sh's greedy step).
//
//   lcpp-greedy MODEL.gguf --prompt ID,ID,... [-n N] [-ngl N] [--no-repack]
//
// stdout: one line "ids: A B C ...", the N greedy tokens after the prompt (argmax of the logits,
// ties to the lower id). stderr: for every step "step I: id A, margin M", M being the logit of
// the best token minus the second best's. Two implementations that round differently may pick
// different tokens where M is close to 0; a divergence where M is large points at a bug.
// --no-repack turns off llama.cpp's extra CPU buffer types (weight repacking, AMX), as
// llama-cli's --no-repack does: for CPUs that advertise AMX where a VM does not allow it.
// Built by bench/peer/build.sh inside llama.cpp's tree (examples/lcpp-greedy).
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct options {
    std::string model;
    std::vector<llama_token> prompt;
    int n_new = 24;
    int n_gpu_layers = 99;
    bool repack = true;
};

int parse_int(const std::string& option, const char* text, int min) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < min || v > 1000000000L)
        throw std::runtime_error(option + " needs an integer >= " + std::to_string(min) + ", got '" + text + "'");
    return int(v);
}

std::vector<llama_token> parse_ids(const std::string& text) {
    std::vector<llama_token> ids;
    std::size_t at = 0;
    while (at <= text.size()) {
        std::size_t comma = text.find(',', at);
        if (comma == std::string::npos) comma = text.size();
        ids.push_back(parse_int("--prompt", text.substr(at, comma - at).c_str(), 0));
        at = comma + 1;
    }
    return ids;
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--prompt") o.prompt = parse_ids(value());
        else if (a == "-n") o.n_new = parse_int(a, value(), 1);
        else if (a == "-ngl") o.n_gpu_layers = parse_int(a, value(), 0);
        else if (a == "--no-repack") o.repack = false;
        else if (!a.empty() && a[0] != '-' && o.model.empty()) o.model = a;
        else throw std::runtime_error("unknown argument '" + a + "'");
    }
    if (o.model.empty() || o.prompt.empty())
        throw std::runtime_error("usage: lcpp-greedy MODEL.gguf --prompt ID,ID,... [-n N] [-ngl N] [--no-repack]");
    return o;
}

// llama.cpp's log, errors only (its loader is verbose).
void quiet_log(ggml_log_level level, const char* text, void*) {
    if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

int run(const options& o) {
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = o.n_gpu_layers;
    mp.use_extra_bufts = o.repack;
    llama_model* model = llama_model_load_from_file(o.model.c_str(), mp);
    if (model == nullptr) throw std::runtime_error("llama.cpp could not load " + o.model);

    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    for (llama_token t : o.prompt)
        if (t >= n_vocab) throw std::runtime_error("prompt id " + std::to_string(t) + " is outside the vocabulary");

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = uint32_t(o.prompt.size() + std::size_t(o.n_new) + 1);
    cp.n_batch = cp.n_ubatch = uint32_t(o.prompt.size());
    llama_context* ctx = llama_init_from_model(model, cp);
    if (ctx == nullptr) throw std::runtime_error("llama.cpp could not make a context");

    std::vector<llama_token> pending = o.prompt;  // what the next llama_decode reads
    std::vector<llama_token> out;
    for (int step = 0; step < o.n_new; ++step) {
        llama_batch batch = llama_batch_get_one(pending.data(), int32_t(pending.size()));
        if (llama_decode(ctx, batch) != 0) throw std::runtime_error("llama_decode failed at step " + std::to_string(step));
        const float* logits = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int v = 1; v < n_vocab; ++v)
            if (logits[v] > logits[best]) best = v;
        int second = best == 0 ? 1 : 0;
        for (int v = 0; v < n_vocab; ++v)
            if (v != best && logits[v] > logits[second]) second = v;
        std::fprintf(stderr, "step %d: id %d, margin %.6g\n", step, best, double(logits[best] - logits[second]));
        out.push_back(best);
        pending.assign(1, best);
    }

    std::printf("ids:");
    for (llama_token t : out) std::printf(" %d", t);
    std::printf("\n");

    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lcpp-greedy: %s\n", e.what());
        return 1;
    }
}
