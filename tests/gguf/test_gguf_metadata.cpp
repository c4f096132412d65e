// Typed access to metadata and tensors, and the writer's checks on what it is given.
#include <doctest/doctest.h>

#include <string>

#include "error_message.hpp"
#include "gguf_bytes.hpp"
#include "sample_gguf.hpp"

using namespace llmrt;
using llmrt_test::parse_exact;

namespace {

using llmrt_test::error_message;

bool contains(const std::string& message, const std::string& fragment) {
    return message.find(fragment) != std::string::npos;
}

}  // namespace

TEST_CASE("get<T> of another type names the key, the type asked for and the type held") {
    const auto f = parse_exact(llmrt_test::sample_writer().to_bytes());
    const auto m = error_message([&] { (void)f.get<uint32_t>("test.uint8"); }, errc::invalid_argument);
    CHECK(contains(m, "key 'test.uint8' holds uint8, not uint32"));
    const auto a = error_message([&] { (void)f.get<std::vector<int32_t>>("test.array.string"); }, errc::invalid_argument);
    CHECK(contains(a, "key 'test.array.string' holds array of string, not array of int32"));
    const auto s = error_message([&] { (void)f.get<std::string>("test.array.nested"); }, errc::invalid_argument);
    CHECK(contains(s, "holds array of array of int32, not string"));
    const auto v = error_message([&] { (void)f.get<std::vector<float>>("test.float32"); }, errc::invalid_argument);
    CHECK(contains(v, "holds float32, not array of float32"));
}

TEST_CASE("a missing key or tensor raises invalid_argument naming it") {
    const auto f = parse_exact(llmrt_test::sample_writer().to_bytes());
    CHECK(contains(error_message([&] { (void)f.get<uint32_t>("llama.missing"); }, errc::invalid_argument),
                   "key 'llama.missing' is missing"));
    CHECK(f.metadata().find("llama.missing") == nullptr);
    CHECK(f.find_tensor("missing.weight") == nullptr);
    CHECK(contains(error_message([&] { (void)f.tensor("missing.weight"); }, errc::invalid_argument),
                   "no tensor named 'missing.weight'"));
}

TEST_CASE("get_or gives the fallback only for a missing key") {
    const auto f = parse_exact(llmrt_test::sample_writer().to_bytes());
    CHECK(f.get_or<uint32_t>("llama.block_count", 9) == 2);
    CHECK(f.get_or<uint32_t>("llama.missing", 9) == 9);
    CHECK(f.get_or<std::string>("general.missing", "x") == "x");
    CHECK_THROWS_AS((void)f.get_or<float>("llama.block_count", 1.0f), error);
}

TEST_CASE("set replaces a value in place; new keys go last; erase keeps the others in order") {
    gguf::metadata m;
    m.set("a", uint32_t(1));
    m.set("b", std::string("x"));
    m.set("c", 2.5f);
    m.set("a", std::vector<int32_t>{1, 2});
    REQUIRE(m.size() == 3);
    CHECK(m[0].first == "a");
    CHECK(m.get<std::vector<int32_t>>("a") == std::vector<int32_t>{1, 2});
    CHECK_FALSE(m.insert("b", uint8_t(0)));
    CHECK(m.erase("b"));
    CHECK_FALSE(m.erase("b"));
    CHECK(m[1].first == "c");
    CHECK(m.get<float>("c") == 2.5f);
}

TEST_CASE("describe names nested array types") {
    CHECK(gguf::describe(gguf::value(uint16_t(1))) == "uint16");
    CHECK(gguf::describe(gguf::value(std::vector<std::string>{})) == "array of string");
    CHECK(gguf::describe(gguf::value(std::vector<gguf::array>{gguf::array(std::vector<double>{1})})) ==
          "array of array of float64");
    CHECK(std::string(gguf::type_name(gguf::value_type(13))) == "unknown");
}

