// The merge loop both tokenizers share (text/spm_tokenizer.hpp, text/bpe_tokenizer.hpp): adjacent
// symbols of a word joined pair by pair in the order a priority queue gives (best score or lowest
// rank first, the leftmost on a tie), pairs an earlier merge outdated skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmrt::text::detail {

struct merge_symbol {
    int32_t prev = -1, next = -1;
    std::size_t at = 0, n = 0;  // the symbol's bytes in the word (n = 0: merged away)
};

// The word's characters as symbols, one each; `length(at)` gives the bytes of the one at `at`.
template <class Length>
std::vector<merge_symbol> character_symbols(std::size_t bytes, Length&& length) {
    std::vector<merge_symbol> symbols;
    for (std::size_t at = 0; at < bytes;) {
        const std::size_t n = length(at);
        symbols.push_back({int32_t(symbols.size()) - 1, at + n < bytes ? int32_t(symbols.size()) + 1 : -1, at, n});
        at += n;
    }
    return symbols;
}

// Queue elements have left, right (symbol indices) and n (their joined bytes when queued);
// try_add(left, right) queues the pair when it may merge (either may be -1: none).
template <class Queue, class TryAdd>
void merge_pairs(std::vector<merge_symbol>& symbols, Queue& queue, TryAdd&& try_add) {
    for (int32_t i = 1; i < int32_t(symbols.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
        const auto b = queue.top();
        queue.pop();
        merge_symbol& l = symbols[std::size_t(b.left)];
        merge_symbol& r = symbols[std::size_t(b.right)];
        if (l.n == 0 || r.n == 0 || l.next != b.right || l.n + r.n != b.n) continue;  // outdated
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[std::size_t(r.next)].prev = b.left;
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }
}

}  // namespace llmrt::text::detail
