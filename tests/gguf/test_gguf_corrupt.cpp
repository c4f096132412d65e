// A corrupt or truncated GGUF raises llmrt::error naming the byte offset, and is never read out
// of bounds. Offsets below follow the layout: the header is 24 bytes, a string is 8 + its length.
#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <string>

#include "gguf_bytes.hpp"
#include "sample_gguf.hpp"

using namespace llmrt;
using llmrt_test::check_rejected;
using llmrt_test::gguf_bytes;
using llmrt_test::parse_exact;
using T = gguf::value_type;

namespace {
constexpr uint64_t first_kv = 24;
// A one-letter key: its type field is at 24 + 9 = 33, its value at 37.
constexpr uint64_t type_of_k = 33;
constexpr uint64_t value_of_k = 37;
// The first tensor info with a one-letter name: n_dims at 33, ne[0] at 37.
constexpr uint64_t n_dims_of_t = 33;
constexpr uint64_t ne0_of_t = 37;
}  // namespace

TEST_CASE("a file that does not start with GGUF is rejected at offset 0") {
    check_rejected(gguf_bytes{}.raw("GGUX").u32(3).u64(0).u64(0), 0, "bad magic");
    check_rejected(gguf_bytes{}.raw("GGU"), 0, "truncated GGUF magic");
    check_rejected(gguf_bytes{}, 0, "truncated GGUF magic");
}

TEST_CASE("versions other than 2 and 3 are rejected at offset 4") {
    check_rejected(gguf_bytes{}.header(0, 0, 1), 4, "unsupported GGUF version 1");
    check_rejected(gguf_bytes{}.header(0, 0, 4), 4, "unsupported GGUF version 4");
    check_rejected(gguf_bytes{}.header(0, 0, 0x03000000u), 4, "big-endian");
    CHECK(parse_exact(gguf_bytes{}.header(0, 0, 2).bytes).version() == 2);
    CHECK(parse_exact(gguf_bytes{}.header(0, 0, 3).bytes).version() == 3);
}

TEST_CASE("a header truncated inside its counts is rejected where the count starts") {
    check_rejected(gguf_bytes{}.raw("GGUF").u32(3).u32(0), 8, "truncated tensor count");
    check_rejected(gguf_bytes{}.raw("GGUF").u32(3).u64(0).u32(0), 16, "truncated key/value count");
}

TEST_CASE("counts that the rest of the file cannot hold are rejected before anything is allocated") {
    check_rejected(gguf_bytes{}.header(uint64_t(1) << 40, 0).zeros(100), 8, "tensor count 1099511627776");
    check_rejected(gguf_bytes{}.header(std::numeric_limits<uint64_t>::max(), 0), 8, "tensor count");
    check_rejected(gguf_bytes{}.header(0, 1000).zeros(100), 16, "key/value count 1000");
    check_rejected(gguf_bytes{}.header(0, std::numeric_limits<uint64_t>::max()), 16, "key/value count");
    // Each fits alone; together they need 4 * 13 + 3 * 24 = 124 bytes.
    check_rejected(gguf_bytes{}.header(3, 4).zeros(100), 16, "with 3 tensors");
}

TEST_CASE("a key longer than the rest of the file is rejected at the key") {
    check_rejected(gguf_bytes{}.header(0, 1).u64(1000).zeros(12), first_kv, "key of 1000 bytes runs past the end");
    check_rejected(gguf_bytes{}.header(0, 1).u64(std::numeric_limits<uint64_t>::max()).zeros(12), first_kv,
                   "runs past the end");
}

TEST_CASE("a string value longer than the rest of the file is rejected at the string") {
    check_rejected(gguf_bytes{}.header(0, 1).str("k").u32(uint32_t(T::string)).u64(uint64_t(1) << 60), value_of_k,
                   "string value of 1152921504606846976 bytes runs past the end");
}