TEST_CASE("the writer rejects tensor bytes that do not match the shape") {
    gguf::writer w;
    std::vector<std::byte> bytes(34 * 2);
    w.add_tensor("ok", qtype::q8_0, {32, 2}, bytes);
    CHECK(contains(error_message([&] { w.add_tensor("short", qtype::q8_0, {32, 3}, bytes); }, errc::shape_mismatch),
                   "tensor 'short' of q8_0 with shape [32, 3] needs 102 bytes, got 68"));
    CHECK(contains(error_message([&] { w.add_tensor("odd", qtype::q8_0, {48}, bytes); }, errc::invalid_argument),
                   "ne[0] = 48 is not a multiple of q8_0's block size 32"));
    CHECK(contains(error_message([&] { w.add_tensor("zero", qtype::f32, {4, 0}, bytes); }, errc::invalid_argument),
                   "ne[1] = 0"));
    CHECK(contains(error_message([&] { w.add_tensor("neg", qtype::f32, {-4}, bytes); }, errc::invalid_argument),
                   "ne[0] = -4"));
    CHECK(contains(error_message([&] { w.add_tensor("5d", qtype::f32, {1, 1, 1, 1, 1}, bytes); },
                                 errc::invalid_argument),
                   "5 dimensions"));
    CHECK(contains(error_message([&] { w.add_tensor("ok", qtype::q8_0, {32, 2}, bytes); }, errc::invalid_argument),
                   "tensor 'ok' was already added"));
    CHECK(contains(error_message([&] { w.add_tensor("q4_2", qtype(4), {32}, bytes); }, errc::unsupported_type),
                   "tensor 'q4_2': ggml type id 4 (q4_2, removed from ggml)"));
    CHECK(contains(error_message([&] { w.add_tensor("new", qtype(43), {32}, bytes); }, errc::unsupported_type),
                   "unknown ggml type id 43 (ggml defines 0..42)"));
    CHECK(w.tensors().size() == 1);
}

TEST_CASE("the writer rejects alignments that are not powers of two and arrays nested too deep") {
    gguf::writer w;
    CHECK(contains(error_message([&] { w.set_alignment(0); }, errc::invalid_argument), "alignment 0"));
    CHECK(contains(error_message([&] { w.set_alignment(24); }, errc::invalid_argument), "alignment 24"));
    CHECK(contains(error_message([&] { w.set("general.alignment", int32_t(64)); }, errc::invalid_argument),
                   "general.alignment must be uint32, got int32"));
    CHECK(w.alignment() == 32);
    CHECK_FALSE(w.metadata().contains("general.alignment"));

    gguf::array deep(std::vector<int32_t>{1});
    for (int d = 1; d < gguf::max_array_depth; ++d) deep = gguf::array(std::vector<gguf::array>{deep});
    w.set("deep", deep);  // 8 levels
    CHECK(contains(error_message([&] { w.set("deeper", gguf::array(std::vector<gguf::array>{deep})); },
                                 errc::invalid_argument),
                   "nested deeper than 8"));
    CHECK(parse_exact(w.to_bytes()).get<gguf::array>("deep") == deep);
}

TEST_CASE("erasing general.alignment from the writer restores the default alignment") {
    gguf::writer w(256);
    CHECK(w.alignment() == 256);
    CHECK(w.erase("general.alignment"));
    CHECK(w.alignment() == 32);
}

TEST_CASE("writing to a path that cannot be created raises io_error naming it") {
    const std::filesystem::path bad = "/nonexistent-llmrt-folder/x.gguf";
    CHECK(contains(error_message([&] { gguf::writer{}.write(bad); }, errc::io_error), bad.string()));
}

TEST_CASE("the writer rejects a tensor whose byte size overflows 64 bits instead of taking it as empty") {
    // 2^62 f32 elements are 2^64 bytes, which wrap to 0 in unchecked arithmetic.
    gguf::writer w;
    const std::vector<std::byte> none;
    CHECK(contains(error_message([&] { w.add_tensor("huge", qtype::f32, {int64_t(1) << 62}, none); },
                                 errc::invalid_argument),
                   "tensor 'huge' of f32 with shape [4611686018427387904]: byte size overflows"));
    CHECK(contains(error_message([&] { w.add_tensor("wide", qtype::f32, {int64_t(1) << 31, int64_t(1) << 31}, none); },
                                 errc::invalid_argument),
                   "byte size overflows"));
    CHECK(w.tensors().empty());
}
