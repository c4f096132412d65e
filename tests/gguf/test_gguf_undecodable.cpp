// Tensors of types ggml defines but llmrt cannot decode (iq2_xxs, iq3_s, tq1_0, i32): the reader
// lists them, sized from ggml's table, and only asking for their qtype raises an error.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "error_message.hpp"
#include "gguf_bytes.hpp"
#include "sample_gguf.hpp"
#include "scratch_dir.hpp"

using namespace llmrt;
using llmrt_test::check_rejected;
using llmrt_test::gguf_bytes;
using llmrt_test::parse_exact;

namespace {

// The sample file's tensors with the undecodable ones between them.
gguf::writer mixed_writer(uint32_t alignment = 32) {
    gguf::writer w(alignment);
    w.set("general.architecture", std::string("llama"));
    w.add_tensor("f32.first", qtype::f32, {8}, llmrt_test::tensor_bytes(qtype::f32, 1, 8, 1));
    llmrt_test::add_undecodable_tensors(w);
    llmrt_test::add_sample_tensors(w);
    return w;
}

using llmrt_test::error_message;

}  // namespace

TEST_CASE("the sample types are ones llmrt cannot decode") {
    for (const auto& s : llmrt_test::undecodable_samples()) {
        CAPTURE(s.name);
        CHECK_FALSE(is_in<all_types>(qtype(s.id)));
        CHECK(std::string(gguf::ggml_type_name(s.id)) == s.name);
    }
}

TEST_CASE("ggml's type table agrees with llmrt on the name, block size and bytes of every type llmrt decodes") {
    all_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        CAPTURE(B::name);
        const gguf::ggml_type_info* t = gguf::find_ggml_type(uint32_t(B::id));
        REQUIRE(t != nullptr);
        CHECK(t->id == uint32_t(B::id));
        CHECK(std::string(t->name) == B::name);
        CHECK(int64_t(t->block_size) == B::block_size);
        CHECK(t->type_size == sizeof(B));
    });
}

TEST_CASE("a file with tensors of types llmrt cannot decode lists every tensor with its name, type, shape, "
          "size and offset") {
    for (uint32_t alignment : {32u, 1u, 256u}) {
        CAPTURE(alignment);
        const auto w = mixed_writer(alignment);
        const auto bytes = w.to_bytes();
        const auto f = parse_exact(bytes);
        REQUIRE(f.tensors().size() == w.tensors().size());
        // Names, type ids, shapes, offsets, sizes and bytes, as the writer laid them out.
        CHECK(llmrt_test::manifest(f) == llmrt_test::manifest(w));
        for (const auto& s : llmrt_test::undecodable_samples()) {
            CAPTURE(s.name);
            const auto& t = f.tensor(std::string(s.name) + ".weight");
            CHECK(t.type_id == s.id);
            CHECK(std::string(t.type_name()) == s.name);
            CHECK_FALSE(t.decodable());
            CHECK(t.n_dims == s.shape.size());
            for (std::size_t d = 0; d < s.shape.size(); ++d) CHECK(t.ne[d] == s.shape[d]);
            CHECK(t.size == llmrt_test::ggml_bytes(s.id, s.shape));
            CHECK(t.offset % alignment == 0);
            CHECK(t.bytes().data() == f.bytes().data() + f.data_offset() + t.offset);
        }
        // The types llmrt decodes still give their qtype.
        CHECK(f.tensor("f32.first").type() == qtype::f32);
        CHECK(f.tensor("q4_K.weight").type() == qtype::q4_K);
        CHECK(std::string(f.tensor("q4_K.weight").type_name()) == "q4_K");
    }
}

TEST_CASE("listing a tensor of a type llmrt cannot decode never throws") {
    const auto f = parse_exact(mixed_writer().to_bytes());
    std::size_t undecodable = 0;
    CHECK_NOTHROW([&] {
        for (const auto& t : f.tensors()) {
            // Appended piece by piece: g++ 12 at -O3 warns (-Wrestrict) on a chain of operator+.
            std::string line = t.name;
            auto add = [&](const std::string& piece) { line.append(" ").append(piece); };
            add(t.type_name());
            add(std::to_string(t.type_id));
            for (uint32_t d = 0; d < t.n_dims; ++d) add(std::to_string(t.ne[d]));
            add(std::to_string(t.offset));
            add(std::to_string(t.size));
            add(std::to_string(t.elements()));
            add(std::to_string(t.bytes().size()));
            undecodable += t.decodable() ? 0 : 1;
            CHECK(f.find_tensor(t.name) == &t);
            CHECK(&f.tensor(t.name) == &t);
        }
    }());
    CHECK(undecodable == llmrt_test::undecodable_samples().size());
}

