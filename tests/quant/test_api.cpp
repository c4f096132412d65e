// The runtime-typed API: row_size, quantize, dequantize, names and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <llmrt/llmrt.hpp>

using namespace llmrt;

TEST_CASE("qtype values are the GGUF type ids") {
    CHECK(uint32_t(qtype::f32) == 0);
    CHECK(uint32_t(qtype::f16) == 1);
    CHECK(uint32_t(qtype::q4_0) == 2);
    CHECK(uint32_t(qtype::q4_1) == 3);
    CHECK(uint32_t(qtype::q5_0) == 6);
    CHECK(uint32_t(qtype::q5_1) == 7);
    CHECK(uint32_t(qtype::q8_0) == 8);
    CHECK(uint32_t(qtype::q8_1) == 9);
    CHECK(uint32_t(qtype::q2_K) == 10);
    CHECK(uint32_t(qtype::q3_K) == 11);
    CHECK(uint32_t(qtype::q4_K) == 12);
    CHECK(uint32_t(qtype::q5_K) == 13);
    CHECK(uint32_t(qtype::q6_K) == 14);
    CHECK(uint32_t(qtype::q8_K) == 15);
    CHECK(uint32_t(qtype::iq4_nl) == 20);
    CHECK(uint32_t(qtype::iq4_xs) == 23);
    CHECK(uint32_t(qtype::bf16) == 30);
    CHECK(uint32_t(qtype::mxfp4) == 39);
}

TEST_CASE("row_size gives ggml's bytes per row for every type") {
    CHECK(row_size(qtype::f32, 7) == 28);
    CHECK(row_size(qtype::f16, 7) == 14);
    CHECK(row_size(qtype::bf16, 7) == 14);
    CHECK(row_size(qtype::q4_0, 64) == 36);
    CHECK(row_size(qtype::q4_K, 512) == 288);
    CHECK(row_size(qtype::q4_K, 0) == 0);
    // Every type against ggml's own figures (llmrt/gguf/ggml_types.hpp), which the GGUF reader
    // sizes tensors with: two blocks' bytes.
    all_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        const gguf::ggml_type_info* g = gguf::find_ggml_type(uint32_t(B::id));
        REQUIRE(g != nullptr);
        INFO(B::name);
        CHECK(std::string(g->name) == B::name);
        CHECK(int64_t(g->block_size) == B::block_size);
        CHECK(row_size(B::id, 2 * B::block_size) == 2 * std::size_t(g->type_size));
    });
}

TEST_CASE("a length that is not a multiple of the block size is an invalid_argument error") {
    std::vector<float> x(300);
    std::vector<uint8_t> q(4096);
    all_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        if constexpr (B::block_size == 1) return;
        const qtype t = B::id;  // blocks of 32 or more: 300 is never whole blocks
        CHECK_THROWS_AS(row_size(t, 300), error);
        CHECK_THROWS_AS(quantize(t, x.data(), q.data(), 300), error);
        CHECK_THROWS_AS(dequantize(t, q.data(), x.data(), 300), error);
        try {
            quantize(t, x.data(), q.data(), 300);
        } catch (const error& e) {
            CHECK(e.code() == errc::invalid_argument);
            CHECK(std::string(e.what()).find("300") != std::string::npos);
            CHECK(std::string(e.what()).find(name(t)) != std::string::npos);
        }
    });
}

TEST_CASE("every weight type's quantize_row and vec_dot refuse row lengths that are not whole blocks") {
    weight_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        using A = typename B::vec_dot_type;
        constexpr int64_t bs = B::block_size;
        std::vector<float> x(std::size_t(4 * bs), 1.0f);
        std::vector<B> w(4);
        std::vector<A> a(std::size_t(4 * bs / A::block_size));
        for (int64_t n : {bs + 4, 3 * bs / 2, -bs}) {
            INFO(std::string(B::name) << ", n = " << n);
            CHECK_THROWS_AS(quantize_row(x.data(), w.data(), n), error);
            CHECK_THROWS_AS(quantize_row(x.data(), a.data(), n), error);
            CHECK_THROWS_AS(vec_dot(w.data(), a.data(), n), error);
        }
    });
}

TEST_CASE("a negative length is an invalid_argument error") {
    float x = 0;
    uint8_t q[64];
    CHECK_THROWS_AS(row_size(qtype::q8_0, -32), error);
    CHECK_THROWS_AS(quantize(qtype::q8_0, &x, q, -32), error);
    CHECK_THROWS_AS(dequantize(qtype::q8_0, q, &x, -32), error);
}

