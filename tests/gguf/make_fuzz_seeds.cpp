// Writes the fuzzers' seed corpus: small valid files from llmrt's writer, tiny llama models among
// them (for fuzz_model_loader, which builds and runs a model from the bytes).
//
//   gguf_fuzz_seeds <folder>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "llmrt/model/random_model.hpp"
#include "sample_gguf.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <seed folder>\n", argv[0]);
        return 2;
    }
    using namespace llmrt;
    try {
        const std::filesystem::path dir = argv[1];
        std::filesystem::create_directories(dir);

        gguf::writer{}.write(dir / "empty.gguf");

        gguf::writer meta;
        llmrt_test::add_sample_metadata(meta);
        meta.write(dir / "metadata.gguf");

        gguf::writer small(64);
        small.set("general.architecture", std::string("llama"));
        small.set("llama.block_count", uint32_t(1));
        small.set("tokenizer.ggml.tokens", std::vector<std::string>{"a", "b"});
        for (qtype t : {qtype::f32, qtype::q8_0, qtype::q4_K}) {
            const int64_t ne0 = block_size(t) == 1 ? 8 : block_size(t);
            small.add_tensor(std::string(name(t)) + ".weight", t, {ne0, 2}, llmrt_test::tensor_bytes(t, 2, ne0, 1));
        }
        small.write(dir / "small_tensors.gguf");

        llmrt_test::sample_writer().write(dir / "sample.gguf");

        // Tensors of types llmrt cannot decode (iq2_xxs, iq3_s, tq1_0, i32), listed all the same.
        gguf::writer undecodable;
        undecodable.set("general.architecture", std::string("llama"));
        llmrt_test::add_undecodable_tensors(undecodable);
        undecodable.write(dir / "undecodable_tensors.gguf");

        // Models of a few KiB: 32-value rows (whole q8_0 blocks), two heads sharing one KV head.
        model::llama_shape tiny;
        tiny.n_vocab = 32;
        tiny.n_embd = 32;
        tiny.n_layer = 1;
        tiny.n_head = 2;
        tiny.n_head_kv = 1;
        tiny.n_ff = 32;
        tiny.n_ctx = 16;
        model::make_random_llama(tiny, qtype::q8_0, 1).write(dir / "tiny_llama_q8_0.gguf");
        tiny.tied_output = true;
        tiny.n_layer = 2;
        model::make_random_llama(tiny, qtype::f16, 2).write(dir / "tiny_llama_f16_tied.gguf");
        std::printf("wrote 7 seed files to %s\n", dir.c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
