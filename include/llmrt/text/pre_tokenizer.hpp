// Pre-tokenizers of byte-level BPE vocabularies: the text cut into words before any merge, by the
// patterns tokenizer.ggml.pre names (llama.cpp's patterns, written here as hand-made matchers over
// code points, Unicode classes included):
//
//   llama-bpe (Llama 3)   (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])
//                         |[^\r\n\p{L}\p{N}]?\p{L}+ |\p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]*
//                         |\s*[\r\n]+ |\s+(?!\S) |\s+
//   qwen2                 the same with \p{N} one digit at a time
//   gpt-2, mpt            GPT2 = 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
//   starcoder, refact,    \p{N}, then GPT2
//   command-r
//   falcon                [\p{P}\$\+<=>\^~\|`]+, then GPT2, then [0-9][0-9][0-9]
//   deepseek-coder        [\r\n], then \s?\p{L}+, then \s?\p{P}+, then [一-龥ࠀ-一가-퟿]+, then \p{N}
//   deepseek-llm          [\r\n], then \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+ (deepseek_llm_letters), then
//                         \s?[!-/:-~！-／：-～‘-‟　-。]+, then \s+$, then [一-龥ࠀ-一가-퟿]+, then \p{N}+
//
// Where a vocabulary has several patterns, each cuts every word the ones before it left, the
// text between its matches staying words of their own (llama.cpp's rule). At each position the
// alternatives are tried in order, the first that matches taking its longest match, as a
// backtracking regex engine would.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/text/unicode.hpp"
#include "llmrt/text/utf8.hpp"

namespace llmrt::text {

enum class pre_tokenizer { llama3, qwen2, gpt2, starcoder, falcon, deepseek_coder, deepseek_llm };

// The pre-tokenizer tokenizer.ggml.pre names; llmrt::error (unsupported) for the others.
inline pre_tokenizer pre_tokenizer_named(std::string_view name) {
    if (name == "llama-bpe" || name == "llama3") return pre_tokenizer::llama3;
    if (name == "qwen2") return pre_tokenizer::qwen2;
    if (name == "gpt-2" || name == "mpt" || name == "gpt-neox") return pre_tokenizer::gpt2;
    if (name == "starcoder" || name == "refact" || name == "command-r") return pre_tokenizer::starcoder;
    if (name == "falcon") return pre_tokenizer::falcon;
    if (name == "deepseek-coder") return pre_tokenizer::deepseek_coder;
    if (name == "deepseek-llm") return pre_tokenizer::deepseek_llm;
    throw error(errc::unsupported_type, "text: the pre-tokenizer '" + std::string(name) +
                                            "' (tokenizer.ggml.pre) is not supported; llmrt has llama-bpe, qwen2, "
                                            "gpt-2, mpt, gpt-neox, starcoder, refact, command-r, falcon, deepseek-coder and deepseek-llm");
}

namespace detail {

struct cpt {
    uint32_t value = 0;
    std::size_t at = 0, bytes = 0;  // where it lies in the text
};

// The characters of `text`; a byte that starts no valid character is one of its own, of no class.
inline std::vector<cpt> code_points(std::string_view text) {
    std::vector<cpt> out;
    for (std::size_t i = 0; i < text.size();) {
        const code_point c = decode_utf8(text, i);
        out.push_back({c.valid ? c.value : 0xFFFFFFFFu, i, c.bytes});
        i += c.bytes;
    }
    return out;
}

inline bool ascii_is(uint32_t c, char lower) { return c == uint32_t(lower) || c == uint32_t(lower - 'a' + 'A'); }

// A text as characters, with the classes the patterns test; past either end a position is in
// no class.
class coded_text {
protected:
    explicit coded_text(std::string_view text) : text_(text), cpts_(code_points(text)) {}

