// Text -> token ids for SentencePiece-style vocabularies (tokenizer.ggml.model = "llama": Llama 1
// and 2, Mistral, ...), the ids llama.cpp gives:
//   * a space before the text when the vocabulary says so (add_space_prefix), every ' ' as "▁";
//   * the text split into characters (a first byte's high bits give the length, as llama.cpp
//     reads it, so malformed UTF-8 is split the same way);
//   * repeatedly, of the adjacent pairs whose joined text is a token, the one of highest score
//     (the leftmost on a tie) merged into one symbol;
//   * each final symbol: its token, or the tokens of the two symbols it was merged from, or its
//     bytes as byte tokens "<0xNN>" (byte fallback).
//
//   text::spm_tokenizer t(vocab.token_text, scores, vocab.add_space_prefix);
//   std::vector<int32_t> ids = t.encode("Hello world");   // no bos: see vocabulary::add_bos
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstdint>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/text/merge.hpp"

namespace llmrt::text {

class spm_tokenizer {
public:
    // token_text and scores: one per token (tokenizer.ggml.tokens and .scores); unknown: the id
    // for a byte that has no byte token (tokenizer.ggml.unknown_token_id, -1: none).
    spm_tokenizer(const std::vector<std::string>& token_text, std::vector<float> scores, bool add_space_prefix,
                  int32_t unknown = -1)
        : scores_(std::move(scores)), add_space_prefix_(add_space_prefix), unknown_(unknown) {
        check(scores_.size() == token_text.size() && unknown_ < int32_t(token_text.size()), errc::invalid_argument, [&] {
            return "text::spm_tokenizer: " + std::to_string(token_text.size()) + " tokens with " +
                   std::to_string(scores_.size()) + " scores (one each), unknown id " + std::to_string(unknown_);
        });
        ids_.reserve(token_text.size());
        for (std::size_t i = 0; i < token_text.size(); ++i) ids_[token_text[i]] = int32_t(i);  // the last of equal texts, as llama.cpp
        static constexpr char hex[] = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) {
            const std::string name{'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            byte_token_[std::size_t(b)] = find(name);
            if (byte_token_[std::size_t(b)] < 0) byte_token_[std::size_t(b)] = find(std::string(1, char(b)));
        }
    }

    // The ids of `text` (no bos, special tokens not parsed: their text is tokenized as text).
    // space_prefix: false leaves out the space add_space_prefix puts first (text that follows a
    // special token in a prompt gets one; llama.cpp's rule).
    std::vector<int32_t> encode(std::string_view text, bool space_prefix = true) const {
        std::vector<int32_t> out;
        if (text.empty()) return out;
        std::string s;
        s.reserve(text.size() + 3);
        if (add_space_prefix_ && space_prefix) s += ' ';
        s.append(text);
        escape_spaces(s);
        session(*this, s).run(out);
        return out;
    }

    int32_t find(const std::string& piece) const {
        const auto it = ids_.find(piece);
        return it == ids_.end() ? -1 : it->second;
    }

private:
    static void escape_spaces(std::string& s) {
        std::string out;
        out.reserve(s.size() * 3);
        for (char c : s) {
            if (c == ' ') out += "\xE2\x96\x81";
            else out += c;
        }
        s = std::move(out);
    }

    // Bytes a character takes by its first byte's high four bits, as llama.cpp reads UTF-8.
    static std::size_t char_length(char first) {
        static constexpr uint8_t lengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
        return lengths[static_cast<unsigned char>(first) >> 4];
    }

    using symbol = detail::merge_symbol;
    struct bigram {
        int32_t left = 0, right = 0;
        float score = 0.0f;
        std::size_t n = 0;
    };
    // Highest score first; on a tie, the leftmost.
    struct lower_priority {
        bool operator()(const bigram& a, const bigram& b) const {
            return a.score < b.score || (a.score == b.score && a.left > b.left);
        }
    };

    class session {
    public:
        session(const spm_tokenizer& t, const std::string& s)
            : t_(t), s_(s), symbols_(detail::character_symbols(s.size(), [&](std::size_t at) {
                  return std::min(s.size() - at, char_length(s[at]));
              })) {}

        void run(std::vector<int32_t>& out) {
            detail::merge_pairs(symbols_, queue_, [&](int32_t left, int32_t right) { try_add(left, right); });
            for (int32_t i = 0; i >= 0 && i < int32_t(symbols_.size()); i = symbols_[std::size_t(i)].next)
                resegment(symbols_[std::size_t(i)], out);
        }

    private:
        std::string text_of(const symbol& sym) const { return s_.substr(sym.at, sym.n); }

        void try_add(int32_t left, int32_t right) {
            if (left < 0 || right < 0) return;
            const symbol& l = symbols_[std::size_t(left)];
            const std::string joined = s_.substr(l.at, l.n + symbols_[std::size_t(right)].n);
            const int32_t id = t_.find(joined);
            if (id < 0) return;
            queue_.push({left, right, t_.scores_[std::size_t(id)], joined.size()});
            merged_from_[joined] = {left, right};
        }

        void resegment(const symbol& sym, std::vector<int32_t>& out) const {
            const std::string text = text_of(sym);
            if (const int32_t id = t_.find(text); id >= 0) {
                out.push_back(id);
                return;
            }
            const auto from = merged_from_.find(text);
            if (from == merged_from_.end()) {
                for (char c : text) {
                    const int32_t id = t_.byte_token_[static_cast<unsigned char>(c)];
                    const int32_t used = id >= 0 ? id : t_.unknown_;
                    check(used >= 0, errc::invalid_argument, [&] {
                        return "text::spm_tokenizer: the byte " + std::to_string(int(static_cast<unsigned char>(c))) +
                               " has no byte token and the vocabulary no unknown token";
                    });
                    out.push_back(used);
                }
                return;
            }
            resegment(symbols_[std::size_t(from->second.first)], out);
            resegment(symbols_[std::size_t(from->second.second)], out);
        }

        const spm_tokenizer& t_;
        const std::string& s_;
        std::vector<symbol> symbols_;
        std::priority_queue<bigram, std::vector<bigram>, lower_priority> queue_;
        std::unordered_map<std::string, std::pair<int32_t, int32_t>> merged_from_;
    };

    std::unordered_map<std::string, int32_t> ids_;
    std::vector<float> scores_;
    bool add_space_prefix_ = true;
    int32_t unknown_ = -1;
    int32_t byte_token_[256] = {};
};

}  // namespace llmrt::text