TEST_CASE("an unknown type is an unsupported_type error naming its id") {
    float x[32] = {};
    uint8_t q[64] = {};
    // 4 and 5: ids ggml has removed; 16: iq2_xxs, which llmrt does not decode; 40: nvfp4, likewise.
    for (uint32_t id : {4u, 5u, 16u, 40u, 1000u}) {
        const qtype t = qtype(id);
        CHECK_THROWS_AS(row_size(t, 32), error);
        CHECK_THROWS_AS(quantize(t, x, q, 32), error);
        try {
            dequantize(t, q, x, 32);
            FAIL("dequantize accepted qtype " << id);
        } catch (const error& e) {
            CHECK(e.code() == errc::unsupported_type);
            CHECK(std::string(e.what()).find(std::to_string(id)) != std::string::npos);
        }
    }
}

TEST_CASE("null pointers with a non-zero length are rejected") {
    float x[32] = {};
    CHECK_THROWS_AS(quantize(qtype::q8_0, nullptr, x, 32), error);
    CHECK_THROWS_AS(dequantize(qtype::q8_0, nullptr, x, 32), error);
    CHECK_NOTHROW(quantize(qtype::q8_0, nullptr, nullptr, 0));
}

TEST_CASE("type names round-trip through qtype_from_name") {
    all_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        CHECK(qtype_from_name(B::name) == B::id);
        CHECK(std::string(name(B::id)) == B::name);
    });
    CHECK_THROWS_AS(qtype_from_name("q4_k_m"), error);
    CHECK(std::string(name(qtype(77))) == "unknown");
}

TEST_CASE("dispatch reaches the block type of every listed qtype") {
    all_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        const auto size = dispatch(B::id, "test", [](auto inner) { return sizeof(typename decltype(inner)::type); });
        CHECK(size == sizeof(B));
    });
    CHECK_THROWS_AS(dispatch<weight_types>(qtype::f16, "mmvq", [](auto) { return 0; }), error);
}

// Round-trip error of each type on unit Gaussian data, as RMSE relative to the data's RMS: at most
// 10% above the figure the type's header gives (B::round_trip_rmse, measured with ggml's reference
// quantizers' algorithms), so a regression in any codec fails here.
TEST_CASE("round-trip error on Gaussian data stays within 10% of each type's stated figure") {
    const int64_t n = 256 * 64;
    std::mt19937 rng(20261122);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n), y(n);
    for (auto& v : x) v = normal(rng);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double rms = std::sqrt(ss / double(n));
    all_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        std::vector<uint8_t> q(row_size(B::id, n));
        quantize(B::id, x.data(), q.data(), n);
        dequantize(B::id, q.data(), y.data(), n);
        double se = 0;
        for (int64_t i = 0; i < n; ++i) se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
        const double rel = std::sqrt(se / double(n)) / rms;
        INFO(B::name << ": relative RMSE " << rel << ", stated " << B::round_trip_rmse);
        CHECK(rel <= 1.1 * B::round_trip_rmse);
        // The stated figure is a measurement, not a loose bound: within 10% from below too.
        CHECK(rel >= 0.9 * B::round_trip_rmse);
    });
}

TEST_CASE("a row_size past 2^63 - 1 bytes is an invalid_argument error naming the length, not a wrapped size") {
    // 4 · 2^62 bytes wrap to 0 in size_t arithmetic.
    try {
        (void)row_size(qtype::f32, int64_t(1) << 62);
        FAIL("row_size(f32, 2^62) returned");
    } catch (const error& e) {
        CHECK(e.code() == errc::invalid_argument);
        CHECK(std::string(e.what()).find("4611686018427387904 elements of f32") != std::string::npos);
    }
    CHECK_THROWS_AS((void)row_size(qtype::q8_0, INT64_MAX / 32 * 32), error);  // 2^58 - 1 blocks of 34 bytes
    // The largest sizes that fit are still computed exactly.
    CHECK(row_size(qtype::f32, (int64_t(1) << 61) - 1) == std::size_t((int64_t(1) << 61) - 1) * 4);
    CHECK(row_size(qtype::q8_0, int64_t(1) << 56) == std::size_t(int64_t(1) << 51) * 34);
}
