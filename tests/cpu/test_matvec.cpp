// The CPU reference mat-vec, the ground truth of every GPU kernel.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <llmrt/llmrt.hpp>
#include <llmrt/testing.hpp>

using namespace llmrt;

namespace {

using testing::gaussian;
using testing::nmse;

struct problem {
    qtype t;
    int64_t rows, k, ncols;
    std::vector<uint8_t> w;
    std::vector<float> wf, x;
};

problem make_problem(qtype t, int64_t rows, int64_t k, int64_t ncols, uint32_t seed) {
    problem p{t, rows, k, ncols, {}, {}, gaussian(k * ncols, seed + 1)};
    const auto w = gaussian(rows * k, seed);
    p.w.resize(row_size(t, k) * std::size_t(rows));
    p.wf.resize(std::size_t(rows * k));
    for (int64_t r = 0; r < rows; ++r) {
        quantize(t, w.data() + r * k, p.w.data() + std::size_t(r) * row_size(t, k), k);
        dequantize(t, p.w.data() + std::size_t(r) * row_size(t, k), p.wf.data() + r * k, k);
    }
    return p;
}

}  // namespace

TEST_CASE("with float activations each output is the double dot of the dequantized row") {
    weight_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        const auto p = make_problem(B::id, 13, 2 * 256, 3, 7);
        std::vector<float> y(std::size_t(p.rows * p.ncols));
        cpu::matvec(p.t, p.w.data(), p.x.data(), y.data(), {p.rows, p.k, p.ncols});
        for (int64_t c = 0; c < p.ncols; ++c)
            for (int64_t r = 0; r < p.rows; ++r) {
                double expect = 0;
                for (int64_t i = 0; i < p.k; ++i) expect += double(p.wf[r * p.k + i]) * p.x[c * p.k + i];
                REQUIRE(y[c * p.rows + r] == float(expect));
            }
    });
}

TEST_CASE("q8_1 and ggml activations stay close to float activations") {
    weight_types::for_each([](auto tag) {
        using B = typename decltype(tag)::type;
        const auto p = make_problem(B::id, 64, 4 * 256, 2, 11);
        std::vector<float> yf(128), y8(128), yg(128);
        cpu::matvec(p.t, p.w.data(), p.x.data(), yf.data(), {p.rows, p.k, p.ncols}, cpu::activation_format::f32);
        cpu::matvec(p.t, p.w.data(), p.x.data(), y8.data(), {p.rows, p.k, p.ncols}, cpu::activation_format::q8_1);
        cpu::matvec(p.t, p.w.data(), p.x.data(), yg.data(), {p.rows, p.k, p.ncols}, cpu::activation_format::ggml);
        INFO(B::name);
        CHECK(nmse(y8.data(), yf.data(), 128) < 1e-4);
        CHECK(nmse(yg.data(), yf.data(), 128) < 1e-4);
        CHECK(nmse(y8.data(), yf.data(), 128) > 0.0);  // the rounding is really applied
    });
}

TEST_CASE("each column's result does not depend on how many columns share the call") {
    const auto p = make_problem(qtype::q4_K, 9, 256, 8, 3);
    std::vector<float> all(9 * 8);
    cpu::matvec(p.t, p.w.data(), p.x.data(), all.data(), {9, 256, 8}, cpu::activation_format::q8_1);
    for (int64_t c = 0; c < 8; ++c) {
        std::vector<float> one(9);
        cpu::matvec(p.t, p.w.data(), p.x.data() + c * 256, one.data(), {9, 256, 1}, cpu::activation_format::q8_1);
        CHECK(std::memcmp(one.data(), all.data() + c * 9, 9 * sizeof(float)) == 0);
    }
}

