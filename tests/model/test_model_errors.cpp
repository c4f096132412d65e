// Bad model files and bad calls raise llmrt::error naming the tensor, key or value at fault.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "loader_edits.hpp"
#include "model_fixtures.hpp"

using namespace llmrt;
using cpu_model = model::llama_model<cpu::backend>;

namespace {

using test::load_error;
using test::mentions;
using test::rebuilt;

// The test model with metadata `key` set to v.
gguf::writer with(const gguf::writer& w, const std::string& key, gguf::value v) {
    return rebuilt(w, "", [&](gguf::writer& out) { out.set(key, v); });
}

const gguf::writer& base() {
    static const gguf::writer w = model::make_random_llama(test::small_shape(qtype::q8_0), qtype::q8_0, 3);
    return w;
}

}  // namespace

TEST_CASE("the unmodified test model loads") { CHECK(load_error(rebuilt(base())) == ""); }

TEST_CASE("a missing tensor raises llmrt::error naming it") {
    for (const char* name : {"blk.1.ffn_up.weight", "token_embd.weight", "output_norm.weight", "blk.0.attn_norm.weight"})
        CHECK(mentions(load_error(rebuilt(base(), name)), name));
}

TEST_CASE("a tensor of the wrong shape raises llmrt::error naming it and both shapes") {
    gguf::writer w = rebuilt(base(), "blk.0.attn_k.weight");
    const auto& q = *std::find_if(base().tensors().begin(), base().tensors().end(),
                                  [](const auto& t) { return t.name == "blk.0.attn_q.weight"; });
    w.add_tensor("blk.0.attn_k.weight", q.type, {64, 64}, q.bytes());  // [n_embd, n_embd], not [n_embd, n_embd_kv]
    const std::string message = load_error(w);
    CHECK(mentions(message, "blk.0.attn_k.weight"));
    CHECK(mentions(message, "[64, 64]"));
    CHECK(mentions(message, "[64, 32]"));
}

namespace {

// A copy of `w` in which tensor `name` has ggml type `type_id` (same shape, bytes of 0x5a).
gguf::writer with_tensor_type(const gguf::writer& w, const std::string& name, uint32_t type_id) {
    gguf::writer out;
    for (const auto& [key, value] : w.metadata()) out.set(key, value);
    for (const auto& t : w.tensors()) {
        if (t.name != name) {
            out.add_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims), t.bytes());
            continue;
        }
        const gguf::ggml_type_info& type = gguf::ggml_types.at(type_id);
        const std::vector<std::byte> bytes(
            std::size_t(t.ne[0] / type.block_size * type.type_size * t.ne[1] * t.ne[2] * t.ne[3]), std::byte(0x5a));
        out.add_tensor(t.name, qtype(type_id), std::span(t.ne.data(), t.n_dims), bytes);
    }
    return out;
}

// n_embd 256 and n_ff 512, so that 256-element blocks (iq2_xxs, iq3_s, tq1_0) fit every row.
const gguf::writer& wide_base() {
    static const gguf::writer w = model::make_random_llama(test::small_shape(qtype::q4_K), qtype::q8_0, 4);
    return w;
}

}  // namespace

TEST_CASE("a weight of a type llmrt cannot decode raises unsupported_type at load naming the tensor, the type "
          "and the file") {
    REQUIRE(load_error(wide_base()) == "");
    struct case_t {
        const char* tensor;
        uint32_t type_id;
        const char* type;
    };
    for (const case_t c : {case_t{"blk.1.attn_q.weight", 16, "iq2_xxs"}, case_t{"blk.0.ffn_norm.weight", 34, "tq1_0"},
                           case_t{"token_embd.weight", 21, "iq3_s"}, case_t{"output.weight", 26, "i32"}}) {
        const std::string tensor = c.tensor, type = c.type;
        const uint32_t type_id = c.type_id;
        CAPTURE(tensor);
        REQUIRE_FALSE(is_in<all_types>(qtype(type_id)));
        const gguf::writer w = with_tensor_type(wide_base(), tensor, type_id);
        cpu::backend b;
        try {
            cpu_model m(b, gguf::file::from_bytes(w.to_bytes(), "wide.gguf"), {.n_ctx = 16});
            FAIL("a model with " << tensor << " of " << type << " loaded");
        } catch (const llmrt::error& e) {
            CHECK(e.code() == errc::unsupported_type);
            CHECK(mentions(e.what(), "llama model: tensor '" + tensor + "' in wide.gguf has type " + type +
                                         " (ggml type id " + std::to_string(type_id) +
                                         "), which llmrt cannot decode"));
        }
    }
}

