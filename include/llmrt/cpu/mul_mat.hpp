// cpu::mul_mat: cpu::matvec with caller-provided scratch, so that a planned graph allocates
// nothing while it runs. Each output is the same expression in the same order as cpu::matvec
// (the dequantized row dotted in double with the activations as the chosen format rounds them),
// so both give identical bits, and a column's result does not depend on ncols.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/cpu/matvec.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::cpu {

// Bytes of scratch mul_mat needs for W of type t with k columns, ncols activation columns.
//   f32:  one dequantized row (k floats)
//   q8_1: one row, the rounded activations (k·ncols floats) and one column of Q8_1 blocks
//   ggml: every column in the type's vec_dot_type blocks
inline std::size_t mul_mat_scratch_bytes(qtype t, int64_t k, int64_t ncols, activation_format act) {
    const auto row = std::size_t(k) * sizeof(float);
    switch (act) {
        case activation_format::f32: return row;
        case activation_format::q8_1:
            return row + std::size_t(k) * std::size_t(ncols) * sizeof(float) + row_size(qtype::q8_1, k / 32 * 32);
        case activation_format::ggml:
            return dispatch(t, "cpu::mul_mat_scratch_bytes", [&](auto tag) -> std::size_t {
                using B = typename decltype(tag)::type;
                if constexpr (weight_block<B>) {
                    return row_size(B::vec_dot_type::id, k) * std::size_t(ncols);
                } else {
                    throw error(errc::unsupported_type,
                                std::string("cpu::mul_mat: ggml's integer dot has no pairing for ") + B::name);
                }
            });
    }
    return row;
}

template <quant_block B>
void mul_mat(const B* w, const float* x, float* y, matvec_shape shape, activation_format act, void* scratch,
             std::size_t scratch_bytes) {
    shape = detail::checked_shape(B::id, shape, w, x, y);
    const int64_t k = shape.k, nblocks = k / B::block_size;
    if (shape.rows == 0) return;
    check(act != activation_format::q8_1 || k % q8_1::block_size == 0, errc::shape_mismatch,
          [&] { return "cpu::mul_mat: k = " + std::to_string(k) + " is not a multiple of 32, as Q8_1 needs"; });
    const std::size_t need = mul_mat_scratch_bytes(B::id, k, shape.ncols, act);
    check(scratch != nullptr && scratch_bytes >= need, errc::invalid_argument, [&] {
        return "cpu::mul_mat: " + std::to_string(scratch_bytes) + " bytes of scratch, need " + std::to_string(need);
    });

    if (act == activation_format::ggml) {
        if constexpr (weight_block<B>) {
            using A = typename B::vec_dot_type;
            A* xq = static_cast<A*>(scratch);
            const int64_t col_blocks = k / A::block_size;
            for (int64_t c = 0; c < shape.ncols; ++c) quantize_row(x + c * shape.ldx, xq + c * col_blocks, k);
            for (int64_t r = 0; r < shape.rows; ++r)
                for (int64_t c = 0; c < shape.ncols; ++c)
                    y[c * shape.ldy + r] = vec_dot(w + r * nblocks, xq + c * col_blocks, k);
        }
        return;
    }

    float* wrow = static_cast<float*>(scratch);
    const float* xcols = x;
    int64_t ldx = shape.ldx;
    if (act == activation_format::q8_1) {
        float* xs = wrow + k;
        auto* xq = reinterpret_cast<q8_1*>(xs + k * shape.ncols);
        for (int64_t c = 0; c < shape.ncols; ++c) {
            quantize_row(x + c * shape.ldx, xq, k);
            dequantize_row(xq, xs + c * k, k);
        }
        xcols = xs;
        ldx = k;
    }
    for (int64_t r = 0; r < shape.rows; ++r) {
        dequantize_row(w + r * nblocks, wrow, k);
        for (int64_t c = 0; c < shape.ncols; ++c) y[c * shape.ldy + r] = float(detail::dot_f64(wrow, xcols + c * ldx, k));
    }
}

// Runtime-typed form: W of any type in all_types.
inline void mul_mat(qtype t, const void* w, const float* x, float* y, matvec_shape shape, activation_format act,
                    void* scratch, std::size_t scratch_bytes) {
    dispatch(t, "cpu::mul_mat", [&](auto tag) {
        using B = typename decltype(tag)::type;
        mul_mat(static_cast<const B*>(w), x, y, shape, act, scratch, scratch_bytes);
    });
}

// The mixture-of-experts form: W holds n_expert matrices of rows × k one after another; per
// column c and slot s < n_used, y[c][s] = W[ids[c][s]] · x[c][x_per_slot ? s : 0], each product
// exactly mul_mat's for one column (so its bits do not depend on the batch or the other slots).
// x: cols columns of k (or n_used · k) floats; y: cols columns of n_used · rows, y_col_stride
// floats apart (0: dense; a stacked product's columns are further apart). scratch:
// mul_mat_scratch_bytes(t, k, 1, act). An id outside [0, n_expert) raises llmrt::error.
inline void mul_mat_id(qtype t, const void* w, int64_t rows, int64_t k, int64_t n_expert, const float* x, bool x_per_slot,
                       const int32_t* ids, int64_t n_used, float* y, int64_t cols, activation_format act, void* scratch,
                       std::size_t scratch_bytes, int64_t y_col_stride = 0) {
    const std::size_t matrix_bytes = row_size(t, k) * std::size_t(rows);
    if (y_col_stride == 0) y_col_stride = n_used * rows;
    const int64_t x_col = x_per_slot ? k * n_used : k;
    for (int64_t c = 0; c < cols; ++c)
        for (int64_t s = 0; s < n_used; ++s) {
            const int32_t e = ids[c * n_used + s];
            check(e >= 0 && e < n_expert, errc::invalid_argument, [&] {
                return "mul_mat_id: id " + std::to_string(e) + " of token " + std::to_string(c) + " is outside [0, " +
                       std::to_string(n_expert) + ")";
            });
            mul_mat(t, static_cast<const std::byte*>(w) + std::size_t(e) * matrix_bytes,
                    x + c * x_col + (x_per_slot ? s * k : 0), y + c * y_col_stride + s * rows, matvec_shape{rows, k, 1, 0, 0},
                    act, scratch, scratch_bytes);
        }
}

}  // namespace llmrt::cpu
