// Token ids -> text, for the two tokenizer families of GGUF files: SentencePiece-style
// (tokenizer.ggml.model = "llama": "▁" for a space, "<0xNN>" byte tokens) and byte-level BPE
// ("gpt2": every byte written as one character, text/byte_level.hpp). Control tokens
// (<|begin_of_text|>, </s>, ...) give no text unless asked for; a file without token types
// treats every token as normal.
//
//   text::detokenizer d(model.vocab());
//   std::string all = d.text(ids);                   // with SentencePiece's leading space removed
//   text::utf8_stream out;                           // while generating:
//   std::fputs(out.push(d.piece(id)).c_str(), stdout);  // whole characters only, the rest held back
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "llmrt/core/error.hpp"
#include "llmrt/sample/model.hpp"
#include "llmrt/text/byte_level.hpp"
#include "llmrt/text/utf8.hpp"

namespace llmrt::text {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class token_kind : int32_t { undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

// The byte of a SentencePiece byte token "<0xNN>" (hex digits of either case), or -1.
inline int byte_token_value(std::string_view piece) noexcept {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
    const int hi = hex(piece[3]), lo = hex(piece[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// A SentencePiece text with every "▁" (U+2581) as a space.
inline std::string spm_spaces(std::string_view piece) {
    static constexpr std::string_view mark = "\xE2\x96\x81";
    std::string out;
    out.reserve(piece.size());
    for (std::size_t i = 0; i < piece.size();) {
        if (piece.substr(i, mark.size()) == mark) {
            out += ' ';
            i += mark.size();
        } else {
            out += piece[i++];
        }
    }
    return out;
}

// The bytes a SentencePiece token text stands for: "<0xNN>" the byte NN, else the text with every
// "▁" as a space.
inline std::string spm_piece_text(std::string_view piece) {
    const int b = byte_token_value(piece);
    return b >= 0 ? std::string(1, char(b)) : spm_spaces(piece);
}

class detokenizer {
public:
    enum class family { sentencepiece, byte_level, plain };

    explicit detokenizer(const sample::vocabulary& v) : vocab_(&v) {
        check(v.token_text.size() == std::size_t(v.size) && (v.token_type.empty() || v.token_type.size() == v.token_text.size()),
              errc::invalid_argument, [&] {
                  return "text::detokenizer: a vocabulary of " + std::to_string(v.size) + " tokens with " +
                         std::to_string(v.token_text.size()) + " texts and " + std::to_string(v.token_type.size()) +
                         " types (texts: one per token; types: one per token or none)";
              });
        family_ = v.tokenizer == "gpt2" ? family::byte_level : v.tokenizer == "llama" || v.tokenizer.empty() ? family::sentencepiece
                                                                                                              : family::plain;
    }

    family kind() const noexcept { return family_; }

    token_kind type(int32_t id) const {
        check_id(id);
        return vocab_->token_type.empty() ? token_kind::normal : token_kind(vocab_->token_type[std::size_t(id)]);
    }

    // The bytes token `id` stands for (a character may be split over several tokens' bytes).
    // special: control tokens give their text instead of nothing.
    std::string piece(int32_t id, bool special = false) const {
        const token_kind k = type(id);
        const std::string& t = vocab_->token_text[std::size_t(id)];
        switch (k) {
            case token_kind::control: return special ? t : std::string();
            case token_kind::unused: return std::string();
            case token_kind::user_defined: return t;
            case token_kind::unknown:
                return family_ == family::sentencepiece ? std::string("\xE2\x96\x85") : t;  // U+2585, as llama.cpp prints it
            case token_kind::byte:
            case token_kind::normal:
            case token_kind::undefined: break;
        }
        switch (family_) {
            case family::sentencepiece: return spm_piece_text(t);
            case family::byte_level: return byte_level_decode(t);
            case family::plain: break;
        }
        return t;
    }

    // The text of `ids`: their pieces joined, less the space SentencePiece put before the text
    // (add_space_prefix) when the text starts with one.
    std::string text(std::span<const int32_t> ids, bool special = false) const {
        std::string out;
        for (int32_t id : ids) out += piece(id, special);
        if (vocab_->add_space_prefix && family_ == family::sentencepiece && !out.empty() && out[0] == ' ') out.erase(0, 1);
        return out;
    }

private:
    void check_id(int32_t id) const {
        check(id >= 0 && id < vocab_->size, errc::invalid_argument, [&] {
            return "text::detokenizer: token " + std::to_string(id) + " is outside the vocabulary of " +
                   std::to_string(vocab_->size) + " tokens";
        });
    }

    const sample::vocabulary* vocab_;
    family family_ = family::sentencepiece;
};

// Bytes arriving piece by piece, given back as whole UTF-8 characters: push returns what can be
// printed now (a character split between tokens waits for its last byte), flush the rest.
class utf8_stream {
public:
    std::string push(std::string_view bytes) {
        pending_.append(bytes);
        const std::size_t ready = complete_utf8_prefix(pending_);
        std::string out = pending_.substr(0, ready);
        pending_.erase(0, ready);
        return out;
    }
    std::string flush() { return std::exchange(pending_, std::string()); }
    std::size_t held_back() const noexcept { return pending_.size(); }

private:
    std::string pending_;
};

}  // namespace llmrt::text
