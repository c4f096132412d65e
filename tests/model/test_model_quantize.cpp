// model::quantize_file (llmrt-quantize's work): which tensors change type, that their bytes are
// llmrt's quantize_row of the source rows, that they dequantize within the type's round-trip
// error, that metadata survives, and that the quantized model's logits stay near the float one's.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <llmrt/model/quantize_file.hpp>
#include <llmrt/model/random_model.hpp>
#include <llmrt/testing/measures.hpp>

#include "float_forward.hpp"
#include "model_fixtures.hpp"

using namespace llmrt;

namespace {

// A random llama in a float type, shaped for the k-quants (every row a multiple of 256).
std::shared_ptr<const gguf::file> float_llama(qtype t, int32_t n_ff = 512, bool tied = false) {
    model::llama_shape s = test::small_shape(qtype::q4_K);
    s.n_ff = n_ff;
    s.tied_output = tied;
    return test::file_of(model::make_random_llama(s, t, 7));
}

std::shared_ptr<const gguf::file> quantized(const gguf::file& in, const model::quantize_options& o) {
    return test::file_of(model::quantize_file(in, o).writer);
}

std::vector<float> floats_of(const gguf::tensor_info& t) {
    std::vector<float> v(std::size_t(t.elements()));
    dequantize(t.type(), t.data, v.data(), t.elements());
    return v;
}

double round_trip_rmse_of(qtype t) {
    return dispatch(t, "round_trip_rmse", [](auto tag) { return double(decltype(tag)::type::round_trip_rmse); });
}

}  // namespace

TEST_CASE("a quantized file keeps every metadata key and sets general.file_type to llama.cpp's id") {
    for (const auto& type_and_id : {std::pair{qtype::q8_0, 7u}, std::pair{qtype::q4_K, 15u}}) {
        const qtype t = type_and_id.first;
        const uint32_t ftype = type_and_id.second;
        CAPTURE(std::string(name(t)));
        const auto in = float_llama(qtype::f32);
        const auto out = quantized(*in, {.type = t});
        for (const auto& entry : in->metadata()) {
            const std::string& key = entry.first;
            CAPTURE(key);
            REQUIRE(out->metadata().find(key) != nullptr);
            CHECK(*out->metadata().find(key) == entry.second);
        }
        CHECK(out->metadata().size() == in->metadata().size() + 1);
        CHECK(out->get<uint32_t>("general.file_type") == ftype);
        REQUIRE(out->tensors().size() == in->tensors().size());
    }
}

TEST_CASE("every matrix holds quantize_row of its source rows and 1-D tensors are copied as they are") {
    for (qtype source : {qtype::f32, qtype::f16}) {
        for (qtype t : {qtype::q8_0, qtype::q4_K}) {
            CAPTURE(std::string(name(source)));
            CAPTURE(std::string(name(t)));
            const auto in = float_llama(source);
            const auto out = quantized(*in, {.type = t});
            for (const gguf::tensor_info& a : in->tensors()) {
                CAPTURE(a.name);
                const gguf::tensor_info& b = out->tensor(a.name);
                REQUIRE(b.ne == a.ne);
                if (a.n_dims == 1) {
                    CHECK(b.type() == a.type());
                    CHECK(std::memcmp(a.data, b.data, a.size) == 0);
                    continue;
                }
                REQUIRE(b.type() == t);
                const std::vector<float> rows = floats_of(a);
                std::vector<std::byte> expected(row_size(t, a.ne[0]) * std::size_t(a.elements() / a.ne[0]));
                for (int64_t r = 0; r < a.elements() / a.ne[0]; ++r)
                    quantize(t, rows.data() + r * a.ne[0], expected.data() + std::size_t(r) * row_size(t, a.ne[0]),
                             a.ne[0]);
                REQUIRE(b.size == expected.size());
                CHECK(std::memcmp(b.data, expected.data(), b.size) == 0);
            }
        }
    }
}