TEST_CASE("an array count beyond the end is rejected at the count without a huge allocation") {
    const uint64_t count_at = value_of_k + 4;
    for (const auto& element_count : {std::pair{T::uint8, std::numeric_limits<uint64_t>::max()},
                                      std::pair{T::uint32, uint64_t(1) << 61}, std::pair{T::float64, uint64_t(6)},
                                      std::pair{T::string, uint64_t(1) << 40}, std::pair{T::array, uint64_t(4)}}) {
        const auto [element, count] = element_count;
        const char* element_name = gguf::type_name(element);  // clang 14: a lambda cannot name a binding
        CAPTURE(element_name);
        check_rejected(
            gguf_bytes{}.header(0, 1).str("k").u32(uint32_t(T::array)).u32(uint32_t(element)).u64(count).zeros(40),
            count_at, "needs at least");
    }
}

TEST_CASE("arrays nest up to 8 deep; a 9th level is rejected at its element type") {
    auto nested = [](int arrays_of_arrays) {
        gguf_bytes b;
        b.header(0, 1).str("k").u32(uint32_t(T::array));
        for (int d = 0; d < arrays_of_arrays; ++d) b.u32(uint32_t(T::array)).u64(1);
        b.u32(uint32_t(T::int32)).u64(1).u32(42);
        return b;
    };
    // 7 arrays of arrays around an array of int32: 8 levels.
    const auto f = parse_exact(nested(7).bytes);
    const gguf::array* a = &f.metadata().get<gguf::array>("k");
    for (int d = 0; d < 7; ++d) a = &a->get_if<gguf::array>()->at(0);
    CHECK(a->get_if<int32_t>()->at(0) == 42);
    // The 8th level's element type says "array": its header is the 8th, at 37 + 7 * 12.
    check_rejected(nested(8), value_of_k + 7 * 12, "nested deeper than 8");
    check_rejected(nested(1000), value_of_k + 7 * 12, "nested deeper than 8");
}

TEST_CASE("an unknown value type is rejected at the type field") {
    check_rejected(gguf_bytes{}.header(0, 1).str("k").u32(13).u32(0), type_of_k, "unknown value type 13");
    check_rejected(gguf_bytes{}.header(0, 1).str("k").u32(uint32_t(T::array)).u32(200).u64(0), value_of_k,
                   "unknown array element type 200");
}

TEST_CASE("a bool other than 0 or 1 is rejected at the value") {
    check_rejected(gguf_bytes{}.header(0, 1).str("k").u32(uint32_t(T::boolean)).u8(2).zeros(8), value_of_k,
                   "bool value 2");
}

TEST_CASE("a duplicate key is rejected at its second occurrence") {
    const uint64_t second = first_kv + 8 + 1 + 4 + 4;
    check_rejected(gguf_bytes{}.header(0, 2).kv_u32("k", 1).kv_u32("k", 2), second, "key 'k': duplicate key");
}

TEST_CASE("general.alignment must be a uint32 power of two") {
    // "general.alignment" is 17 bytes: type at 24 + 25, value at 53.
    const uint64_t value_at = first_kv + 25 + 4;
    check_rejected(gguf_bytes{}.header(0, 1).kv_u32("general.alignment", 0), value_at, "alignment 0 is not a power of two");
    check_rejected(gguf_bytes{}.header(0, 1).kv_u32("general.alignment", 48), value_at, "alignment 48");
    check_rejected(gguf_bytes{}.header(0, 1).str("general.alignment").u32(uint32_t(T::int32)).u32(64), value_at,
                   "general.alignment holds int32, not uint32");
    CHECK(parse_exact(gguf_bytes{}.header(0, 1).kv_u32("general.alignment", 1).bytes).alignment() == 1);
}

TEST_CASE("a tensor with more than 4 dimensions is rejected at n_dims") {
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {32, 1, 1, 1, 1}, qtype::f32, 0), n_dims_of_t,
                   "tensor 't': n_dims 5 exceeds 4");
}

