// UTF-8 as the tokenizers need it: code points out of bytes (invalid bytes kept, one at a time),
// code points back to bytes, and how much of a byte string ends in a complete character (what a
// stream of token texts may print now, holding back a character split between tokens).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmrt::text {

// Bytes a character takes, from its first byte (0: not a first byte: a continuation or invalid).
inline constexpr std::size_t utf8_length(unsigned char first) noexcept {
    if (first < 0x80) return 1;
    if (first >= 0xC2 && first <= 0xDF) return 2;
    if (first >= 0xE0 && first <= 0xEF) return 3;
    if (first >= 0xF0 && first <= 0xF4) return 4;
    return 0;
}

inline constexpr bool utf8_continuation(unsigned char b) noexcept { return (b & 0xC0) == 0x80; }

struct code_point {
    uint32_t value = 0;
    std::size_t bytes = 1;  // taken from the input
    bool valid = true;      // false: `value` is one byte that starts no valid character
};

// The character at s[at] (at < s.size()). A malformed or truncated sequence gives its first byte
// alone, not valid, so that every byte of any input is accounted for exactly once.
inline code_point decode_utf8(std::string_view s, std::size_t at) noexcept {
    const auto b0 = static_cast<unsigned char>(s[at]);
    const std::size_t n = utf8_length(b0);
    if (n == 1) return {b0, 1, true};
    if (n == 0 || at + n > s.size()) return {b0, 1, false};
    uint32_t v = b0 & (0xFFu >> (n + 1));
    for (std::size_t i = 1; i < n; ++i) {
        const auto b = static_cast<unsigned char>(s[at + i]);
        if (!utf8_continuation(b)) return {b0, 1, false};
        v = (v << 6) | (b & 0x3Fu);
    }
    // Overlong forms (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and values past U+10FFFF.
    const bool overlong = (n == 3 && v < 0x800) || (n == 4 && v < 0x10000);
    if (overlong || (v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF) return {b0, 1, false};
    return {v, n, true};
}

inline void append_utf8(std::string& out, uint32_t v) {
    if (v < 0x80) {
        out += char(v);
    } else if (v < 0x800) {
        out += char(0xC0 | (v >> 6));
        out += char(0x80 | (v & 0x3F));
    } else if (v < 0x10000) {
        out += char(0xE0 | (v >> 12));
        out += char(0x80 | ((v >> 6) & 0x3F));
        out += char(0x80 | (v & 0x3F));
    } else {
        out += char(0xF0 | (v >> 18));
        out += char(0x80 | ((v >> 12) & 0x3F));
        out += char(0x80 | ((v >> 6) & 0x3F));
        out += char(0x80 | (v & 0x3F));
    }
}

// The length of the longest prefix of s that does not end inside a character: all of s, unless
// its last bytes are the start of a valid character still missing bytes (at most 3 held back).
// Bytes that can never become valid are not held back.
inline std::size_t complete_utf8_prefix(std::string_view s) noexcept {
    const std::size_t n = s.size();
    for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto b = static_cast<unsigned char>(s[n - back]);
        if (utf8_continuation(b)) continue;
        const std::size_t need = utf8_length(b);
        return need > back ? n - back : n;  // a first byte whose character is not complete yet
    }
    return n;
}

}  // namespace llmrt::text
