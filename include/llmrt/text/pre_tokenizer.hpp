// Pre-tokenizers of byte-level BPE vocabularies: the text cut into words before any merge, by the
// pattern tokenizer.ggml.pre names (the patterns are llama.cpp's, written here as hand-made
// matchers over code points, Unicode classes included):
//
//   llama-bpe (Llama 3)   (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])
//                         |[^\r\n\p{L}\p{N}]?\p{L}+ |\p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]*
//                         |\s*[\r\n]+ |\s+(?!\S) |\s+
//   qwen2                 the same with \p{N} one digit at a time
//
// The alternatives are tried in that order at each position, the first that matches taking its
// longest match, as a backtracking regex engine would.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/text/unicode.hpp"
#include "llmrt/text/utf8.hpp"

namespace llmrt::text {

enum class pre_tokenizer { llama3, qwen2 };

// The pre-tokenizer tokenizer.ggml.pre names; llmrt::error (unsupported) for the others.
inline pre_tokenizer pre_tokenizer_named(std::string_view name) {
    if (name == "llama-bpe" || name == "llama3") return pre_tokenizer::llama3;
    if (name == "qwen2") return pre_tokenizer::qwen2;
    throw error(errc::unsupported_type, "text: the pre-tokenizer '" + std::string(name) +
                                            "' (tokenizer.ggml.pre) is not supported; llmrt has llama-bpe and qwen2");
}

namespace detail {

struct cpt {
    uint32_t value = 0;
    std::size_t at = 0, bytes = 0;  // where it lies in the text
};

inline bool ascii_is(uint32_t c, char lower) { return c == uint32_t(lower) || c == uint32_t(lower - 'a' + 'A'); }

class word_splitter {
public:
    word_splitter(std::string_view text, pre_tokenizer kind) : text_(text), kind_(kind) {
        for (std::size_t i = 0; i < text.size();) {
            const code_point c = decode_utf8(text, i);
            // A byte that starts no valid character is a character of its own, of no class.
            cpts_.push_back({c.valid ? c.value : 0xFFFFFFFFu, i, c.bytes});
            i += c.bytes;
        }
    }

    std::vector<std::string_view> words() {
        std::vector<std::string_view> out;
        for (std::size_t pos = 0; pos < cpts_.size();) {
            const std::size_t end = match(pos);
            const std::size_t from = cpts_[pos].at, to = end < cpts_.size() ? cpts_[end].at : text_.size();
            out.push_back(text_.substr(from, to - from));
            pos = end;
        }
        return out;
    }

private:
    uint32_t at(std::size_t i) const { return i < cpts_.size() ? cpts_[i].value : 0xFFFFFFFEu; }
    bool letter(std::size_t i) const { return i < cpts_.size() && unicode::is_letter(at(i)); }
    bool number(std::size_t i) const { return i < cpts_.size() && unicode::is_number(at(i)); }
    bool space(std::size_t i) const { return i < cpts_.size() && unicode::is_whitespace(at(i)); }
    bool newline(std::size_t i) const { return at(i) == '\r' || at(i) == '\n'; }
    bool other(std::size_t i) const { return i < cpts_.size() && !space(i) && !letter(i) && !number(i); }

    // The end of the match at pos (> pos).
    std::size_t match(std::size_t pos) const {
        // '[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]
        if (at(pos) == '\'') {
            const uint32_t a = at(pos + 1), b = at(pos + 2);
            if (ascii_is(a, 's') || ascii_is(a, 't') || ascii_is(a, 'm') || ascii_is(a, 'd')) return pos + 2;
            if ((ascii_is(a, 'r') && ascii_is(b, 'e')) || (ascii_is(a, 'v') && ascii_is(b, 'e')) ||
                (ascii_is(a, 'l') && ascii_is(b, 'l')))
                return pos + 3;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        {
            std::size_t p = pos;
            if (!letter(p) && !newline(p) && !number(p)) ++p;
            if (letter(p)) {
                while (letter(p)) ++p;
                return p;
            }
        }
        // \p{N}{1,3} (qwen2: \p{N})
        if (number(pos)) {
            const std::size_t most = kind_ == pre_tokenizer::qwen2 ? 1 : 3;
            std::size_t p = pos;
            while (p - pos < most && number(p)) ++p;
            return p;
        }
        // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        {
            std::size_t p = pos;
            if (at(p) == ' ' && other(p + 1)) ++p;
            if (other(p)) {
                while (other(p)) ++p;
                while (newline(p)) ++p;
                return p;
            }
        }
        // The rest starts with whitespace: its run is [pos, run).
        std::size_t run = pos;
        while (space(run)) ++run;
        if (run == pos) return pos + 1;  // unreachable: every character is in some class above
        // \s*[\r\n]+ : up to the run's last newline
        for (std::size_t p = run; p > pos; --p)
            if (newline(p - 1)) return p;
        // \s+(?!\S) : all of a run that ends the text, else all but its last character
        if (run == cpts_.size() || run - pos == 1) return run == cpts_.size() ? run : pos + 1;
        return run - 1;
    }

    std::string_view text_;
    pre_tokenizer kind_;
    std::vector<cpt> cpts_;
};

}  // namespace detail

// The words of `text` (views into it), in order; together they are the whole text.
inline std::vector<std::string_view> split_words(std::string_view text, pre_tokenizer kind) {
    return detail::word_splitter(text, kind).words();
}

}  // namespace llmrt::text
