// The CPU reference mat-vec: the ground truth for every GPU kernel.
//
//   Y[:, c] = W · X[:, c]   for c < ncols,
// W quantized, rows × k, row r at byte r·row_size(type, k); X holds ncols columns of k floats,
// column c at x + c·ldx; Y holds ncols columns of `rows` floats, column c at y + c·ldy.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::cpu {

// How the activations enter the dot product.
enum class activation_format {
    f32,   // float activations; dot of the dequantized row in double
    q8_1,  // activations rounded through Q8_1 (what the GPU kernels see); dot in double
    ggml,  // activations quantized to the type's vec_dot_type and ggml's integer dot (ggml's CPU result)
};

struct matvec_shape {
    int64_t rows = 0;
    int64_t k = 0;
    int64_t ncols = 1;
    int64_t ldx = 0;  // 0: k
    int64_t ldy = 0;  // 0: rows
};

namespace detail {

inline matvec_shape checked_shape(qtype t, matvec_shape s, const void* w, const float* x, const float* y) {
    if (s.ldx == 0) s.ldx = s.k;
    if (s.ldy == 0) s.ldy = s.rows;
    const int64_t bs = block_size(t);
    check(s.rows >= 0 && s.k >= 0 && s.ncols >= 1 && s.k % bs == 0 && s.ldx >= s.k && s.ldy >= s.rows,
          errc::shape_mismatch, [&] {
              return std::string("cpu::matvec: W is ") + std::to_string(s.rows) + " x " + std::to_string(s.k) +
                     " of " + name(t) + " (block size " + std::to_string(bs) + "), X has " +
                     std::to_string(s.ncols) + " columns at stride " + std::to_string(s.ldx) +
                     ", Y stride " + std::to_string(s.ldy) +
                     ": need k a multiple of the block size, ncols >= 1, ldx >= k, ldy >= rows";
          });
    // Each pointer is needed as soon as anything is read or written through it: with k = 0 and
    // rows > 0, Y still receives rows·ncols zeros, so only W and X may then be null.
    const bool writes_y = s.rows > 0;
    const bool reads_w = s.rows > 0 && s.k > 0;
    const bool reads_x = reads_w;
    check((!writes_y || y) && (!reads_w || w) && (!reads_x || x), errc::invalid_argument, [&] {
        std::string null_ones;
        for (auto [needed, ptr, label] : {std::tuple{reads_w, static_cast<const void*>(w), "W"},
                                          std::tuple{reads_x, static_cast<const void*>(x), "X"},
                                          std::tuple{writes_y, static_cast<const void*>(y), "Y"}})
            if (needed && !ptr) null_ones += null_ones.empty() ? label : std::string(", ") + label;
        return "cpu::matvec: " + null_ones + " is null, but the shape " + std::to_string(s.rows) + " x " +
               std::to_string(s.k) + " with " + std::to_string(s.ncols) + " columns reads or writes it";
    });
    return s;
}

// Σ a[i]·b[i] in double, in index order.
inline double dot_f64(const float* a, const float* b, int64_t n) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(a[i]) * double(b[i]);
    return sum;
}

}  // namespace detail

template <quant_block B>
void matvec(const B* w, const float* x, float* y, matvec_shape shape, activation_format act = activation_format::f32) {
    shape = detail::checked_shape(B::id, shape, w, x, y);
    const int64_t k = shape.k, nblocks = k / B::block_size;
    if (shape.rows == 0) return;

    if (act == activation_format::ggml) {
        if constexpr (weight_block<B>) {
            using A = typename B::vec_dot_type;
            std::vector<A> xq(std::size_t(k / A::block_size) * std::size_t(shape.ncols));
            for (int64_t c = 0; c < shape.ncols; ++c) quantize_row(x + c * shape.ldx, xq.data() + c * (k / A::block_size), k);
            for (int64_t r = 0; r < shape.rows; ++r)
                for (int64_t c = 0; c < shape.ncols; ++c)
                    y[c * shape.ldy + r] = vec_dot(w + r * nblocks, xq.data() + c * (k / A::block_size), k);
            return;
        } else {
            throw error(errc::unsupported_type, std::string("cpu::matvec: ggml's integer dot has no pairing for ") + B::name);
        }
    }

    // The activations as the dot sees them: as given, or rounded through Q8_1.
    std::vector<float> xs;
    const float* xcols = x;
    int64_t ldx = shape.ldx;
    if (act == activation_format::q8_1) {
        check(k % q8_1::block_size == 0, errc::shape_mismatch,
              [&] { return "cpu::matvec: k = " + std::to_string(k) + " is not a multiple of 32, as Q8_1 needs"; });
        xs.resize(std::size_t(k) * std::size_t(shape.ncols));
        std::vector<q8_1> xq(std::size_t(k / 32));
        for (int64_t c = 0; c < shape.ncols; ++c) {
            quantize_row(x + c * shape.ldx, xq.data(), k);
            dequantize_row(xq.data(), xs.data() + c * k, k);
        }
        xcols = xs.data();
        ldx = k;
    }
    std::vector<float> wrow(static_cast<std::size_t>(k));
    for (int64_t r = 0; r < shape.rows; ++r) {
        dequantize_row(w + r * nblocks, wrow.data(), k);
        for (int64_t c = 0; c < shape.ncols; ++c)
            y[c * shape.ldy + r] = float(detail::dot_f64(wrow.data(), xcols + c * ldx, k));
    }
}

// Runtime-typed form: W of any type in all_types.
inline void matvec(qtype t, const void* w, const float* x, float* y, matvec_shape shape,
                   activation_format act = activation_format::f32) {
    dispatch(t, "cpu::matvec", [&](auto tag) {
        using B = typename decltype(tag)::type;
        matvec(static_cast<const B*>(w), x, y, shape, act);
    });
}

}  // namespace llmrt::cpu
