// llmrt-tokenize: a GGUF file's tokenizer from the command line (only its tokenizer.ggml.* keys
// are read: a vocabulary-only file works too).
//
//   llmrt-tokenize MODEL.gguf -p "Hello world"      ids of the text, one line (bos as the file says)
//   echo "Hello world" | llmrt-tokenize MODEL.gguf   ids of standard input
//   llmrt-tokenize MODEL.gguf --ids 128000,9906,1917  the text of the ids
//
// Options: --no-bos (no bos first), --special (special tokens written in the text are tokens;
// with --ids, control tokens are shown), --pieces (each id with its text, one per line).
#include <cstdio>
#include <exception>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/vocab.hpp>
#include <llmrt/text/detokenizer.hpp>

#include "../generate/arguments.hpp"

int main(int argc, char** argv) {
    try {
        using namespace llmrt;
        std::string path, prompt;
        std::vector<int32_t> ids;
        bool has_prompt = false, has_ids = false, bos = true, special = false, pieces = false;
        for (llmrt_examples::command_line cl(argc, argv); cl.next();) {
            const std::string& o = cl.option();
            if (o == "-p") prompt = cl.value(), has_prompt = true;
            else if (o == "--ids") ids = llmrt_examples::to_ids(cl.value()), has_ids = true;
            else if (o == "--no-bos") bos = false;
            else if (o == "--special") special = true;
            else if (o == "--pieces") pieces = true;
            else if (o == "-h" || o == "--help") {
                std::puts("usage: llmrt-tokenize MODEL.gguf [-p TEXT | --ids IDS] [--no-bos] [--special] [--pieces]\n"
                          "Without -p or --ids the text is read from standard input.");
                return 0;
            } else if (!o.empty() && o[0] != '-' && path.empty()) path = o;
            else cl.reject();
        }
        if (path.empty()) llmrt_examples::bad_argument("needs a GGUF file (MODEL.gguf)");
        if (has_prompt && has_ids) llmrt_examples::bad_argument("-p and --ids: one or the other");
        const gguf::file f = gguf::file::open(path);
        const sample::vocabulary v = model::read_vocabulary(f.metadata());
        const text::detokenizer d(v);
        if (has_ids) {
            if (pieces)
                for (int32_t id : ids) std::printf("%d\t'%s'\n", id, d.piece(id, special).c_str());
            else
                std::printf("%s\n", d.text(ids, special).c_str());
            return 0;
        }
        if (!has_prompt) prompt.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        const text::tokenizer t = model::tokenizer_of(f.metadata(), v);
        const std::vector<int32_t> out = t.encode(prompt, {.add_bos = bos, .parse_special = special});
        if (pieces) {
            for (int32_t id : out) std::printf("%d\t'%s'\n", id, d.piece(id, true).c_str());
        } else {
            for (std::size_t i = 0; i < out.size(); ++i) std::printf(i ? ",%d" : "%d", out[i]);
            std::printf("\n");
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llmrt-tokenize: %s\n", llmrt_examples::message_of(e));
        return 1;
    }
}
