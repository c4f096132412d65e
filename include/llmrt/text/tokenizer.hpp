// Text -> token ids for any vocabulary llmrt reads (SentencePiece or byte-level BPE), with what a
// prompt needs around the tokenizer proper: bos first when the vocabulary asks for it,
// user-defined tokens taken from the text as themselves, and, on request, control tokens written
// in the text ("<|begin_of_text|>", "<s>") too, rather than as text. model::tokenizer_of builds one from a GGUF file's keys.
//
//   const text::tokenizer t = model::tokenizer_of(file.metadata(), model.vocab());
//   std::vector<int32_t> ids = t.encode("The quick brown fox");                 // bos + text
//   ids = t.encode("<|start_header_id|>user<|end_header_id|>", {.parse_special = true});
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "llmrt/sample/model.hpp"
#include "llmrt/text/bpe_tokenizer.hpp"
#include "llmrt/text/detokenizer.hpp"
#include "llmrt/text/spm_tokenizer.hpp"

namespace llmrt::text {

struct encode_options {
    bool add_bos = true;         // bos first, when the vocabulary adds one (vocabulary::add_bos)
    bool parse_special = false;  // control tokens' texts in the text are those tokens (user-defined ones always are)
};

class tokenizer {
public:
    tokenizer(sample::vocabulary vocab, std::variant<spm_tokenizer, bpe_tokenizer> impl)
        : vocab_(std::move(vocab)), impl_(std::move(impl)) {
        // Special tokens, longest text first: where two overlap the longer wins, as in llama.cpp.
        for (std::size_t i = 0; i < vocab_.token_type.size(); ++i) {
            const auto k = token_kind(vocab_.token_type[i]);
            if ((k == token_kind::control || k == token_kind::user_defined) && !vocab_.token_text[i].empty())
                special_.push_back(int32_t(i));
        }
        std::stable_sort(special_.begin(), special_.end(), [&](int32_t a, int32_t b) {
            return vocab_.token_text[std::size_t(a)].size() > vocab_.token_text[std::size_t(b)].size();
        });
    }

    const sample::vocabulary& vocab() const noexcept { return vocab_; }

    std::vector<int32_t> encode(std::string_view text, encode_options o = {}) const {
        std::vector<int32_t> out;
        if (o.add_bos && vocab_.add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
        bool after_special = true;  // SentencePiece: a space before the first text and after a special token
        for (const fragment& f : fragments(text, o.parse_special)) {
            if (f.token >= 0) {
                out.push_back(f.token);
                after_special = true;
                continue;
            }
            std::visit(
                [&](const auto& t) {
                    std::vector<int32_t> ids;
                    if constexpr (std::is_same_v<std::decay_t<decltype(t)>, spm_tokenizer>) ids = t.encode(f.text, after_special);
                    else ids = t.encode(f.text);
                    out.insert(out.end(), ids.begin(), ids.end());
                },
                impl_);
            after_special = false;
        }
        return out;
    }

private:
    struct fragment {
        std::string_view text;  // raw text (token < 0)
        int32_t token = -1;
    };

    // The text cut at the special tokens' texts: each special token in turn (longest first) splits
    // every raw fragment at each of its occurrences, left to right.
    std::vector<fragment> fragments(std::string_view text, bool parse_special) const {
        std::vector<fragment> parts;
        if (!text.empty()) parts.push_back({text, -1});
        for (int32_t id : special_) {
            // User-defined tokens (MPT's runs of spaces, say) are always taken from the text, as
            // llama.cpp takes them; control tokens only when asked.
            if (!parse_special && token_kind(vocab_.token_type[std::size_t(id)]) == token_kind::control) continue;
            const std::string& s = vocab_.token_text[std::size_t(id)];
            std::vector<fragment> next;
            for (const fragment& f : parts) {
                if (f.token >= 0) {
                    next.push_back(f);
                    continue;
                }
                std::size_t from = 0;
                for (std::size_t hit; (hit = f.text.find(s, from)) != std::string_view::npos; from = hit + s.size()) {
                    if (hit > from) next.push_back({f.text.substr(from, hit - from), -1});
                    next.push_back({{}, id});
                }
                if (from < f.text.size()) next.push_back({f.text.substr(from), -1});
            }
            parts = std::move(next);
        }
        return parts;
    }

    sample::vocabulary vocab_;
    std::variant<spm_tokenizer, bpe_tokenizer> impl_;
    std::vector<int32_t> special_;
};

}  // namespace llmrt::text
