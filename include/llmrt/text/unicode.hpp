// The character classes the pre-tokenizers' patterns use: \p{L} (letters), \p{N} (numbers),
// \p{P} (punctuation) and \s (Unicode's White_Space property), by binary search over text/unicode_tables.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "llmrt/text/unicode_tables.hpp"

namespace llmrt::text::unicode {

namespace detail {
template <std::size_t N>
constexpr bool in_ranges(const code_point_range (&ranges)[N], uint32_t cp) noexcept {
    const auto* it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                      [](uint32_t v, const code_point_range& r) { return v < r.first; });
    return it != std::begin(ranges) && cp <= std::prev(it)->last;
}
}  // namespace detail

constexpr bool is_letter(uint32_t cp) noexcept { return detail::in_ranges(letter_ranges, cp); }
constexpr bool is_number(uint32_t cp) noexcept { return detail::in_ranges(number_ranges, cp); }
constexpr bool is_punctuation(uint32_t cp) noexcept { return detail::in_ranges(punctuation_ranges, cp); }

// White_Space: U+0009..000D, U+0020, U+0085, U+00A0, U+1680, U+2000..200A, U+2028, U+2029,
// U+202F, U+205F, U+3000.
constexpr bool is_whitespace(uint32_t cp) noexcept {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static_assert(is_letter('a') && is_letter(0x00E9) && is_letter(0x4E2D) && !is_letter('1') && !is_letter(' '),
              "letters: a, é and 中 are; 1 and space are not");
static_assert(is_number('7') && is_number(0x0663) && is_number(0x00BD) && !is_number('x'),
              "numbers: 7, Arabic-Indic 3 and ½ are; x is not");
static_assert(is_punctuation('!') && is_punctuation(0x3002) && !is_punctuation('$') && !is_punctuation('a'),
              "punctuation: ! and the ideographic full stop are; $ (a symbol) and a are not");

}  // namespace llmrt::text::unicode