    // The text of characters [from, to).
    std::string_view slice(std::size_t from, std::size_t to) const {
        const std::size_t a = cpts_[from].at, b = to < size() ? cpts_[to].at : text_.size();
        return text_.substr(a, b - a);
    }
    std::size_t size() const noexcept { return cpts_.size(); }
    uint32_t at(std::size_t i) const { return i < size() ? cpts_[i].value : 0xFFFFFFFEu; }
    bool in(std::size_t i) const { return i < size(); }
    bool letter(std::size_t i) const { return in(i) && unicode::is_letter(at(i)); }
    bool number(std::size_t i) const { return in(i) && unicode::is_number(at(i)); }
    bool space(std::size_t i) const { return in(i) && unicode::is_whitespace(at(i)); }
    bool punct(std::size_t i) const { return in(i) && unicode::is_punctuation(at(i)); }
    bool newline(std::size_t i) const { return at(i) == '\r' || at(i) == '\n'; }
    bool other(std::size_t i) const { return in(i) && !space(i) && !letter(i) && !number(i); }

private:
    std::string_view text_;
    std::vector<cpt> cpts_;
};

class word_splitter : coded_text {
public:
    word_splitter(std::string_view text, pre_tokenizer kind) : coded_text(text), kind_(kind) {}

    std::vector<std::string_view> words() {
        std::vector<std::string_view> out;
        for (std::size_t pos = 0; pos < size();) {
            const std::size_t end = match(pos);
            out.push_back(slice(pos, end));
            pos = end;
        }
        return out;
    }

private:

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
        if (run == size() || run - pos == 1) return run == size() ? run : pos + 1;
        return run - 1;
    }

    pre_tokenizer kind_;
};

}  // namespace detail

