// What llmrt's writer writes, llmrt's reader reads back: every value type, every element type's
// tensor, every alignment, from memory and through mmap.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "gguf_bytes.hpp"
#include "scratch_dir.hpp"
#include "sample_gguf.hpp"

using namespace llmrt;
using llmrt_test::parse_exact;

namespace {

const std::filesystem::path& scratch() { return llmrt_test::scratch_dir(); }

void check_same_tensors(const gguf::writer& w, const gguf::file& f) {
    REQUIRE(f.tensors().size() == w.tensors().size());
    for (std::size_t i = 0; i < w.tensors().size(); ++i) {
        const auto& expected = w.tensors()[i];
        const auto& t = f.tensors()[i];
        CAPTURE(expected.name);
        CHECK(t.name == expected.name);
        CHECK(t.type_id == uint32_t(expected.type));
        CHECK(t.n_dims == expected.n_dims);
        CHECK(t.ne == expected.ne);
        CHECK(t.offset % f.alignment() == 0);
        CHECK(t.data == f.bytes().data() + f.data_offset() + t.offset);
        REQUIRE(t.size == expected.bytes().size());
        CHECK(std::memcmp(t.data, expected.bytes().data(), t.size) == 0);
        CHECK(f.find_tensor(expected.name) == &t);
    }
}

}  // namespace

TEST_CASE("every metadata value type reads back with its type, its value and its place") {
    const auto w = llmrt_test::sample_writer();
    const auto f = parse_exact(w.to_bytes());
    REQUIRE(f.metadata().size() == w.metadata().size());
    for (std::size_t i = 0; i < w.metadata().size(); ++i) {
        const auto& key = w.metadata()[i].first;
        const auto& v = w.metadata()[i].second;
        CAPTURE(key);
        CHECK(f.metadata()[i].first == key);
        CHECK(gguf::type_of(f.metadata()[i].second) == gguf::type_of(v));
        // Floats by their bits, so -0 and infinity count.
        CHECK(llmrt_test::canonical(f.metadata()[i].second) == llmrt_test::canonical(v));
    }
    CHECK(f.get<uint8_t>("test.uint8") == 255);
    CHECK(f.get<int8_t>("test.int8") == -128);
    CHECK(f.get<uint16_t>("test.uint16") == 65535);
    CHECK(f.get<int16_t>("test.int16") == -32768);
    CHECK(f.get<uint32_t>("test.uint32") == 4000000000u);
    CHECK(f.get<int32_t>("test.int32") == -2000000000);
    CHECK(f.get<float>("test.float32") == 3.25f);
    CHECK(std::signbit(f.get<float>("test.float32_negative_zero")));
    CHECK(f.get<float>("test.float32_infinity") == std::numeric_limits<float>::infinity());
    CHECK(f.get<bool>("test.bool_true"));
    CHECK_FALSE(f.get<bool>("test.bool_false"));
    CHECK(f.get<std::string>("test.string") == "h\xc3\xa9llo, w\xc3\xb6rld");
    CHECK(f.get<std::string>("test.string_empty").empty());
    CHECK(f.get<std::string>("test.string_with_nul") == std::string("a\0b", 3));
    CHECK(f.get<uint64_t>("test.uint64") == std::numeric_limits<uint64_t>::max());
    CHECK(f.get<int64_t>("test.int64") == std::numeric_limits<int64_t>::min());
    CHECK(f.get<double>("test.float64") == -1.0 / 3.0);
}

TEST_CASE("arrays of every element type read back, empty and nested ones included") {
    const auto f = parse_exact(llmrt_test::sample_writer().to_bytes());
    CHECK(f.get<std::vector<uint8_t>>("test.array.uint8") == std::vector<uint8_t>{0, 1, 255});
    CHECK(f.get<std::vector<int8_t>>("test.array.int8") == std::vector<int8_t>{-128, 0, 127});
    CHECK(f.get<std::vector<uint16_t>>("test.array.uint16") == std::vector<uint16_t>{1, 65535});
    CHECK(f.get<std::vector<int16_t>>("test.array.int16") == std::vector<int16_t>{-32768, 32767});
    CHECK(f.get<std::vector<uint32_t>>("test.array.uint32") == std::vector<uint32_t>{7, 0, 4294967295u});
    CHECK(f.get<std::vector<int32_t>>("test.array.int32") == std::vector<int32_t>{-1, 2, -3, 4});
    CHECK(f.get<std::vector<float>>("test.array.float32") == std::vector<float>{0.5f, -1.25f, 1e-30f});
    CHECK(f.get<std::vector<bool>>("test.array.bool") == std::vector<bool>{true, false, true});
    CHECK(f.get<std::vector<std::string>>("test.array.string") ==
          std::vector<std::string>{"<s>", "", "\xe2\x96\x81the", "</s>"});
    CHECK(f.get<std::vector<uint64_t>>("test.array.uint64")[1] == std::numeric_limits<uint64_t>::max());
    CHECK(f.get<std::vector<int64_t>>("test.array.int64")[0] == std::numeric_limits<int64_t>::min());
    CHECK(f.get<std::vector<double>>("test.array.float64") == std::vector<double>{1e300, -2.5});
    CHECK(f.get<std::vector<uint32_t>>("test.array.empty_uint32").empty());
    CHECK(f.get<std::vector<std::string>>("test.array.empty_string").empty());

    const auto& nested = f.get<std::vector<gguf::array>>("test.array.nested");
    REQUIRE(nested.size() == 3);
    CHECK(*nested[0].get_if<int32_t>() == std::vector<int32_t>{1, 2});
    CHECK(*nested[1].get_if<std::string>() == std::vector<std::string>{"x"});
    CHECK(*nested[2].get_if<gguf::array>()->at(0).get_if<float>() == std::vector<float>{1.5f});
}

