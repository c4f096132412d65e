// libFuzzer entry point for loading a llama model from GGUF bytes (built with clang++
// -fsanitize=fuzzer,address,undefined,float-cast-overflow; tests/gguf/CMakeLists.txt).
//
// For any input, building a llama_model on the CPU backend (a cache of 8 positions) either raises
// llmrt::error or gives a model that runs: two tokens (the first and last of its vocabulary) go
// through a forward, every logit and the text of every token is read, the file's tokenizer (if
// llmrt has it) encodes and decodes text taken from the input, and a truncate and a state
// save / restore round trip work. Nothing else is allowed: no crash, no sanitizer report,
// no other exception, no allocation beyond the fuzzer's limit.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "llmrt/cpu/backend.hpp"
#include "llmrt/gguf/gguf.hpp"
#include "llmrt/model/llama.hpp"
#include "llmrt/model/vocab.hpp"
#include "llmrt/text/detokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace llmrt;
    const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
    try {
        auto file = std::make_shared<const gguf::file>(gguf::file::view(input, "fuzz input"));
        cpu::backend cpu;
        model::llama_model<cpu::backend> m(cpu, file, {.n_ctx = 8, .max_batch = 2});
        const std::array<int32_t, 2> tokens{0, m.vocab_size() - 1}, positions{0, 1};
        const auto logits = m.forward(tokens, positions);
        unsigned bits = 0;
        for (float x : logits) bits += unsigned(x != x);  // every logit is read (AddressSanitizer)
        for (const auto& text : m.vocab().token_text) bits += unsigned(text.size());
        if (m.greedy().size() != 2 || m.cache_length() != 2) __builtin_trap();
        // The file's tokenizer, where it has one llmrt knows, on text taken from the input itself:
        // ids inside the vocabulary, and back to text.
        try {
            const text::tokenizer t = model::tokenizer_of(file->metadata(), m.vocab());
            const std::string_view sample(reinterpret_cast<const char*>(data), std::min<size_t>(size, 512));
            const std::vector<int32_t> ids = t.encode(sample, {.parse_special = true});
            for (int32_t id : ids)
                if (id < 0 || id >= m.vocab_size()) __builtin_trap();
            bits += unsigned(text::detokenizer(m.vocab()).text(ids, true).size());
        } catch (const llmrt::error&) {
        }
        const auto state = m.save_state();
        m.truncate(1);
        m.restore_state(state);
        if (m.cache_length() != 2) __builtin_trap();
        return int(bits & 0);
    } catch (const llmrt::error&) {
        return 0;
    }
}
