// The CPU references every kernel is tested against, reachable from one header:
// quantize / dequantize / row_size (llmrt/quant/codec.hpp) and cpu::matvec (llmrt/cpu/matvec.hpp),
// plus two conveniences that return whole matrices and results as vectors.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/cpu/matvec.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::testing {

// Quantizes a rows × k float matrix (row-major, row r at w + r·k) into t, row by row:
// rows·row_size(t, k) bytes, row r at byte r·row_size(t, k), the layout the kernels read.
inline std::vector<uint8_t> quantize_matrix(qtype t, const float* w, int64_t rows, int64_t k) {
    check(rows >= 0, errc::shape_mismatch,
          [&] { return "testing::quantize_matrix: negative row count " + std::to_string(rows); });
    const std::size_t row_bytes = row_size(t, k);  // checks k against t's block size
    check(rows == 0 || k == 0 || w != nullptr, errc::invalid_argument, "testing::quantize_matrix: null matrix");
    std::vector<uint8_t> q(row_bytes * std::size_t(rows));
    for (int64_t r = 0; r < rows; ++r) quantize(t, w + r * k, q.data() + std::size_t(r) * row_bytes, k);
    return q;
}
// The same for a whole vector of rows of k floats: w.size() / k rows.
inline std::vector<uint8_t> quantize_matrix(qtype t, const std::vector<float>& w, int64_t k) {
    check(k > 0 && int64_t(w.size()) % k == 0, errc::shape_mismatch, [&] {
        return "testing::quantize_matrix: " + std::to_string(w.size()) + " floats are not whole rows of k = " +
               std::to_string(k);
    });
    return quantize_matrix(t, w.data(), int64_t(w.size()) / k, k);
}

// The reference Y = W·X for W (rows × k of t, as quantize_matrix lays it out) and X (ncols dense
// columns of k floats): ncols dense columns of `rows` floats, column c at c·rows.
// act picks how the activations enter the dot (see cpu::activation_format); q8_1 is what the GPU
// mat-vec kernels compute.
inline std::vector<float> reference_matvec(qtype t, const void* w, const float* x, int64_t rows, int64_t k,
                                           int64_t ncols,
                                           cpu::activation_format act = cpu::activation_format::q8_1) {
    check(rows >= 0 && ncols >= 1, errc::shape_mismatch, [&] {
        return "testing::reference_matvec: " + std::to_string(rows) + " rows and " + std::to_string(ncols) +
               " columns; need rows >= 0 and ncols >= 1";
    });
    std::vector<float> y(std::size_t(rows) * std::size_t(ncols));
    cpu::matvec_shape shape;
    shape.rows = rows;
    shape.k = k;
    shape.ncols = ncols;
    cpu::matvec(t, w, x, y.data(), shape, act);
    return y;
}

}  // namespace llmrt::testing