TEST_CASE("a tensor the model does not use may be of a type llmrt cannot decode") {
    gguf::writer w = rebuilt(base());
    w.add_tensor("extra.iq2_xxs", qtype(16), {256, 2}, std::vector<std::byte>(2 * 66));
    w.add_tensor("extra.tq1_0", qtype(34), {256}, std::vector<std::byte>(54));
    CHECK(load_error(w) == "");
}

TEST_CASE("missing or wrong metadata raises llmrt::error naming the key") {
    CHECK(mentions(load_error(rebuilt(base(), "", [](gguf::writer& w) { w.erase("llama.block_count"); })),
                   "llama.block_count"));
    CHECK(mentions(load_error(rebuilt(base(), "", [](gguf::writer& w) { w.erase("general.architecture"); })),
                   "general.architecture"));
    CHECK(mentions(load_error(rebuilt(base(), "", [](gguf::writer& w) { w.set("general.architecture", std::string("gpt2")); })),
                   "general.architecture"));
    CHECK(mentions(load_error(rebuilt(base(), "", [](gguf::writer& w) { w.set("llama.attention.head_count", uint32_t(3)); })),
                   "llama.attention.head_count"));
    CHECK(mentions(load_error(rebuilt(base(), "", [](gguf::writer& w) { w.set("llama.embedding_length", std::string("64")); })),
                   "llama.embedding_length"));
    CHECK(mentions(load_error(rebuilt(base(), "", [](gguf::writer& w) { w.set("llama.attention.layer_norm_rms_epsilon", uint32_t(1)); })),
                   "llama.attention.layer_norm_rms_epsilon"));
    CHECK(mentions(load_error(rebuilt(base(), "", [](gguf::writer& w) { w.set("llama.vocab_size", uint32_t(100)); })),
                   "token_embd.weight"));
}

TEST_CASE("a vocabulary whose length differs from the model's raises llmrt::error naming the key") {
    const std::string message = load_error(rebuilt(base(), "", [](gguf::writer& w) {
        w.set("tokenizer.ggml.tokens", gguf::array(std::vector<std::string>{"a", "b"}));
    }));
    CHECK(mentions(message, "tokenizer.ggml.tokens"));
}

TEST_CASE("bad forward calls raise llmrt::error and leave the cache usable") {
    cpu::backend b;
    cpu_model m(b, test::small_model_file(qtype::q8_0), {.n_ctx = 8, .max_batch = 4});
    const std::vector<int32_t> one{5}, zero{0};
    CHECK_THROWS_AS(m.forward(std::vector<int32_t>{320}, zero), llmrt::error);           // token past the vocabulary
    CHECK_THROWS_AS(m.forward(std::vector<int32_t>{-1}, zero), llmrt::error);            // negative token
    CHECK_THROWS_AS(m.forward(one, std::vector<int32_t>{1}), llmrt::error);              // a gap after the cache
    CHECK_THROWS_AS(m.forward(std::vector<int32_t>{1, 2}, std::vector<int32_t>{0, 2}), llmrt::error);  // a gap inside
    CHECK_THROWS_AS(m.forward(std::vector<int32_t>(5, 1), std::vector<int32_t>{0, 1, 2, 3, 4}), llmrt::error);  // > max_batch
    CHECK_THROWS_AS(m.forward(one, std::vector<int32_t>{0, 1}), llmrt::error);           // counts differ
    CHECK_THROWS_AS(m.truncate(1), llmrt::error);                                        // past the cache
    m.forward(one, zero);
    CHECK(m.cache_length() == 1);
    for (int32_t p = 1; p < 8; ++p) m.forward(one, std::span<const int32_t>(&p, 1));
    const int32_t past_end = 8;
    CHECK_THROWS_AS(m.forward(one, std::span<const int32_t>(&past_end, 1)), llmrt::error);  // context full
}

TEST_CASE("restoring a state of a different cache layout raises llmrt::error") {
    cpu::backend b;
    cpu_model m(b, test::small_model_file(qtype::q8_0), {.n_ctx = 8});
    cpu_model half(b, test::small_model_file(qtype::q8_0), {.n_ctx = 8, .kv_type = qtype::f16});
    const std::vector<int32_t> t{5}, p{0};
    m.forward(t, p);
    auto s = m.save_state();
    CHECK_THROWS_AS(half.restore_state(s), llmrt::error);
    s.kv.pop_back();
    CHECK_THROWS_AS(m.restore_state(s), llmrt::error);
}

