// A GGUF model's vocabulary (tokenizer.ggml.*) and the text of generated tokens.
//
// Token texts become text through text::detokenizer: SentencePiece's "▁" and "<0xNN>" byte
// tokens, or the byte-level map of GPT-2-style vocabularies, so multi-byte characters split over
// tokens come back whole.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <climits>
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
    if (meta.contains("tokenizer.ggml.tokens")) {
        const auto* texts = &meta.get<std::vector<std::string>>("tokenizer.ggml.tokens");
        check(texts->size() == std::size_t(n_vocab), errc::invalid_argument, [&] {
            return "model vocabulary: 'tokenizer.ggml.tokens' lists " + std::to_string(texts->size()) +
                   " tokens, the model has " + std::to_string(n_vocab);
        });
        v.token_text = *texts;
    }
    v.tokenizer = meta.get_or<std::string>("tokenizer.ggml.model", "");
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
    if (meta.contains("tokenizer.ggml.token_type")) {
        const auto& types = meta.get<std::vector<int32_t>>("tokenizer.ggml.token_type");
        check(types.size() == std::size_t(n_vocab), errc::invalid_argument, [&] {
            return "model vocabulary: 'tokenizer.ggml.token_type' lists " + std::to_string(types.size()) +
                   " types, the model has " + std::to_string(n_vocab) + " tokens";
        });
        for (int32_t t : types)
            check(t >= 0 && t <= 6, errc::invalid_argument, [&] {
                return "model vocabulary: 'tokenizer.ggml.token_type' holds the type " + std::to_string(t) +
                       " (0 undefined .. 6 byte)";
            });
        v.token_type = types;
    }
    // Defaults where the file is silent, as llama.cpp takes them: SentencePiece vocabularies put
    // a space before the text and start with bos; of the byte-level ones, Llama 3's starts with bos.
    const bool spm = v.tokenizer == "llama";
    const std::string pre = meta.get_or<std::string>("tokenizer.ggml.pre", "");
    v.add_space_prefix = meta.get_or<bool>("tokenizer.ggml.add_space_prefix", spm);
    v.add_bos = v.bos >= 0 && meta.get_or<bool>("tokenizer.ggml.add_bos_token", spm || pre == "llama-bpe");
    // A file without an end-of-turn id: the control token chat formats end a turn with.
    if (v.eot < 0 && !v.token_text.empty())
        for (const char* t : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>"})
            for (std::size_t i = 0; i < v.token_text.size() && v.eot < 0; ++i)
                if (v.token_text[i] == t && int32_t(i) != v.eos &&
                    (v.token_type.empty() || text::token_kind(v.token_type[i]) == text::token_kind::control ||
                     text::token_kind(v.token_type[i]) == text::token_kind::user_defined))
                    v.eot = int32_t(i);
    return v;
}

// The vocabulary of a file's tokenizer.ggml.* keys alone (a vocabulary-only GGUF, say): as many
// tokens as tokenizer.ggml.tokens lists.
inline sample::vocabulary read_vocabulary(const gguf::metadata& meta) {
    const std::size_t n = meta.get<std::vector<std::string>>("tokenizer.ggml.tokens").size();
    check(n <= std::size_t(INT32_MAX), errc::invalid_argument,
          [&] { return "model vocabulary: 'tokenizer.ggml.tokens' lists " + std::to_string(n) + " tokens, more than int32 ids reach"; });
    return read_vocabulary(meta, int32_t(n));
}

// The SentencePiece tokenizer of a GGUF vocabulary (tokenizer.ggml.model = "llama"): its tokens,
// tokenizer.ggml.scores, add_space_prefix and unknown_token_id.
inline text::spm_tokenizer spm_tokenizer_of(const gguf::metadata& meta, const sample::vocabulary& v) {
    check(v.tokenizer == "llama" && !v.token_text.empty(), errc::invalid_argument, [&] {
        return "spm_tokenizer_of: the vocabulary's tokenizer is '" + v.tokenizer + "' with " +
               std::to_string(v.token_text.size()) + " token texts, not a SentencePiece ('llama') one";
    });
    const auto& scores = meta.get<std::vector<float>>("tokenizer.ggml.scores");
    check(scores.size() == v.token_text.size(), errc::invalid_argument, [&] {
        return "spm_tokenizer_of: 'tokenizer.ggml.scores' lists " + std::to_string(scores.size()) + " scores for " +
               std::to_string(v.token_text.size()) + " tokens";
    });
    int32_t unknown = -1;
    if (const gguf::value* id = meta.find("tokenizer.ggml.unknown_token_id"))
        if (const auto* u = std::get_if<uint32_t>(id); u && *u < v.token_text.size()) unknown = int32_t(*u);
    return text::spm_tokenizer(v.token_text, scores, v.add_space_prefix, unknown);
}

// The byte-level BPE tokenizer of a GGUF vocabulary (tokenizer.ggml.model = "gpt2"): its tokens,
// tokenizer.ggml.merges and the pre-tokenizer tokenizer.ggml.pre names.
inline text::bpe_tokenizer bpe_tokenizer_of(const gguf::metadata& meta, const sample::vocabulary& v) {
    check(v.tokenizer == "gpt2" && !v.token_text.empty(), errc::invalid_argument, [&] {
        return "bpe_tokenizer_of: the vocabulary's tokenizer is '" + v.tokenizer + "' with " +
               std::to_string(v.token_text.size()) + " token texts, not a byte-level BPE ('gpt2') one";
    });
    return text::bpe_tokenizer(v.token_text, meta.get<std::vector<std::string>>("tokenizer.ggml.merges"),
                               text::pre_tokenizer_named(meta.get_or<std::string>("tokenizer.ggml.pre", "default")));
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
inline std::string piece_text(std::string_view piece) { return text::spm_piece_text(piece); }

// The text of `ids` (text::detokenizer: either tokenizer family, control tokens left out, the
// SentencePiece leading space removed); ids outside the vocabulary raise llmrt::error.
inline std::string detokenize(const sample::vocabulary& vocab, std::span<const int32_t> ids) {
    return text::detokenizer(vocab).text(ids);
}

}  // namespace llmrt::model
