// llmrt-bench-tokenize: how fast the tokenizers turn text into ids and back, on one core.
//
//   llmrt-bench-tokenize [--vocab FILE.gguf]... [--mb N] [--reps N]
//
// The text is English prose: this repository's own README, docs and bench/RESULTS.md, repeated
// to N MB (default 1). Each vocabulary (default: the three of tests/data/vocab) encodes it
// `reps` times (default 3) and the fastest pass is reported, then decodes the ids back, which
// must give the text again.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/vocab.hpp>
#include <llmrt/text/detokenizer.hpp>

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
    try {
        using namespace llmrt;
        const std::string source = LLMRT_SOURCE_DIR;
        std::vector<std::string> vocabs;
        double mb = 1.0;
        int reps = 3;
        for (int i = 1; i < argc; ++i) {
            const std::string o = argv[i];
            if (o == "--vocab" && i + 1 < argc) vocabs.push_back(argv[++i]);
            else if (o == "--mb" && i + 1 < argc) mb = std::stod(argv[++i]);
            else if (o == "--reps" && i + 1 < argc) reps = std::max(1, std::stoi(argv[++i]));
            else {
                std::fprintf(stderr, "usage: llmrt-bench-tokenize [--vocab FILE.gguf]... [--mb N] [--reps N]\n");
                return 2;
            }
        }
        if (vocabs.empty())
            for (const char* name : {"llama-bpe", "qwen2", "llama-spm"})
                vocabs.push_back(source + "/tests/data/vocab/ggml-vocab-" + name + ".gguf");
        std::string prose;
        for (const char* f : {"/README.md", "/docs/design.md", "/docs/testing.md", "/bench/RESULTS.md"}) prose += read_file(source + f);
        std::string text;
        while (double(text.size()) < mb * 1e6) text += prose;
        text.resize(std::size_t(mb * 1e6));
        while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();  // whole characters
        if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();

        std::printf("text: %.2f MB of English prose (README, docs, RESULTS.md), one core, fastest of %d\n\n", double(text.size()) / 1e6, reps);
        std::printf("| vocabulary | tokenizer | tokens | encode s | MB/s | tokens/s | decode s | round trip |\n");
        std::printf("|---|---|---|---|---|---|---|---|\n");
        for (const std::string& path : vocabs) {
            const gguf::file f = gguf::file::open(path);
            const sample::vocabulary v = model::read_vocabulary(f.metadata());
            const text::tokenizer t = model::tokenizer_of(f.metadata(), v);
            std::vector<int32_t> ids;
            double best = 1e30;
            for (int r = 0; r < reps; ++r) {
                const auto start = std::chrono::steady_clock::now();
                ids = t.encode(text, {.add_bos = false});
                best = std::min(best, seconds_since(start));
            }
            const auto start = std::chrono::steady_clock::now();
            const std::string back = text::detokenizer(v).text(ids);
            const double decode = seconds_since(start);
            const std::string name = path.substr(path.find_last_of('/') + 1);
            const std::string pre = f.metadata().get_or<std::string>("tokenizer.ggml.pre", "");
            std::printf("| %s | %s %s | %zu | %.3f | %.1f | %.0f | %.3f | %s |\n", name.c_str(), v.tokenizer.c_str(), pre.c_str(),
                        ids.size(), best, double(text.size()) / 1e6 / best, double(ids.size()) / best, decode,
                        back == text ? "exact" : "DIFFERS");
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-bench-tokenize: %s\n", e.what());
        return 1;
    }
}