TEST_CASE("options outside their ranges raise llmrt::error") {
    cpu::backend b;
    CHECK_THROWS_AS(cpu_model(b, test::small_model_file(qtype::q8_0), {.kv_type = qtype::q8_0}), llmrt::error);
    CHECK_THROWS_AS(cpu_model(b, test::small_model_file(qtype::q8_0), {.max_batch = 0}), llmrt::error);
    CHECK_THROWS_AS(cpu_model(b, test::small_model_file(qtype::q8_0), {.n_ctx = -1}), llmrt::error);
}

TEST_CASE("the generator refuses a weight type whose block does not divide a row, naming the tensor") {
    model::llama_shape s = test::small_shape(qtype::q8_0);  // n_embd 64: too short for 256-element k-quant blocks
    try {
        model::make_random_llama(s, qtype::q4_K);
        FAIL("q4_K accepted rows of 64");
    } catch (const llmrt::error& e) {
        CHECK(mentions(e.what(), "token_embd.weight"));
        CHECK(mentions(e.what(), "q4_K"));
    }
    s.n_head = 5;
    CHECK_THROWS_AS(model::make_random_llama(s, qtype::q8_0), llmrt::error);
}

TEST_CASE("an infinite, NaN or non-positive rope.freq_base or rms epsilon raises llmrt::error naming the key and value") {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (const std::string key : {"llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon"}) {
        for (const auto& [v, shown] : {std::pair{inf, "= inf"}, std::pair{-inf, "= -inf"}, std::pair{nan, "= nan"},
                                       std::pair{0.0f, "= 0 "}, std::pair{-1.0f, "= -1 "}}) {
            const std::string message = load_error(with(base(), key, v));
            CHECK(mentions(message, key));
            CHECK(mentions(message, shown));
        }
        // A float64 past float's range would be undefined behaviour to convert.
        CHECK(mentions(load_error(with(base(), key, 1e300)), "float64 1e+300"));
        CHECK(load_error(with(base(), key, 1e-5)) == "");
    }
}

TEST_CASE("a file's context_length whose cache exceeds the default limit raises llmrt::error naming it and the bytes") {
    // The test model stores 2 layers x K and V x 32 f32 values = 512 bytes per position.
    for (const uint32_t n : {uint32_t(1) << 24, uint32_t(INT32_MAX)}) {
        const gguf::writer w = with(base(), "llama.context_length", n);
        const std::string message = load_error(w, {.n_ctx = 0});
        CHECK(mentions(message, "llama.context_length = " + std::to_string(n)));
        CHECK(mentions(message, "needs a KV cache of " + std::to_string(int64_t(n) * 512) + " bytes"));
        CHECK(mentions(message, "llama_options::n_ctx"));
        CHECK(load_error(w, {.n_ctx = 16}) == "");  // an explicit n_ctx is taken as asked
    }
    // Within the limit, n_ctx = 0 takes the file's length.
    cpu::backend b;
    cpu_model m(b, gguf::file::from_bytes(with(base(), "llama.context_length", uint32_t(64)).to_bytes()));
    CHECK(m.context_length() == 64);
}

TEST_CASE("an explicit n_ctx whose cache exceeds the machine's memory raises llmrt::error naming it, before allocating") {
    // 512 bytes per position (above): INT32_MAX positions need a KV cache of 1 TiB.
    REQUIRE(cpu::backend::memory_bytes() > 0);
    REQUIRE(cpu::backend::memory_bytes() < (std::size_t(1) << 40));
    const std::string message = load_error(base(), {.n_ctx = INT32_MAX});
    CHECK(mentions(message, "out of memory"));
    CHECK(mentions(message, "n_ctx = " + std::to_string(INT32_MAX)));
    CHECK(mentions(message, "needs a KV cache of " + std::to_string(int64_t(INT32_MAX) * 512) + " bytes"));
}

TEST_CASE("eval of tokens that do not all fit or are not all valid raises llmrt::error and commits none of them") {
    cpu::backend b;
    cpu_model m(b, test::small_model_file(qtype::q8_0), {.n_ctx = 8, .max_batch = 4});
    m.eval(std::vector<int32_t>{1, 2, 3}, 0, {});
    REQUIRE(m.cache_length() == 3);
    // 6 tokens at position 3 need positions 3..8; the context ends at 7. The first chunk of 4 fits.
    CHECK_THROWS_AS(m.eval(std::vector<int32_t>(6, 1), 3, {}), llmrt::error);
    CHECK(m.cache_length() == 3);
    // A token past the vocabulary in the second chunk.
    CHECK_THROWS_AS(m.eval(std::vector<int32_t>{1, 1, 1, 1, 320}, 3, {}), llmrt::error);
    CHECK(m.cache_length() == 3);
    m.eval(std::vector<int32_t>(5, 1), 3, {});  // exactly what is left
    CHECK(m.cache_length() == 8);
}