TEST_CASE("a zero dimension or an element count that overflows is rejected at that dimension") {
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {32, 0}, qtype::f32, 0), ne0_of_t + 8,
                   "dimension ne[1] is 0");
    const uint64_t big = uint64_t(1) << 32;
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {big, big}, qtype::f32, 0), ne0_of_t + 8,
                   "element count overflows at ne[1]");
    // 2^63 elements overflow int64_t, though not uint64_t.
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {big, big / 2}, qtype::f32, 0), ne0_of_t + 8,
                   "element count overflows");
}

TEST_CASE("a tensor whose byte size overflows is rejected at its type") {
    // 2^62 f32 elements fit in int64_t; their 2^64 bytes do not fit in uint64_t.
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {uint64_t(1) << 62}, qtype::f32, 0), ne0_of_t + 8,
                   "byte size overflows");
}

TEST_CASE("a tensor type id that ggml does not define is rejected naming the tensor, the id and its offset") {
    const auto with_type = [](uint32_t id) {
        return gguf_bytes{}.header(1, 0).tensor_info("t", {256}, qtype(id), 0).pad_to(32).zeros(2048);
    };
    // Removed from ggml: 4 and 5 long ago, 31..33 and 36..38 from GGUF files.
    check_rejected(with_type(4), ne0_of_t + 8, "tensor 't': ggml type id 4 (q4_2, removed from ggml)",
                   errc::unsupported_type);
    check_rejected(with_type(5), ne0_of_t + 8, "ggml type id 5 (q4_3, removed from ggml)", errc::unsupported_type);
    for (const auto& removed : {std::pair{31u, "q4_0_4_4"}, std::pair{32u, "q4_0_4_8"}, std::pair{33u, "q4_0_8_8"},
                                std::pair{36u, "iq4_nl_4_4"}, std::pair{37u, "iq4_nl_4_8"}, std::pair{38u, "iq4_nl_8_8"}}) {
        CAPTURE(removed.second);
        check_rejected(with_type(removed.first), ne0_of_t + 8,
                       "tensor 't': ggml type id " + std::to_string(removed.first) + " (" + removed.second +
                           ", removed from ggml)",
                       errc::unsupported_type);
    }
    // Never defined.
    for (uint32_t id : {43u, 1000u, 0xffffffffu}) {
        CAPTURE(id);
        check_rejected(with_type(id), ne0_of_t + 8,
                       "tensor 't': unknown ggml type id " + std::to_string(id) + " (ggml defines 0..42)",
                       errc::unsupported_type);
    }
}

TEST_CASE("ne[0] that is not a multiple of the block size is rejected at the type") {
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {33}, qtype::q8_0, 0).pad_to(32).zeros(64),
                   ne0_of_t + 8, "ne[0] = 33 is not a multiple of q8_0's block size 32");
}

namespace {
// One tensor info with a one-letter name and one dimension ends at 57; its offset field is at 49.
constexpr uint64_t offset_of_t = 49;
constexpr uint64_t offset_of_u = 57 + 9 + 4 + 8 + 4;  // the second such tensor info
}  // namespace

TEST_CASE("tensor data that runs past the end of the file is rejected at the tensor's offset field") {
    // Data starts at 64; 8 floats need 32 bytes, the file has 16 after it.
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {8}, qtype::f32, 0).pad_to(32).zeros(16), offset_of_t,
                   "tensor 't': data [0, +32 bytes) runs past the end");
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {8}, qtype::f32, uint64_t(1) << 63).pad_to(32).zeros(64),
                   offset_of_t, "runs past the end");
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {8}, qtype::f32, 0), offset_of_t, "runs past the end");
}

TEST_CASE("a tensor offset that is not a multiple of the alignment is rejected at the offset field") {
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {8}, qtype::f32, 16).pad_to(32).zeros(64), offset_of_t,
                   "data offset 16 is not a multiple of the alignment 32");
}

