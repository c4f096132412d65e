// Every weight type against ggml's own reference codecs, bit for bit.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "golden.hpp"

using namespace llmrt;

namespace {

// Index of the first differing element, or -1.
template <class T>
long first_difference(const T* a, const T* b, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
        if (std::memcmp(a + i, b + i, sizeof(T)) != 0) return long(i);
    return -1;
}

template <class F>
void for_each_weight_type(F&& f) {
    weight_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        SUBCASE(B::name) { f(tag, llmrt_test::read_golden(llmrt_test::golden_path(B::name))); }
    });
}

}  // namespace

TEST_CASE("golden files describe the types llmrt declares") {
    for_each_weight_type([](auto tag, const llmrt_test::golden_file& g) {
        using B = typename decltype(tag)::type;
        CHECK(g.type == uint32_t(B::id));
        CHECK(g.row_size == row_size(B::id, g.n));
    });
}

TEST_CASE("dequantizing ggml's quantized bytes gives ggml's floats bit for bit") {
    for_each_weight_type([](auto tag, const llmrt_test::golden_file& g) {
        using B = typename decltype(tag)::type;
        std::vector<float> out(g.dq.size());
        dequantize(B::id, g.q.data(), out.data(), int64_t(out.size()));
        const long at = first_difference(out.data(), g.dq.data(), out.size());
        INFO(std::string(B::name) << ": first differing float at index " << at);
        CHECK(at == -1);
    });
}

TEST_CASE("dequantizing random block bytes gives ggml's floats bit for bit") {
    for_each_weight_type([](auto tag, const llmrt_test::golden_file& g) {
        using B = typename decltype(tag)::type;
        std::vector<float> out(g.rdq.size());
        dequantize(B::id, g.rb.data(), out.data(), int64_t(out.size()));
        const long at = first_difference(out.data(), g.rdq.data(), out.size());
        INFO(std::string(B::name) << ": first differing float at index " << at);
        CHECK(at == -1);
    });
}

TEST_CASE("quantizing ggml's inputs gives ggml's bytes, row by row") {
    for_each_weight_type([](auto tag, const llmrt_test::golden_file& g) {
        using B = typename decltype(tag)::type;
        for (uint32_t r = 0; r < g.nrows_q; ++r) {
            std::vector<uint8_t> out(g.row_size);
            quantize(B::id, g.in.data() + std::size_t(r) * g.n, out.data(), g.n);
            const long at = first_difference(out.data(), g.q.data() + std::size_t(r) * g.row_size, g.row_size);
            INFO(std::string(B::name) << " row " << r << ": first differing byte at offset " << at << " (block "
                         << (at < 0 ? -1 : at / long(sizeof(B))) << ", byte " << (at < 0 ? -1 : at % long(sizeof(B)))
                         << " within it)");
            CHECK(at == -1);
        }
    });
}