TEST_CASE("strided columns are read and written at their strides and nowhere else") {
    const auto p = make_problem(qtype::q8_0, 5, 64, 2, 5);
    std::vector<float> x(2 * 100, 1e30f);
    std::memcpy(x.data(), p.x.data(), 64 * sizeof(float));
    std::memcpy(x.data() + 100, p.x.data() + 64, 64 * sizeof(float));
    std::vector<float> y(2 * 8, -7.0f), packed(10);
    cpu::matvec(p.t, p.w.data(), x.data(), y.data(), {5, 64, 2, 100, 8});
    cpu::matvec(p.t, p.w.data(), p.x.data(), packed.data(), {5, 64, 2});
    for (int r = 0; r < 5; ++r) {
        CHECK(y[r] == packed[r]);
        CHECK(y[8 + r] == packed[5 + r]);
    }
    for (int r = 5; r < 8; ++r) CHECK(y[r] == -7.0f);
}

TEST_CASE("a mat-vec with a bad shape is a shape_mismatch error naming the shape") {
    const auto p = make_problem(qtype::q4_K, 4, 256, 1, 1);
    std::vector<float> y(4);
    CHECK_THROWS_AS(cpu::matvec(qtype::q4_K, p.w.data(), p.x.data(), y.data(), {4, 100, 1}), error);
    CHECK_THROWS_AS(cpu::matvec(qtype::q4_K, p.w.data(), p.x.data(), y.data(), {4, 256, 0}), error);
    CHECK_THROWS_AS(cpu::matvec(qtype::q4_K, p.w.data(), p.x.data(), y.data(), {4, 256, 1, 128}), error);
    try {
        cpu::matvec(qtype::q4_K, p.w.data(), p.x.data(), y.data(), {4, 100, 1});
    } catch (const error& e) {
        CHECK(e.code() == errc::shape_mismatch);
        CHECK(std::string(e.what()).find("4 x 100") != std::string::npos);
    }
}

TEST_CASE("ggml's integer dot is refused for unquantized weights") {
    std::vector<float> w(32, 1.0f), x(32, 1.0f), y(1);
    CHECK_THROWS_AS(cpu::matvec(qtype::f32, w.data(), x.data(), y.data(), {1, 32, 1}, cpu::activation_format::ggml), error);
    cpu::matvec(qtype::f32, w.data(), x.data(), y.data(), {1, 32, 1});
    CHECK(y[0] == 32.0f);
}

TEST_CASE("a null pointer that a non-empty shape reads or writes is an invalid_argument error naming it") {
    // k = 0 still writes rows x ncols zeros into Y, so a null Y is an error there too.
    const auto expect_null_error = [](auto&& call, const char* which) {
        try {
            call();
            FAIL("accepted a null ", which);
        } catch (const error& e) {
            CHECK(e.code() == errc::invalid_argument);
            CHECK(std::string(e.what()).find(std::string(which) + " is null") != std::string::npos);
        }
    };
    expect_null_error([] { cpu::matvec(qtype::q8_0, nullptr, nullptr, nullptr, {4, 0, 1}); }, "Y");
    std::byte scratch[1];
    expect_null_error(
        [&] {
            cpu::mul_mat(qtype::q8_0, nullptr, nullptr, nullptr, {4, 0, 1}, cpu::activation_format::f32, scratch, 1);
        },
        "Y");

    const auto p = make_problem(qtype::q8_0, 4, 64, 1, 3);
    std::vector<float> y(4);
    expect_null_error([&] { cpu::matvec(qtype::q8_0, nullptr, p.x.data(), y.data(), {4, 64, 1}); }, "W");
    expect_null_error([&] { cpu::matvec(qtype::q8_0, p.w.data(), nullptr, y.data(), {4, 64, 1}); }, "X");
    expect_null_error([&] { cpu::matvec(qtype::q8_0, p.w.data(), p.x.data(), nullptr, {4, 64, 1}); }, "Y");
}

TEST_CASE("an empty shape needs no pointers, and k = 0 writes zeros into Y") {
    cpu::matvec(qtype::q8_0, nullptr, nullptr, nullptr, {0, 0, 1});
    cpu::matvec(qtype::q8_0, nullptr, nullptr, nullptr, {0, 64, 1});
    std::vector<float> y(4, -1.0f);
    cpu::matvec(qtype::q8_0, nullptr, nullptr, y.data(), {4, 0, 1});
    for (float v : y) CHECK(v == 0.0f);
}
