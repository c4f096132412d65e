// The reference conveniences: quantize_matrix and reference_matvec.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "llmrt/testing.hpp"

using namespace llmrt;
using namespace llmrt::testing;

// q8_0 and mxfp4 only: the k-quant quantizers may not be finished while this toolkit is.
TEST_CASE("quantize_matrix lays each row out at a row_size stride, as quantize makes it") {
    for (qtype t : {qtype::q8_0, qtype::mxfp4}) {
        CAPTURE(name(t));
        const int64_t rows = 5, k = 128;
        const std::vector<float> w = generate(distribution::heavy_tailed, rows * k, 21);
        const std::vector<uint8_t> q = quantize_matrix(t, w.data(), rows, k);
        const std::size_t row_bytes = row_size(t, k);
        REQUIRE(q.size() == row_bytes * std::size_t(rows));
        std::vector<uint8_t> one(row_bytes);
        for (int64_t r = 0; r < rows; ++r) {
            quantize(t, w.data() + r * k, one.data(), k);
            CHECK(std::memcmp(one.data(), q.data() + std::size_t(r) * row_bytes, row_bytes) == 0);
        }
    }
}

TEST_CASE("quantize_matrix of a vector takes as many rows as the vector holds") {
    const int64_t rows = 3, k = 64;
    const std::vector<float> w = gaussian(rows * k, 22);
    CHECK(quantize_matrix(qtype::q8_0, w, k) == quantize_matrix(qtype::q8_0, w.data(), rows, k));
    CHECK_THROWS_AS(quantize_matrix(qtype::q8_0, w, 80), llmrt::error);  // 192 floats are not rows of 80
    CHECK_THROWS_AS(quantize_matrix(qtype::q8_0, w, 0), llmrt::error);
}

TEST_CASE("reference_matvec gives each of 1 to 8 columns the dot of the dequantized rows") {
    for (qtype t : {qtype::q8_0, qtype::mxfp4}) {
        const int64_t rows = 7, k = 96;
        const std::vector<float> w = gaussian(rows * k, 31);
        const std::vector<uint8_t> q = quantize_matrix(t, w.data(), rows, k);
        std::vector<float> wd(std::size_t(rows * k));
        dequantize(t, q.data(), wd.data(), rows * k);
        for (int64_t ncols = 1; ncols <= 8; ++ncols) {
            CAPTURE(name(t));
            CAPTURE(ncols);
            const std::vector<float> x = uniform(k * ncols, 32 + uint64_t(ncols));
            const std::vector<float> y = reference_matvec(t, q.data(), x.data(), rows, k, ncols, cpu::activation_format::f32);
            REQUIRE(y.size() == std::size_t(rows * ncols));
            std::vector<float> expected(y.size());
            for (int64_t c = 0; c < ncols; ++c)
                for (int64_t r = 0; r < rows; ++r) {
                    double dot = 0.0;
                    for (int64_t i = 0; i < k; ++i) dot += double(wd[std::size_t(r * k + i)]) * double(x[std::size_t(c * k + i)]);
                    expected[std::size_t(c * rows + r)] = float(dot);
                }
            CHECK(compare(y.data(), expected.data(), rows * ncols).max_abs_error == 0.0);
        }
    }
}

TEST_CASE("reference_matvec rounds the activations through q8_1 by default, close to the float result") {
    const int64_t rows = 16, k = 256, ncols = 3;
    const std::vector<float> w = gaussian(rows * k, 41), x = gaussian(k * ncols, 42);
    const std::vector<uint8_t> q = quantize_matrix(qtype::q8_0, w.data(), rows, k);
    const std::vector<float> y_q8_1 = reference_matvec(qtype::q8_0, q.data(), x.data(), rows, k, ncols);
    const std::vector<float> y_f32 =
        reference_matvec(qtype::q8_0, q.data(), x.data(), rows, k, ncols, cpu::activation_format::f32);
    const double e = nmse(y_q8_1.data(), y_f32.data(), rows * ncols);
    CHECK(e > 0.0);   // the rounding is applied
    CHECK(e < 1e-3);  // and is only 8-bit rounding
}

TEST_CASE("the reference conveniences reject shapes that do not fit with llmrt::error") {
    const std::vector<float> w(64, 1.0f);
    CHECK_THROWS_AS(quantize_matrix(qtype::q8_0, w.data(), 2, 30), llmrt::error);
    CHECK_THROWS_AS(quantize_matrix(qtype::q8_0, w.data(), -1, 32), llmrt::error);
    const std::vector<uint8_t> q = quantize_matrix(qtype::q8_0, w.data(), 2, 32);
    CHECK_THROWS_AS(reference_matvec(qtype::q8_0, q.data(), w.data(), 2, 32, 0), llmrt::error);
    CHECK_THROWS_AS(reference_matvec(qtype::q8_0, q.data(), w.data(), 2, 33, 1), llmrt::error);
    CHECK(quantize_matrix(qtype::q8_0, nullptr, 0, 32).empty());
}

// The bound docs/testing.md recommends: a kernel that computes what the reference computes, but
// sums in float in another order, stays far inside 1e-10; a kernel that rounds its activations
// differently (f32 against q8_1) does not.
TEST_CASE("a float kernel in another summation order stays inside the recommended NMSE bound of 1e-10") {
    const int64_t rows = 64, k = 1024;
    for (qtype t : {qtype::q8_0, qtype::mxfp4})
        for (distribution d : all_distributions) {
            CAPTURE(name(t));
            CAPTURE(to_string(d));
            const std::vector<float> w = generate(d, rows * k, 71), x = generate(d, k, 72);
            const std::vector<uint8_t> q = quantize_matrix(t, w.data(), rows, k);
            const std::vector<float> ref = reference_matvec(t, q.data(), x.data(), rows, k, 1);
            const std::vector<float> ref_f32 =
                reference_matvec(t, q.data(), x.data(), rows, k, 1, cpu::activation_format::f32);

            // The activations as the q8_1 reference sees them, and W dequantized.
            std::vector<q8_1> xq(std::size_t(k / 32));
            std::vector<float> xs(static_cast<std::size_t>(k)), wd(static_cast<std::size_t>(rows * k));
            quantize_row(x.data(), xq.data(), k);
            dequantize_row(xq.data(), xs.data(), k);
            dequantize(t, q.data(), wd.data(), rows * k);
            // 32 float lanes, element i in lane i % 32, then a tree: a warp's order, not the reference's.
            std::vector<float> y(static_cast<std::size_t>(rows));
            for (int64_t r = 0; r < rows; ++r) {
                float lane[32] = {};
                for (int64_t i = 0; i < k; ++i) lane[i % 32] += wd[std::size_t(r * k + i)] * xs[std::size_t(i)];
                for (int s = 16; s > 0; s /= 2)
                    for (int l = 0; l < s; ++l) lane[l] += lane[l + s];
                y[std::size_t(r)] = lane[0];
            }
            const double e = nmse(y.data(), ref.data(), rows);
            CHECK(e < 1e-12);
            CHECK(nmse(ref_f32.data(), ref.data(), rows) > 1e-7);
        }
}
