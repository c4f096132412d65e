// The byte-to-character map of byte-level BPE vocabularies (GPT-2 and its descendants: Llama 3,
// Qwen, ...; tokenizer.ggml.model = "gpt2"): every byte is written as one printable character,
// so that token texts never hold spaces, control bytes or broken UTF-8. Bytes '!'..'~',
// 0xA1..0xAC and 0xAE..0xFF stand for themselves (as code points); the other 68 bytes (0x00..0x20,
// 0x7F..0xA0, 0xAD) become U+0100, U+0101, ... in increasing byte order. "Ġ" (U+0120) is the space.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "llmrt/text/utf8.hpp"

namespace llmrt::text {

namespace detail {

inline constexpr bool byte_stands_for_itself(unsigned b) noexcept {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct byte_level_tables {
    std::array<uint16_t, 256> char_of{};   // byte -> code point
    std::array<int16_t, 512> byte_of{};    // code point (below 512) -> byte, or -1
    constexpr byte_level_tables() {
        for (auto& b : byte_of) b = -1;
        unsigned next = 256;
        for (unsigned b = 0; b < 256; ++b) {
            char_of[b] = uint16_t(byte_stands_for_itself(b) ? b : next++);
            byte_of[char_of[b]] = int16_t(b);
        }
    }
};

inline constexpr byte_level_tables byte_level{};
static_assert(byte_level.char_of[' '] == 0x120 && byte_level.char_of['\n'] == 0x10A,
              "the byte-level map must give GPT-2's characters: space as U+0120, newline as U+010A");

}  // namespace detail

// The character that stands for byte b.
inline constexpr uint32_t byte_level_char(unsigned char b) noexcept { return detail::byte_level.char_of[b]; }

// Bytes -> the token-text alphabet (what a pre-tokenized piece becomes before the merges).
inline std::string byte_level_encode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) append_utf8(out, byte_level_char(static_cast<unsigned char>(c)));
    return out;
}

// A token text -> the bytes it stands for. A character outside the map (a vocabulary that breaks
// the convention) is kept as its own UTF-8 bytes.
inline std::string byte_level_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const code_point c = decode_utf8(text, i);
        if (c.valid && c.value < 512 && detail::byte_level.byte_of[c.value] >= 0)
            out += char(detail::byte_level.byte_of[c.value]);
        else
            out.append(text.substr(i, c.bytes));
        i += c.bytes;
    }
    return out;
}

}  // namespace llmrt::text
