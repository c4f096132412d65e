// What the speculative layer needs from a model, and the vocabulary check for draft models.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"

namespace llmrt::sample {

// A model's vocabulary, as far as drafting compatibility goes. Ids −1 mean "none".
struct vocabulary {
    int32_t size = 0;
    int32_t bos = -1;
    int32_t eos = -1;
    int32_t eot = -1;                     // end of turn (tokenizer.ggml.eot_token_id)
    int32_t eom = -1;                     // end of message (tokenizer.ggml.eom_token_id)
    std::string tokenizer;                // the tokenizer kind ("llama", "gpt2", ...); empty: unknown
    std::vector<std::string> token_text;  // `size` entries, or empty when the texts are unknown
    // tokenizer.ggml.token_type per token (text::token_kind: 1 normal, 3 control, 6 byte, ...), or
    // empty when the file has none.
    std::vector<int32_t> token_type;
    bool add_bos = false;           // whether a prompt starts with bos (tokenizer.ggml.add_bos_token)
    bool add_space_prefix = false;  // SentencePiece: a space before the text, removed when detokenizing

    // Whether generation ends at `id`: eos, eot or eom.
    bool ends_generation(int32_t id) const noexcept { return id >= 0 && (id == eos || id == eot || id == eom); }
};

// A causal language model with a KV cache, as the sampler layer drives it.
//   vocab(), vocab_size(): its vocabulary; every logits row holds vocab_size() floats.
//   context_length():      the most tokens its cache can hold.
//   cache_length():        the tokens its cache holds now (positions 0 .. cache_length() − 1).
//   eval(tokens, first_position, logits_out): appends `tokens` at positions first_position, ...
//       (first_position must equal cache_length()) and writes one row of logits per token,
//       row i predicting the token after tokens[i]; logits_out is tokens.size() × vocab_size()
//       floats, or empty when the caller needs no logits (prefill).
//   truncate(n):           drops the cache back to its first n tokens (n ≤ cache_length()).
// Bad calls raise llmrt::error and leave the cache as it was (an eval that does not fit the
// context commits none of its tokens). The llama model and the test doubles satisfy it.
template <class M>
concept causal_model = requires(M& m, const M& cm, std::span<const int32_t> tokens, int32_t position,
                                std::span<float> logits_out, int32_t n) {
    { cm.vocab() } -> std::convertible_to<const vocabulary&>;
    { cm.vocab_size() } -> std::convertible_to<int32_t>;
    { cm.context_length() } -> std::convertible_to<int32_t>;
    { cm.cache_length() } -> std::convertible_to<int32_t>;
    m.eval(tokens, position, logits_out);
    m.truncate(n);
};

// A row's top probability, softmax(logits) at its largest entry = 1 / Σ exp(l − max) (0 for a row
// with no finite maximum): what the model drafter's p_min compares, from rows it reads, and what
// the test doubles give as top_out.
inline float top1_probability(std::span<const float> logits) {
    float m = -std::numeric_limits<float>::infinity();
    for (float l : logits) m = std::max(m, l);
    if (!(m > -std::numeric_limits<float>::infinity())) return 0.0f;
    double sum = 0.0;
    for (float l : logits) sum += std::exp(double(l) - double(m));
    return float(1.0 / sum);
}

// A causal_model that can also reduce each row of logits on its device to what greedy decoding
// reads, so that the logits (a vocabulary of floats per token) never travel:
//   eval_greedy(tokens, first_position, ids_out, top_out): as eval, but ids_out[i] receives row
//       i's argmax (the first index of its largest logit) and, when top_out is not empty,
//       top_out[i] softmax's value there (float(1 / Σ exp(l − max))). ids_out holds tokens.size()
//       ids; top_out tokens.size() floats, or none.
//   has_top_probability(): whether eval_greedy can fill top_out.
// The generator and the model drafter use it when their sampler chain picks the argmax (the
// drafter, with a p_min threshold, only where the model has top probabilities).
template <class M>
concept greedy_model = causal_model<M> && requires(M& m, const M& cm, std::span<const int32_t> tokens, int32_t position,
                                                   std::span<int32_t> ids_out, std::span<float> top_out) {
    m.eval_greedy(tokens, position, ids_out, top_out);
    { cm.has_top_probability() } -> std::convertible_to<bool>;
};

// A causal_model that can also pick each row's best candidates on its device, so that a sampler
// chain starting with top-k (sampler_chain::leading_top_k() <= top_candidates()) reads k ids and
// logits per token instead of the vocabulary's logits:
//   top_candidates(): how many candidates eval_top gives per row (0: none).
//   eval_top(tokens, first_position, ids_out, logits_out): as eval, but row i's top_candidates()
//       largest logits and their ids, best first in (logit descending, id ascending) order, go to
//       ids_out / logits_out[i · top_candidates() ...]; both hold tokens.size() · top_candidates().
// A NaN logit outside the candidates goes unnoticed, as it does in eval_greedy's argmax.
template <class M>
concept top_k_model = causal_model<M> && requires(M& m, const M& cm, std::span<const int32_t> tokens, int32_t position,
                                                  std::span<int32_t> ids_out, std::span<float> logits_out) {
    { cm.top_candidates() } -> std::convertible_to<int32_t>;
    m.eval_top(tokens, position, ids_out, logits_out);
};

// A top_k_model whose eval_top can also give each row's top probability (as eval_greedy's top_out,
// when has_top_probability()): eval_top(tokens, first_position, ids_out, logits_out, top_out), with
// top_out tokens.size() floats or none. The model drafter's p_min threshold on sampled drafts.
template <class M>
concept top_k_probability_model = top_k_model<M> && requires(M& m, const M& cm, std::span<const int32_t> tokens,
                                                             int32_t position, std::span<int32_t> ids_out,
                                                             std::span<float> logits_out, std::span<float> top_out) {
    m.eval_top(tokens, position, ids_out, logits_out, top_out);
    { cm.has_top_probability() } -> std::convertible_to<bool>;
};

// Whether model m can serve chain's rows as top candidates (top_k_model with enough of them, and
// a top-k that narrows the vocabulary).
template <class M>
bool reads_top_candidates(const M& m, int32_t leading_top_k) {
    if constexpr (top_k_model<M>)
        return leading_top_k > 0 && leading_top_k < m.vocab_size() && leading_top_k <= m.top_candidates();
    else
        return false;
}

namespace detail {
inline std::string quoted_token(const std::string& text) {
    std::string out = "\"";
    for (char ch : text.substr(0, 40)) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == '"' || c == '\\') {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += ch;
        }
    }
    return out + (text.size() > 40 ? "...\"" : "\"");
}
}  // namespace detail