namespace detail {

// One pattern of a list, matched inside one word.
enum class pattern {
    gpt2, number, numbers, falcon_punctuation, three_digits, newline, space_letters, space_punctuation, cjk,
    deepseek_letters, deepseek_punctuation, trailing_space
};

// The letters of DeepSeek LLM's pattern, [A-Za-zµÀ-ÖØ-öø-ƺ...] as llama.cpp writes it, as ranges.
inline constexpr unicode::code_point_range deepseek_llm_letters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x376}, {0x377, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1},
    {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5},
    {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A},
    {0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4},
    {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D},
    {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139},
    {0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2183}, {0x2184, 0x2184}, {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF2}, {0x2CF3, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
    {0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB}, {0x10C80, 0x10CB2},
    {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// Its punctuation: [!-/:-~！-／：-～‘-‟　-。].
inline constexpr unicode::code_point_range deepseek_llm_punctuation[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0x2018, 0x201F}, {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
};

class pattern_matcher : coded_text {
public:
    pattern_matcher(std::string_view word, pattern p) : coded_text(word), p_(p) {}

    // The word cut at this pattern's matches: matches and the text between them, in order.
    void split(std::vector<std::string_view>& out) const {
        std::size_t gap = 0;  // where the text not matched yet starts
        for (std::size_t pos = 0; pos < size();) {
            const std::size_t end = match(pos);
            if (end == pos) {
                ++pos;
                continue;
            }
            if (gap < pos) out.push_back(slice(gap, pos));
            out.push_back(slice(pos, end));
            pos = gap = end;
        }
        if (gap < size()) out.push_back(slice(gap, size()));
    }

private:
    template <class Class>
    std::size_t run(std::size_t p, Class c) const {
        while (c(p)) ++p;
        return p;
    }
    // ' ?X+' : an optional space, then a run of class X (pos: no match).
    template <class Class>
    std::size_t space_then(std::size_t pos, Class c) const {
        const std::size_t p = at(pos) == ' ' && c(pos + 1) ? pos + 1 : pos;
        return c(p) ? run(p, c) : pos;
    }

    // The end of the match at pos, or pos when there is none.
    std::size_t match(std::size_t pos) const {
        switch (p_) {
            case pattern::gpt2: {
                if (at(pos) == '\'') {
                    const uint32_t a = at(pos + 1), b = at(pos + 2);
                    if (a == 's' || a == 't') return pos + 2;
                    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e')) return pos + 3;
                    if (a == 'm') return pos + 2;
                    if (a == 'l' && b == 'l') return pos + 3;
                    if (a == 'd') return pos + 2;
                }
                for (auto c : {+[](const pattern_matcher& m, std::size_t i) { return m.letter(i); },
                               +[](const pattern_matcher& m, std::size_t i) { return m.number(i); },
                               +[](const pattern_matcher& m, std::size_t i) { return m.other(i); }}) {
                    const std::size_t end = space_then(pos, [&](std::size_t i) { return c(*this, i); });
                    if (end > pos) return end;
                }
                // \s+(?!\S): a whitespace run that ends the word, else all of it but its last
                const std::size_t end = run(pos, [&](std::size_t i) { return space(i); });
                if (end == pos) return pos;
                if (end == size()) return end;
                return end - pos >= 2 ? end - 1 : pos;
            }
            case pattern::number: return number(pos) ? pos + 1 : pos;
            case pattern::numbers: return run(pos, [&](std::size_t i) { return number(i); });
            case pattern::deepseek_letters:
            case pattern::deepseek_punctuation: {
                auto c = [&](std::size_t i) {
                    return in(i) && (p_ == pattern::deepseek_letters ? unicode::detail::in_ranges(deepseek_llm_letters, at(i))
                                                                      : unicode::detail::in_ranges(deepseek_llm_punctuation, at(i)));
                };
                const std::size_t p = space(pos) && c(pos + 1) ? pos + 1 : pos;
                return c(p) ? run(p, c) : pos;
            }
            case pattern::trailing_space: {  // \s+$
                const std::size_t end = run(pos, [&](std::size_t i) { return space(i); });
                return end == size() ? end : pos;
            }
            case pattern::falcon_punctuation:
                return run(pos, [&](std::size_t i) {
                    const uint32_t c = at(i);
                    return punct(i) || (in(i) && (c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' ||
                                                  c == '~' || c == '|' || c == '`'));
                });
            case pattern::three_digits: {
                auto digit = [&](std::size_t i) { return at(i) >= '0' && at(i) <= '9'; };
                return digit(pos) && digit(pos + 1) && digit(pos + 2) ? pos + 3 : pos;
            }
            case pattern::newline: return at(pos) == '\r' || at(pos) == '\n' ? pos + 1 : pos;
            case pattern::space_letters:
            case pattern::space_punctuation: {
                auto c = [&](std::size_t i) { return p_ == pattern::space_letters ? letter(i) : punct(i); };
                const std::size_t p = space(pos) && c(pos + 1) ? pos + 1 : pos;
                return c(p) ? run(p, c) : pos;
            }
            case pattern::cjk:  // 一-龥, ࠀ-一, 가-퟿
                return run(pos, [&](std::size_t i) {
                    const uint32_t c = at(i);
                    return in(i) && ((c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x0800 && c <= 0x4E00) || (c >= 0xAC00 && c <= 0xD7FF));
                });
        }
        return pos;
    }

    pattern p_;
};

inline std::vector<pattern> patterns_of(pre_tokenizer kind) {
    switch (kind) {
        case pre_tokenizer::gpt2: return {pattern::gpt2};
        case pre_tokenizer::starcoder: return {pattern::number, pattern::gpt2};
        case pre_tokenizer::falcon: return {pattern::falcon_punctuation, pattern::gpt2, pattern::three_digits};
        case pre_tokenizer::deepseek_coder:
            return {pattern::newline, pattern::space_letters, pattern::space_punctuation, pattern::cjk, pattern::number};
        case pre_tokenizer::deepseek_llm:
            return {pattern::newline, pattern::deepseek_letters, pattern::deepseek_punctuation, pattern::trailing_space,
                    pattern::cjk, pattern::numbers};
        case pre_tokenizer::llama3:
        case pre_tokenizer::qwen2: break;
    }
    return {};
}

}  // namespace detail

// The words of `text` (views into it), in order; together they are the whole text.
inline std::vector<std::string_view> split_words(std::string_view text, pre_tokenizer kind) {
    if (kind == pre_tokenizer::llama3 || kind == pre_tokenizer::qwen2) return detail::word_splitter(text, kind).words();
    std::vector<std::string_view> words;
    if (!text.empty()) words.push_back(text);
    for (detail::pattern p : detail::patterns_of(kind)) {
        std::vector<std::string_view> next;
        for (std::string_view w : words) detail::pattern_matcher(w, p).split(next);
        words = std::move(next);
    }
    return words;
}

}  // namespace llmrt::text
