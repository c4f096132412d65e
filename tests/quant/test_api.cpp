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
    CHECK(row_size(qtype::q4_1, 64) == 40);
    CHECK(row_size(qtype::q5_0, 64) == 44);
    CHECK(row_size(qtype::q5_1, 64) == 48);
    CHECK(row_size(qtype::iq4_nl, 64) == 36);
    CHECK(row_size(qtype::iq4_xs, 512) == 272);
    CHECK(row_size(qtype::q8_0, 64) == 68);
    CHECK(row_size(qtype::q8_1, 64) == 72);
    CHECK(row_size(qtype::q2_K, 512) == 168);
    CHECK(row_size(qtype::q3_K, 512) == 220);
    CHECK(row_size(qtype::q4_K, 512) == 288);
    CHECK(row_size(qtype::q5_K, 512) == 352);
    CHECK(row_size(qtype::q6_K, 512) == 420);
    CHECK(row_size(qtype::q8_K, 512) == 584);
    CHECK(row_size(qtype::mxfp4, 64) == 34);
    CHECK(row_size(qtype::q4_K, 0) == 0);
}

TEST_CASE("a length that is not a multiple of the block size is an invalid_argument error") {
    std::vector<float> x(300);
    std::vector<uint8_t> q(4096);
    for (qtype t : {qtype::q8_0, qtype::q4_K, qtype::mxfp4, qtype::q5_1, qtype::iq4_xs}) {
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
    }
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

// Round-trip error of each type on unit Gaussian data, as RMSE relative to the data's RMS.
// The bounds sit about 10% above what ggml's reference quantizers achieve (measured: q8_0 0.0053,
// q6_K 0.0177, q5_K 0.0359, q4_K 0.0711, q3_K 0.150, q2_K 0.294, mxfp4 0.115, q4_0 0.0858,
// q4_1 0.0776, q5_0 0.0427, q5_1 0.0375, iq4_nl 0.0760, iq4_xs 0.0766), so a regression in any
// codec fails here.
TEST_CASE("round-trip error on Gaussian data stays within each type's bound") {
    struct bound {
        qtype t;
        double max_relative_rmse;
    };
    const bound bounds[] = {
        {qtype::f32, 0.0},       {qtype::f16, 2.3e-4},  {qtype::bf16, 1.85e-3}, {qtype::q8_0, 5.9e-3},
        {qtype::q8_1, 5.9e-3},   {qtype::q8_K, 7.7e-3}, {qtype::q6_K, 1.95e-2}, {qtype::q5_K, 3.95e-2},
        {qtype::q4_K, 7.8e-2},   {qtype::q3_K, 1.65e-1}, {qtype::q2_K, 3.2e-1}, {qtype::mxfp4, 1.27e-1},
        {qtype::q4_0, 9.45e-2},  {qtype::q4_1, 8.55e-2}, {qtype::q5_0, 4.7e-2},  {qtype::q5_1, 4.15e-2},
        {qtype::iq4_nl, 8.4e-2}, {qtype::iq4_xs, 8.45e-2},
    };
    const int64_t n = 256 * 64;
    std::mt19937 rng(20261122);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n), y(n);
    for (auto& v : x) v = normal(rng);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double rms = std::sqrt(ss / double(n));
    for (const bound& b : bounds) {
        std::vector<uint8_t> q(row_size(b.t, n));
        quantize(b.t, x.data(), q.data(), n);
        dequantize(b.t, q.data(), y.data(), n);
        double se = 0;
        for (int64_t i = 0; i < n; ++i) se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
        const double rel = std::sqrt(se / double(n)) / rms;
        INFO(std::string(name(b.t)) << ": relative RMSE " << rel << ", bound " << b.max_relative_rmse);
        CHECK(rel <= b.max_relative_rmse);
    }
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