TEST_CASE("asking for the qtype of a tensor llmrt cannot decode raises unsupported_type naming the tensor and "
          "the type") {
    const auto f = parse_exact(mixed_writer().to_bytes());
    for (const auto& s : llmrt_test::undecodable_samples()) {
        CAPTURE(s.name);
        const auto& t = f.tensor(std::string(s.name) + ".weight");
        const std::string message = error_message([&] { (void)t.type(); }, errc::unsupported_type);
        INFO("message: " << message);
        CHECK(message.find("tensor '" + std::string(s.name) + ".weight' has type " + s.name + " (ggml type id " +
                           std::to_string(s.id) + "), which llmrt cannot decode") != std::string::npos);
        CHECK(message.find("it decodes f32, f16") != std::string::npos);
    }
}

TEST_CASE("a file with tensors llmrt cannot decode opens through mmap and writes back to the same bytes") {
    const auto w = mixed_writer(64);
    const auto path = llmrt_test::scratch_dir() / "undecodable.gguf";
    w.write(path);
    const auto f = gguf::file::open(path);
    CHECK(llmrt_test::manifest(f) == llmrt_test::manifest(w));
    CHECK(std::string(f.tensor("iq3_s.weight").type_name()) == "iq3_s");

    gguf::writer copy(64);
    for (const auto& [key, v] : f.metadata()) copy.set(key, v);
    for (const auto& t : f.tensors())
        copy.add_tensor_view(t.name, qtype(t.type_id), std::span(t.ne).first(t.n_dims), t.bytes());
    CHECK(copy.to_bytes() == w.to_bytes());
}

TEST_CASE("a tensor of a type llmrt cannot decode is sized exactly from ggml's block size and bytes per block") {
    // iq2_xxs: 256 elements take 66 bytes. The tensor info ends at 57; data starts at 64.
    const auto one_block = [](std::size_t data_bytes) {
        return gguf_bytes{}.header(1, 0).tensor_info("t", {256}, qtype(16), 0).pad_to(32).zeros(data_bytes);
    };
    CHECK(parse_exact(one_block(66).bytes).tensor("t").size == 66);
    check_rejected(one_block(65), 49, "tensor 't': data [0, +66 bytes) runs past the end");
    check_rejected(gguf_bytes{}.header(1, 0).tensor_info("t", {128}, qtype(16), 0).pad_to(32).zeros(66), 45,
                   "tensor 't': ne[0] = 128 is not a multiple of iq2_xxs's block size 256");
    // tq1_0 next to f32: its 54 bytes end before the next tensor's aligned offset, 64.
    const auto b = gguf_bytes{}
                       .header(2, 0)
                       .tensor_info("t", {256}, qtype(34), 0)
                       .tensor_info("u", {8}, qtype::f32, 64)
                       .pad_to(32)
                       .zeros(96);
    const auto f = parse_exact(b.bytes);
    CHECK(f.tensor("t").size == 54);
    CHECK(f.tensor("u").offset == 64);
}

TEST_CASE("the writer takes any type ggml defines and sizes it from ggml's table") {
    gguf::writer w;
    const std::vector<std::byte> bytes(66 * 2);
    w.add_tensor("iq2_xxs", qtype(16), {256, 2}, bytes);
    CHECK(error_message([&] { w.add_tensor("short", qtype(16), {256, 3}, bytes); }, errc::shape_mismatch)
              .find("tensor 'short' of iq2_xxs with shape [256, 3] needs 198 bytes, got 132") != std::string::npos);
    CHECK(error_message([&] { w.add_tensor("odd", qtype(21), {300}, bytes); }, errc::invalid_argument)
              .find("ne[0] = 300 is not a multiple of iq3_s's block size 256") != std::string::npos);
    CHECK(parse_exact(w.to_bytes()).tensor("iq2_xxs").size == 132);
}