TEST_CASE("every quantized matrix dequantizes to within its type's round-trip error of the source") {
    for (qtype t : {qtype::q8_0, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        const auto in = float_llama(qtype::f16);
        const auto out = quantized(*in, {.type = t});
        for (const gguf::tensor_info& a : in->tensors()) {
            if (a.n_dims == 1) continue;
            CAPTURE(a.name);
            const std::vector<float> src = floats_of(a), got = floats_of(out->tensor(a.name));
            // The header's figure is for Gaussian data; these are uniform, whose blocks quantize
            // no worse: relative RMS error (the square root of the NMSE) within 10% of it.
            const double relative = std::sqrt(testing::nmse(got.data(), src.data(), int64_t(src.size())));
            CHECK(relative <= 1.1 * round_trip_rmse_of(t));
            CHECK(relative > 0.0);
        }
    }
}

TEST_CASE("the quantized model's CPU logits stay close to the float model's") {
    const auto in = float_llama(qtype::f32);
    const std::vector<int32_t> tokens{1, 17, 260, 300, 5, 42};
    const std::vector<float> reference = test::float_forward(in, tokens).logits;
    // NMSE bounds: about 4x what the two types give here (q8_0 8.4e-5, q4_K 1.8e-2).
    for (const auto& type_and_bound : {std::pair{qtype::q8_0, 4e-4}, std::pair{qtype::q4_K, 8e-2}}) {
        const qtype t = type_and_bound.first;
        const double bound = type_and_bound.second;
        CAPTURE(std::string(name(t)));
        const std::vector<float> logits = test::float_forward(quantized(*in, {.type = t}), tokens).logits;
        REQUIRE(logits.size() == reference.size());
        const double e = testing::nmse(logits.data(), reference.data(), int64_t(logits.size()));
        CAPTURE(e);
        CHECK(e < bound);
    }
}

TEST_CASE("token_embd and output take the output type, and a tied model's token_embd does too") {
    for (bool tied : {false, true}) {
        CAPTURE(tied);
        const auto out = quantized(*float_llama(qtype::f32, 512, tied), {.type = qtype::q4_K, .output_type = qtype::q6_K});
        CHECK(out->tensor("token_embd.weight").type() == qtype::q6_K);
        CHECK((out->find_tensor("output.weight") == nullptr) == tied);
        if (!tied) CHECK(out->tensor("output.weight").type() == qtype::q6_K);
        CHECK(out->tensor("blk.0.attn_q.weight").type() == qtype::q4_K);
        CHECK(out->get<uint32_t>("general.file_type") == 15u);
    }
}

TEST_CASE("a matrix whose rows do not fit the block size stays as it is, with a note naming it") {
    // n_ff 288: ffn_down's rows (288) fit q8_0's block of 32 but not q4_K's 256.
    const auto in = float_llama(qtype::f16, 288);
    const auto r = model::quantize_file(*in, {.type = qtype::q4_K});
    REQUIRE(r.notes.size() == 2);
    CHECK(r.notes[0] == "tensor 'blk.0.ffn_down.weight' [288, 256]: rows of 288 are not a multiple of q4_K's "
                        "block of 256; kept as f16");
    const auto out = test::file_of(r.writer);
    CHECK(out->tensor("blk.1.ffn_down.weight").type() == qtype::f16);
    CHECK(out->tensor("blk.1.ffn_up.weight").type() == qtype::q4_K);
    CHECK(model::quantize_file(*in, {.type = qtype::q8_0}).notes.empty());
}

TEST_CASE("keep-f32 patterns store the tensors they find as f32") {
    const auto in = float_llama(qtype::f16);
    const auto out = quantized(*in, {.type = qtype::q8_0, .keep_f32 = {"attn_(k|v)\\.", "^output\\.weight$"}});
    CHECK(out->tensor("blk.1.attn_k.weight").type() == qtype::f32);
    CHECK(out->tensor("blk.1.attn_v.weight").type() == qtype::f32);
    CHECK(out->tensor("output.weight").type() == qtype::f32);
    CHECK(out->tensor("blk.1.attn_q.weight").type() == qtype::q8_0);
    const std::vector<float> a = floats_of(in->tensor("blk.0.attn_v.weight"));
    CHECK(floats_of(out->tensor("blk.0.attn_v.weight")) == a);
}

TEST_CASE("bad input is an error naming what was wrong") {
    const auto in = float_llama(qtype::f32);
    CHECK_THROWS_WITH_AS(model::quantize_file(*in, {.type = qtype::q8_K}),
                         doctest::Contains("type q8_K is not a weight type"), error);
    CHECK_THROWS_WITH_AS(model::quantize_file(*in, {.type = qtype::q8_0, .output_type = qtype::q8_1}),
                         doctest::Contains("output type q8_1 is not a weight type"), error);
    CHECK_THROWS_WITH_AS(model::quantize_file(*in, {.type = qtype::q8_0, .keep_f32 = {"attn_(q"}}),
                         doctest::Contains("keep-f32 pattern 'attn_(q' is not a regex"), error);
    const auto q8 = quantized(*in, {.type = qtype::q8_0});
    CHECK_THROWS_WITH_AS(model::quantize_file(*q8, {.type = qtype::q4_K}),
                         doctest::Contains("tensor 'token_embd.weight' [256, 320] is q8_0, not f32, f16 or bf16"),
                         error);
    // Quantizing to the type a tensor already has copies it.
    CHECK(model::quantize_file(*q8, {.type = qtype::q8_0}).quantized == 0);
}
