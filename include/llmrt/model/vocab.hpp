// A GGUF model's vocabulary (tokenizer.ggml.*) and the text of generated tokens.
//
// Pieces are joined as SentencePiece writes them: "▁" (U+2581) stands for a space and a piece
// "<0xNN>" for the byte NN, so multi-byte characters split over byte tokens come back whole.
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
    return v;
}

// The bytes one piece stands for: "<0xNN>" -> the byte NN, every "▁" -> ' ', else the piece.
inline std::string piece_text(std::string_view piece) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    if (piece.size() == 6 && piece.substr(0, 3) == "<0x" && piece[5] == '>' && hex(piece[3]) >= 0 && hex(piece[4]) >= 0)
        return std::string(1, char(hex(piece[3]) * 16 + hex(piece[4])));
    static constexpr std::string_view space_mark = "\xE2\x96\x81";  // U+2581, UTF-8
    std::string out;
    for (std::size_t i = 0; i < piece.size();) {
        if (piece.substr(i, space_mark.size()) == space_mark) {
            out += ' ';
            i += space_mark.size();
        } else {
            out += piece[i++];
        }
    }
    return out;
}

// The text of `ids`, pieces joined; ids outside the vocabulary raise llmrt::error.
inline std::string detokenize(const sample::vocabulary& vocab, std::span<const int32_t> ids) {
    std::string text;
    for (int32_t id : ids) {
        check(id >= 0 && std::size_t(id) < vocab.token_text.size(), errc::invalid_argument, [&] {
            return "detokenize: token " + std::to_string(id) + " is outside the vocabulary of " +
                   std::to_string(vocab.token_text.size()) + " texts";
        });
        text += piece_text(vocab.token_text[std::size_t(id)]);
    }
    return text;
}

}  // namespace llmrt::model