TEST_CASE("overlapping tensors are rejected at the offset field of the later one") {
    const auto b = gguf_bytes{}
                       .header(2, 0)
                       .tensor_info("t", {16}, qtype::f32, 0)   // [0, 64)
                       .tensor_info("u", {8}, qtype::f32, 32)   // [32, 64)
                       .pad_to(32)
                       .zeros(96);
    check_rejected(b, offset_of_u, "tensor 'u' data at 32 overlaps tensor 't' data [0, 64)");
}

TEST_CASE("a duplicate tensor name is rejected at its second tensor info") {
    const auto b = gguf_bytes{}
                       .header(2, 0)
                       .tensor_info("t", {8}, qtype::f32, 0)
                       .tensor_info("t", {8}, qtype::f32, 32)
                       .pad_to(32)
                       .zeros(64);
    check_rejected(b, 57, "tensor 't': duplicate tensor name");
}

TEST_CASE("a valid hand-built file with one tensor is accepted") {
    auto b = gguf_bytes{}.header(1, 1).kv_u32("k", 7).tensor_info("t", {8}, qtype::f32, 0).pad_to(32);
    const uint64_t data_at = b.size();
    for (int i = 0; i < 8; ++i) b.put(float(i));
    const auto f = parse_exact(b.bytes);
    CHECK(f.data_offset() == data_at);
    CHECK(f.get<uint32_t>("k") == 7);
    REQUIRE(f.tensors().size() == 1);
    CHECK(f.tensor("t").size == 32);
    float x[8];
    std::memcpy(x, f.tensor("t").data, sizeof(x));
    CHECK(x[7] == 7.0f);
}

TEST_CASE("a file truncated at any byte before the end of its last tensor raises llmrt::error") {
    const auto full = llmrt_test::sample_writer().to_bytes();
    const auto f = parse_exact(full);
    uint64_t end_of_data = 0;
    for (const auto& t : f.tensors()) end_of_data = std::max(end_of_data, f.data_offset() + t.offset + t.size);
    REQUIRE(end_of_data <= full.size());

    uint64_t parsed = 0, wrong_code = 0, first_bad = 0;
    for (uint64_t n = 0; n < end_of_data; ++n) {
        try {
            parse_exact(std::span(full).first(n));
            if (parsed++ == 0) first_bad = n;
        } catch (const error& e) {
            if (e.code() != errc::corrupt_file && wrong_code++ == 0) first_bad = n;
        }
    }
    INFO("first truncation length that did not give corrupt_file: " << first_bad);
    CHECK(parsed == 0);
    CHECK(wrong_code == 0);
    // Only the zero padding after the last tensor can go without losing anything.
    for (uint64_t n = end_of_data; n <= full.size(); ++n) CHECK_NOTHROW(parse_exact(std::span(full).first(n)));
}

TEST_CASE("random byte changes never crash: the file parses or raises llmrt::error") {
    const auto full = llmrt_test::sample_writer().to_bytes();
    std::mt19937_64 rng(7);
    const uint8_t interesting[] = {0x00, 0x01, 0x07, 0x09, 0x0c, 0x0d, 0x20, 0x7f, 0x80, 0xff};
    int accepted = 0, rejected = 0;
    for (int trial = 0; trial < 4000; ++trial) {
        auto bytes = full;
        // Mostly the metadata and tensor infos: that is where the structure lies.
        const int changes = 1 + int(rng() % 4);
        for (int c = 0; c < changes; ++c) {
            const std::size_t at = rng() % 3 == 0 ? rng() % bytes.size() : rng() % std::min<std::size_t>(bytes.size(), 2048);
            bytes[at] = std::byte(rng() % 2 ? interesting[rng() % std::size(interesting)] : uint8_t(rng()));
        }
        try {
            parse_exact(bytes);
            ++accepted;
        } catch (const error&) {
            ++rejected;
        }
    }
    MESSAGE("random changes: " << accepted << " files still parse, " << rejected << " rejected");
    CHECK(rejected > 0);
}
