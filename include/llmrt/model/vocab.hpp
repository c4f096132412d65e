// A GGUF model's vocabulary (tokenizer.ggml.*) and the text of generated tokens.
//
// Token texts become text through text::detokenizer: SentencePiece's "▁" and "<0xNN>" byte
// tokens, or the byte-level map of GPT-2-style vocabularies, so multi-byte characters split over
// tokens come back whole.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/gguf/metadata.hpp"
#include "llmrt/sample/model.hpp"
#include "llmrt/text/detokenizer.hpp"
#include "llmrt/text/bpe_tokenizer.hpp"
#include "llmrt/text/spm_tokenizer.hpp"
#include "llmrt/text/tokenizer.hpp"

namespace llmrt::model {

// The vocabulary a GGUF file carries; token_text stays empty when it has no tokenizer.ggml.tokens.
inline sample::vocabulary read_vocabulary(const gguf::metadata& meta, int32_t n_vocab) {
    sample::vocabulary v;
    v.size = n_vocab;
    if (const gguf::value* tokens = meta.find("tokenizer.ggml.tokens")) {
        const auto* a = std::get_if<gguf::array>(tokens);
        const auto* texts = a ? a->get_if<std::string>() : nullptr;
        check(texts != nullptr, errc::invalid_argument, [&] {
            return "model vocabulary: metadata key 'tokenizer.ggml.tokens' holds " + gguf::describe(*tokens) +
                   ", not an array of string";
        });
        check(texts->size() == std::size_t(n_vocab), errc::invalid_argument, [&] {
            return "model vocabulary: 'tokenizer.ggml.tokens' lists " + std::to_string(texts->size()) +
                   " tokens, the model has " + std::to_string(n_vocab);
        });
        v.token_text = *texts;
    }
    v.tokenizer = meta.contains("tokenizer.ggml.model") ? meta.get<std::string>("tokenizer.ggml.model") : "";
    auto special = [&](const char* key) -> int32_t {
        const gguf::value* id = meta.find(key);
        if (id == nullptr) return -1;
        int64_t value = -1;
        std::visit(
            [&](const auto& x) {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) value = int64_t(x);
            },
            *id);
        check(value >= 0 && value < n_vocab, errc::invalid_argument, [&] {
            return std::string("model vocabulary: metadata key '") + key + "' holds " + gguf::describe(*id) +
                   " that is not a token id below " + std::to_string(n_vocab);
        });
        return int32_t(value);
    };
    v.bos = special("tokenizer.ggml.bos_token_id");
    v.eos = special("tokenizer.ggml.eos_token_id");
    v.eot = special("tokenizer.ggml.eot_token_id");
    v.eom = special("tokenizer.ggml.eom_token_id");
    if (const gguf::value* types = meta.find("tokenizer.ggml.token_type")) {
        const auto* a = std::get_if<gguf::array>(types);
        const auto* values = a ? a->get_if<int32_t>() : nullptr;
        check(values != nullptr && values->size() == std::size_t(n_vocab), errc::invalid_argument, [&] {
            return "model vocabulary: metadata key 'tokenizer.ggml.token_type' holds " + gguf::describe(*types) +
                   ", not an array of " + std::to_string(n_vocab) + " int32";
        });
        for (int32_t t : *values)
            check(t >= 0 && t <= 6, errc::invalid_argument, [&] {
                return "model vocabulary: 'tokenizer.ggml.token_type' holds the type " + std::to_string(t) +
                       " (0 undefined .. 6 byte)";
            });
        v.token_type = *values;
    }
    auto flag = [&](const char* key, bool otherwise) {
        const gguf::value* f = meta.find(key);
        if (f == nullptr) return otherwise;
        const bool* b = std::get_if<bool>(f);
        check(b != nullptr, errc::invalid_argument,
              [&] { return std::string("model vocabulary: metadata key '") + key + "' holds " + gguf::describe(*f) + ", not a bool"; });
        return *b;
    };
    // Defaults where the file is silent, as llama.cpp takes them: SentencePiece vocabularies put
    // a space before the text and start with bos; of the byte-level ones, Llama 3's starts with bos.
    const bool spm = v.tokenizer == "llama";
    const std::string pre = meta.contains("tokenizer.ggml.pre") ? meta.get<std::string>("tokenizer.ggml.pre") : "";
    v.add_space_prefix = flag("tokenizer.ggml.add_space_prefix", spm);
    v.add_bos = v.bos >= 0 && flag("tokenizer.ggml.add_bos_token", spm || pre == "llama-bpe");
    // A file without an end-of-turn id: the control token chat formats end a turn with.
    if (v.eot < 0 && !v.token_text.empty())
        for (const char* t : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>"})
            for (std::size_t i = 0; i < v.token_text.size() && v.eot < 0; ++i)
                if (v.token_text[i] == t && int32_t(i) != v.eos &&
                    (v.token_type.empty() || v.token_type[i] == 3 || v.token_type[i] == 4))
                    v.eot = int32_t(i);
    return v;
}

// The SentencePiece tokenizer of a GGUF vocabulary (tokenizer.ggml.model = "llama"): its tokens,
// tokenizer.ggml.scores, add_space_prefix and unknown_token_id.
inline text::spm_tokenizer spm_tokenizer_of(const gguf::metadata& meta, const sample::vocabulary& v) {
    check(v.tokenizer == "llama" && !v.token_text.empty(), errc::invalid_argument, [&] {
        return "spm_tokenizer_of: the vocabulary's tokenizer is '" + v.tokenizer + "' with " +
               std::to_string(v.token_text.size()) + " token texts, not a SentencePiece ('llama') one";
    });
    const gguf::value* scores = meta.find("tokenizer.ggml.scores");
    const auto* a = scores ? std::get_if<gguf::array>(scores) : nullptr;
    const auto* values = a ? a->get_if<float>() : nullptr;
    check(values != nullptr && values->size() == v.token_text.size(), errc::invalid_argument, [&] {
        return "spm_tokenizer_of: metadata key 'tokenizer.ggml.scores' holds " +
               (scores ? gguf::describe(*scores) : std::string("nothing")) + ", not " + std::to_string(v.token_text.size()) +
               " float32 scores";
    });
    int32_t unknown = -1;
    if (const gguf::value* id = meta.find("tokenizer.ggml.unknown_token_id"))
        if (const auto* u = std::get_if<uint32_t>(id); u && *u < v.token_text.size()) unknown = int32_t(*u);
    return text::spm_tokenizer(v.token_text, *values, v.add_space_prefix, unknown);
}

// The byte-level BPE tokenizer of a GGUF vocabulary (tokenizer.ggml.model = "gpt2"): its tokens,
// tokenizer.ggml.merges and the pre-tokenizer tokenizer.ggml.pre names.
inline text::bpe_tokenizer bpe_tokenizer_of(const gguf::metadata& meta, const sample::vocabulary& v) {
    check(v.tokenizer == "gpt2" && !v.token_text.empty(), errc::invalid_argument, [&] {
        return "bpe_tokenizer_of: the vocabulary's tokenizer is '" + v.tokenizer + "' with " +
               std::to_string(v.token_text.size()) + " token texts, not a byte-level BPE ('gpt2') one";
    });
    const gguf::value* merges = meta.find("tokenizer.ggml.merges");
    const auto* a = merges ? std::get_if<gguf::array>(merges) : nullptr;
    const auto* texts = a ? a->get_if<std::string>() : nullptr;
    check(texts != nullptr, errc::invalid_argument, [&] {
        return "bpe_tokenizer_of: metadata key 'tokenizer.ggml.merges' holds " +
               (merges ? gguf::describe(*merges) : std::string("nothing")) + ", not an array of string";
    });
    const std::string pre = meta.contains("tokenizer.ggml.pre") ? meta.get<std::string>("tokenizer.ggml.pre") : "default";
    return text::bpe_tokenizer(v.token_text, *texts, text::pre_tokenizer_named(pre));
}

// The tokenizer of a GGUF vocabulary, whichever its family ("llama" or "gpt2").
inline text::tokenizer tokenizer_of(const gguf::metadata& meta, const sample::vocabulary& v) {
    if (v.tokenizer == "gpt2") return text::tokenizer(v, bpe_tokenizer_of(meta, v));
    check(v.tokenizer == "llama", errc::unsupported_type, [&] {
        return "tokenizer_of: the tokenizer '" + v.tokenizer +
               "' (tokenizer.ggml.model) is not supported; llmrt has 'llama' (SentencePiece) and 'gpt2' (byte-level BPE)";
    });
    return text::tokenizer(v, spm_tokenizer_of(meta, v));
}

// The bytes one SentencePiece piece stands for: "<0xNN>" -> the byte NN, every "▁" -> ' '.
inline std::string piece_text(std::string_view piece) {
    const int b = text::byte_token_value(piece);
    return b >= 0 ? std::string(1, char(b)) : text::spm_spaces(piece);
}

// The text of `ids` (text::detokenizer: either tokenizer family, control tokens left out, the
// SentencePiece leading space removed); ids outside the vocabulary raise llmrt::error.
inline std::string detokenize(const sample::vocabulary& vocab, std::span<const int32_t> ids) {
    return text::detokenizer(vocab).text(ids);
}

}  // namespace llmrt::model