// Refuses a draft model whose tokens do not mean what the target's tokens mean: a draft token id
// is fed to the target as is, so sizes, special tokens, tokenizer kind and every token text must
// agree. Token texts are compared when both sides know them; a vocabulary that lists texts
// cannot be matched against one that does not.
inline void check_draft_vocabulary(const vocabulary& target, const vocabulary& draft) {
    const auto fail = [](const std::string& what) {
        throw error(errc::invalid_argument, "draft model refused: " + what + "; speculative decoding needs the draft to "
                                            "share the target's vocabulary");
    };
    for (const vocabulary* v : {&target, &draft}) {
        const char* who = v == &target ? "target" : "draft";
        check(v->size > 0, errc::invalid_argument,
              [&] { return std::string(who) + " vocabulary has " + std::to_string(v->size) + " tokens"; });
        check(v->token_text.empty() || v->token_text.size() == size_t(v->size), errc::invalid_argument, [&] {
            return std::string(who) + " vocabulary has " + std::to_string(v->size) + " tokens but " +
                   std::to_string(v->token_text.size()) + " token texts";
        });
    }
    if (draft.size != target.size)
        fail("the draft vocabulary has " + std::to_string(draft.size) + " tokens, the target's has " +
             std::to_string(target.size));
    if (!draft.tokenizer.empty() && !target.tokenizer.empty() && draft.tokenizer != target.tokenizer)
        fail("the draft uses the \"" + draft.tokenizer + "\" tokenizer, the target \"" + target.tokenizer + "\"");
    if (draft.bos != target.bos)
        fail("the draft's BOS token is " + std::to_string(draft.bos) + ", the target's is " + std::to_string(target.bos));
    if (draft.eos != target.eos)
        fail("the draft's EOS token is " + std::to_string(draft.eos) + ", the target's is " + std::to_string(target.eos));
    if (draft.token_text.empty() != target.token_text.empty())
        fail(std::string("the token texts of the ") + (draft.token_text.empty() ? "draft" : "target") +
             " are unknown, so its tokens cannot be matched");
    const auto mismatch = std::mismatch(draft.token_text.begin(), draft.token_text.end(), target.token_text.begin());
    if (mismatch.first != draft.token_text.end()) {
        const auto id = mismatch.first - draft.token_text.begin();
        fail("token " + std::to_string(id) + " is " + detail::quoted_token(*mismatch.first) + " in the draft but " +
             detail::quoted_token(*mismatch.second) + " in the target");
    }
}

}  // namespace llmrt::sample