TEST_CASE("a tensor of every element type reads back with its type, shape and bytes") {
    const auto w = llmrt_test::sample_writer();
    CHECK(w.tensors().size() == all_types::size);
    check_same_tensors(w, parse_exact(w.to_bytes()));
}

TEST_CASE("tensors lie at multiples of the alignment for every power of two") {
    for (uint32_t a : {1u, 2u, 8u, 32u, 64u, 256u, 4096u}) {
        CAPTURE(a);
        const auto w = llmrt_test::sample_writer(a);
        const auto bytes = w.to_bytes();
        const auto f = parse_exact(bytes);
        CHECK(f.alignment() == a);
        CHECK(f.get<uint32_t>("general.alignment") == a);
        CHECK(f.data_offset() % a == 0);
        CHECK(bytes.size() % a == 0);  // each tensor is padded, as ggml writes them
        check_same_tensors(w, f);
    }
}

TEST_CASE("a file without general.alignment uses 32") {
    const auto f = parse_exact(llmrt_test::sample_writer().to_bytes());
    CHECK_FALSE(f.metadata().contains("general.alignment"));
    CHECK(f.alignment() == 32);
    CHECK(f.data_offset() % 32 == 0);
}

TEST_CASE("an empty writer gives a 32-byte file whose 24-byte header alone also reads") {
    const auto bytes = gguf::writer{}.to_bytes();
    CHECK(bytes.size() == 32);  // the 24-byte header padded to the alignment
    const auto f = parse_exact(std::span(bytes).first(24));
    CHECK(f.metadata().empty());
    CHECK(f.tensors().empty());
}

TEST_CASE("a tensor with no dimensions is a single element") {
    gguf::writer w;
    const float one = 1.0f;
    w.add_tensor("scalar", qtype::f32, std::span<const int64_t>{}, std::as_bytes(std::span(&one, 1)));
    const auto f = parse_exact(w.to_bytes());
    const auto& t = f.tensor("scalar");
    CHECK(t.n_dims == 0);
    CHECK(t.elements() == 1);
    CHECK(t.size == 4);
}

TEST_CASE("reading a file and writing it again gives the same bytes") {
    const auto original = llmrt_test::sample_writer(64).to_bytes();
    const auto f = parse_exact(original);
    gguf::writer copy;
    for (const auto& [key, v] : f.metadata()) copy.set(key, v);
    for (const auto& t : f.tensors())
        copy.add_tensor_view(t.name, qtype(t.type_id), std::span(t.ne).first(t.n_dims), t.bytes());
    CHECK(copy.to_bytes() == original);
}

TEST_CASE("a file written to disk opens through mmap and stays valid when moved") {
    const auto w = llmrt_test::sample_writer(128);
    const auto path = scratch() / "round_trip.gguf";
    w.write(path);
    auto f = gguf::file::open(path);
    CHECK(f.source() == path.string());
    check_same_tensors(w, f);
    CHECK(std::filesystem::file_size(path) == w.to_bytes().size());

    const std::byte* data = f.tensors().back().data;
    gguf::file moved = std::move(f);
    CHECK(moved.tensors().back().data == data);
    check_same_tensors(w, moved);
    CHECK(moved.get<uint32_t>("llama.block_count") == 2);
}

TEST_CASE("opening a file that cannot be mapped raises io_error naming the path") {
    const auto missing = scratch() / "missing.gguf";
    try {
        gguf::file::open(missing);
        FAIL("opened a missing file");
    } catch (const error& e) {
        CHECK(e.code() == errc::io_error);
        CHECK(std::string(e.what()).find(missing.string()) != std::string::npos);
    }
    CHECK_THROWS_AS(gguf::file::open(scratch()), error);  // a directory
}

TEST_CASE("an empty file on disk raises corrupt_file at offset 0") {
    const auto path = scratch() / "empty.gguf";
    std::ofstream(path).close();
    try {
        gguf::file::open(path);
        FAIL("opened an empty file");
    } catch (const error& e) {
        CHECK(e.code() == errc::corrupt_file);
        CHECK(llmrt_test::offset_in(e.what()) == std::optional<uint64_t>(0));
    }
}
