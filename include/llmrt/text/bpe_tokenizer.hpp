// Text -> token ids for byte-level BPE vocabularies (tokenizer.ggml.model = "gpt2": Llama 3, Qwen2,
// ...), the ids llama.cpp gives:
//   * the text cut into words by the vocabulary's pre-tokenizer (text/pre_tokenizer.hpp);
//   * each word's bytes written in the byte-level alphabet (text/byte_level.hpp);
//   * Llama 3 only: a word that is a token as a whole is that token;
//   * otherwise its characters merged, repeatedly, at the adjacent pair of lowest merge rank
//     (tokenizer.ggml.merges, "left right" in rank order; the leftmost on a tie); each final
//     symbol is its token, or its bytes' one-byte tokens.
//
//   text::bpe_tokenizer t(vocab.token_text, merges, text::pre_tokenizer::llama3);
//   std::vector<int32_t> ids = t.encode("Hello world");   // no bos: see vocabulary::add_bos
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/text/byte_level.hpp"
#include "llmrt/text/merge.hpp"
#include "llmrt/text/pre_tokenizer.hpp"
#include "llmrt/text/utf8.hpp"

namespace llmrt::text {

class bpe_tokenizer {
public:
    bpe_tokenizer(const std::vector<std::string>& token_text, const std::vector<std::string>& merges, pre_tokenizer pre)
        : pre_(pre), whole_words_(pre == pre_tokenizer::llama3) {
        ids_.reserve(token_text.size());
        for (std::size_t i = 0; i < token_text.size(); ++i) ids_[token_text[i]] = int32_t(i);  // the last of equal texts
        ranks_.reserve(merges.size());
        for (std::size_t i = 0; i < merges.size(); ++i) {
            const std::size_t space = merges[i].find(' ', 1);
            check(space != std::string::npos, errc::invalid_argument, [&] {
                return "text::bpe_tokenizer: merge " + std::to_string(i) + " ('" + merges[i] +
                       "') is not two texts separated by a space";
            });
            ranks_.emplace(merges[i], int32_t(i));  // the first of equal merges
        }
    }

    // The ids of `text` (no bos, special tokens not parsed: their text is tokenized as text).
    std::vector<int32_t> encode(std::string_view text) const {
        std::vector<int32_t> out;
        for (std::string_view word : split_words(text, pre_)) encode_word(byte_level_encode(word), out);
        return out;
    }

    int32_t find(const std::string& piece) const {
        const auto it = ids_.find(piece);
        return it == ids_.end() ? -1 : it->second;
    }

private:
    using symbol = detail::merge_symbol;
    struct bigram {
        int32_t left = 0, right = 0, rank = 0;
        std::size_t n = 0;
    };
    // Lowest rank first; on a tie, the leftmost.
    struct lower_priority {
        bool operator()(const bigram& a, const bigram& b) const {
            return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
        }
    };

    int32_t rank(const std::string& w, const symbol& l, const symbol& r) const {
        const auto it = ranks_.find(w.substr(l.at, l.n) + ' ' + w.substr(r.at, r.n));
        return it == ranks_.end() ? -1 : it->second;
    }

    void encode_word(const std::string& w, std::vector<int32_t>& out) const {
        if (w.empty()) return;
        if (whole_words_)
            if (const int32_t id = find(w); id >= 0) {
                out.push_back(id);
                return;
            }
        std::vector<symbol> symbols = detail::character_symbols(w.size(), [&](std::size_t at) { return decode_utf8(w, at).bytes; });
        std::priority_queue<bigram, std::vector<bigram>, lower_priority> queue;
        detail::merge_pairs(symbols, queue, [&](int32_t left, int32_t right) {
            if (left < 0 || right < 0) return;
            const symbol& l = symbols[std::size_t(left)];
            const symbol& r = symbols[std::size_t(right)];
            if (const int32_t k = rank(w, l, r); k >= 0) queue.push({left, right, k, l.n + r.n});
        });
        for (int32_t i = 0; i >= 0; i = symbols[std::size_t(i)].next) {
            const symbol& s = symbols[std::size_t(i)];
            const std::string piece = w.substr(s.at, s.n);
            if (const int32_t id = find(piece); id >= 0) {
                out.push_back(id);
                continue;
            }
            for (std::size_t j = 0; j < piece.size();) {  // the characters' own tokens, where they have one
                const std::size_t n = decode_utf8(piece, j).bytes;
                if (const int32_t id = find(piece.substr(j, n)); id >= 0) out.push_back(id);
                j += n;
            }
        }
    }

    pre_tokenizer pre_;
    bool whole_words_ = false;
    std::unordered_map<std::string, int32_t> ids_;
    std::unordered_map<std::string, int32_t> ranks_;
};

}  // namespace llmrt::text
