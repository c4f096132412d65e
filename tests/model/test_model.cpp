// The llama model on the CPU backend: agreement with a naive reference, batch invariance, cache
// truncation, state save/restore, deterministic generation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <llmrt/sample/model.hpp>

#include "model_fixtures.hpp"
#include "greedy_reproducibility.hpp"
#include "eval_greedy_check.hpp"

using namespace llmrt;
using cpu_model = model::llama_model<cpu::backend>;

static_assert(sample::causal_model<cpu_model>, "llama_model must satisfy the sampler layer's causal_model");

namespace {

const std::vector<int32_t>& prompt = test::model_prompt;
using test::iota_positions;
using test::same_bits;
using test::one_by_one;


}  // namespace

TEST_CASE("with float activations the model's logits match a naive double-precision llama") {
    for (qtype t : {qtype::q8_0, qtype::f16, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        cpu::backend float_backend({.quantized_activations = cpu::activation_format::f32});
        cpu_model m(float_backend, test::small_model_file(t), {.n_ctx = 32, .max_batch = 8});
        const std::vector<int32_t> tokens(prompt.begin(), prompt.begin() + 6);
        const auto logits = m.forward(tokens, iota_positions(0, tokens.size()));
        const auto ref = test::reference_logits(m.weights(), tokens);
        CHECK(test::nmse(logits.data(), ref.data(), ref.size()) < 1e-10);
    }
}

TEST_CASE("with Q8_1 activations the model's logits stay close to the float reference") {
    for (qtype t : {qtype::q8_0, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        cpu::backend q8_backend;
        cpu_model m(q8_backend, test::small_model_file(t), {.n_ctx = 32});
        const std::vector<int32_t> tokens(prompt.begin(), prompt.begin() + 4);
        const auto logits = m.forward(tokens, iota_positions(0, tokens.size()));
        const auto ref = test::reference_logits(m.weights(), tokens);
        const double e = test::nmse(logits.data(), ref.data(), ref.size());
        CHECK(e > 0.0);  // the rounding is really there
        CHECK(e < 1e-3);
    }
}

TEST_CASE("a batch forward gives every token the bits of token-by-token forwards") {
    for (qtype t : {qtype::q8_0, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        cpu::backend b;
        cpu_model batched(b, test::small_model_file(t), {.n_ctx = 32, .max_batch = 8});
        cpu_model single(b, test::small_model_file(t), {.n_ctx = 32, .max_batch = 8});
        const std::vector<int32_t> first(prompt.begin(), prompt.begin() + 3), second(prompt.begin() + 3, prompt.begin() + 11);
        std::vector<float> batch_logits;
        for (const auto* part : {&first, &second}) {
            const auto l = batched.forward(*part, iota_positions(batched.cache_length(), part->size()));
            batch_logits.insert(batch_logits.end(), l.begin(), l.end());
        }
        const auto single_logits = one_by_one(single, std::vector<int32_t>(prompt.begin(), prompt.begin() + 11));
        CHECK(same_bits(batch_logits, single_logits));
    }
}

TEST_CASE("truncating the cache and recomputing the dropped tokens reproduces their logits") {
    cpu::backend b;
    cpu_model m(b, test::small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 4});
    const auto original = one_by_one(m, prompt);
    m.truncate(5);
    CHECK(m.cache_length() == 5);
    const std::vector<int32_t> rest(prompt.begin() + 5, prompt.end());
    const auto again = one_by_one(m, rest);
    CHECK(same_bits(again, std::span<const float>(original).subspan(5 * std::size_t(m.vocab_size()))));
    // Rewriting from an earlier position (a different continuation) works the same way.
    m.truncate(2);
    const auto other = one_by_one(m, {7, 8});
    m.truncate(2);
    CHECK(same_bits(one_by_one(m, {7, 8}), other));
}

TEST_CASE("restoring a saved state reproduces the next logits bit for bit") {
    for (qtype kv : {qtype::f32, qtype::f16}) {
        CAPTURE(std::string(name(kv)));
        cpu::backend b;
        cpu_model m(b, test::small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 4, .kv_type = kv});
        one_by_one(m, std::vector<int32_t>(prompt.begin(), prompt.begin() + 6));
        const model::llama_state saved = m.save_state();
        const auto next = one_by_one(m, {prompt[6]});
        one_by_one(m, {3, 4, 5});  // move on, then come back
        m.truncate(1);
        one_by_one(m, {9, 9, 9, 9, 9, 9, 9});
        m.restore_state(saved);
        CHECK(m.cache_length() == 6);
        CHECK(same_bits(one_by_one(m, {prompt[6]}), next));

        // Into a fresh model of the same file, too.
        cpu_model fresh(b, test::small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 4, .kv_type = kv});
        fresh.restore_state(saved);
        CHECK(same_bits(one_by_one(fresh, {prompt[6]}), next));
    }
}

TEST_CASE("greedy generation gives the same tokens on every run and after a save and restore") {
    cpu::backend b;
    test::check_greedy_reproducible(b, prompt);
}

TEST_CASE("greedy() holds the argmax of each row of the last forward's logits") {
    cpu::backend b;
    cpu_model m(b, test::small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 8});
    const auto logits = m.forward(std::span<const int32_t>(prompt).first(5), iota_positions(0, 5));
    const std::size_t v = std::size_t(m.vocab_size());
    for (std::size_t t = 0; t < 5; ++t) {
        const auto row = logits.subspan(t * v, v);
        CHECK(m.greedy()[t] == int32_t(std::max_element(row.begin(), row.end()) - row.begin()));
    }
}

TEST_CASE("eval appends tokens in chunks of max_batch with the logits forward gives") {
    cpu::backend b;
    cpu_model chunked(b, test::small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 3});
    cpu_model single(b, test::small_model_file(qtype::q8_0), {.n_ctx = 32, .max_batch = 3});
    std::vector<float> logits(prompt.size() * std::size_t(chunked.vocab_size()));
    chunked.eval(prompt, 0, logits);
    CHECK(chunked.cache_length() == int32_t(prompt.size()));
    CHECK(same_bits(logits, one_by_one(single, prompt)));
    chunked.eval(std::span<const int32_t>(prompt).first(2), chunked.cache_length(), {});
    CHECK_THROWS_AS(chunked.eval(prompt, 0, {}), llmrt::error);
}

TEST_CASE("eval_greedy gives each row's argmax and softmax's value there, in chunks of max_batch, without the logits") {
    cpu::backend b;
    test::check_eval_greedy(b, prompt, 0.0);
}

TEST_CASE("eval_top gives each row's top candidates and their logits, in chunks of max_batch, without the rows") {
    cpu::backend b;
    test::check_eval_top(b, prompt);
}

TEST_CASE("a model without output.weight reuses token_embd for the logits") {
    auto shape = test::small_shape(qtype::q8_0);
    shape.tied_output = true;
    cpu::backend float_backend({.quantized_activations = cpu::activation_format::f32});
    cpu_model m(float_backend, test::model_file(shape, qtype::q8_0), {.n_ctx = 16});
    CHECK(m.weights().tied_output);
    const std::vector<int32_t> tokens{4, 250};
    const auto logits = m.forward(tokens, iota_positions(0, 2));
    const auto ref = test::reference_logits(m.weights(), tokens);
    CHECK(test::nmse(logits.data(), ref.data(), ref.size()) < 1e-10);
}

TEST_CASE("the model reads its vocabulary, and generated ids turn into text") {
    cpu::backend b;
    cpu_model m(b, test::small_model_file(qtype::q8_0), {.n_ctx = 16});
    const auto& v = m.vocab();
    CHECK(v.size == 320);
    CHECK(v.token_text.size() == 320);
    CHECK(v.tokenizer == "llama");
    CHECK(v.bos == 1);
    CHECK(v.eos == 2);
    // 259 is the first word ("▁ba"); 3 + 0x41 is the byte token <0x41>, 'A'; 3 + 0xC3, 3 + 0xA9 spell 'é'.
    const std::vector<int32_t> ids{259, 3 + 0x41, 260, 3 + 0xC3, 3 + 0xA9};
    // The space SentencePiece puts before a text (add_space_prefix, on by default) is taken off.
    CHECK(v.add_space_prefix);
    CHECK(model::detokenize(v, ids) == "baA da\xC3\xA9");
    CHECK(model::piece_text("\xE2\x96\x81hello\xE2\x96\x81world") == " hello world");
    CHECK(model::piece_text("<0x0A>") == "\n");
    CHECK(model::piece_text("<0xZZ>") == "<0xZZ>");
}
