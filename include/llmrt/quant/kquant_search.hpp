// The (scale, min) search of ggml's asymmetric k-quants (make_qkx2_quants), shared by the
// Q2_K, Q4_K and Q5_K reference quantizers, and the row-length check of their row functions.
//
// A group of n values is approximated as x ≈ scale·L − min with integer L in [0, nmax]. The
// search tries the grid iscale = (nmax + rmin + rdelta·is) / (max − min), is = 0..nstep, fits
// scale and min to each candidate L by weighted least squares, and keeps the candidate with the
// smallest weighted error (|·| with use_mad, squared otherwise). Byte equality with ggml needs
// its exact evaluation order: every product left to right as written, sums in index order, no
// fused multiply-add (the llmrt target builds with -ffp-contract=off).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/quant/finite.hpp"
#include "llmrt/quant/rounding.hpp"
#include "llmrt/quant/strict_fp.hpp"

LLMRT_STRICT_FP_BEGIN

namespace llmrt {

struct qkx2_search {
    int nmax;      // largest integer level
    float rmin;    // first grid offset added to nmax
    float rdelta;  // grid step
    int nstep;     // grid points after the first: is = 0..nstep
    bool use_mad;  // error is Σw·|e| (true) or Σw·e² (false)
};

struct qkx2_fit {
    float scale;  // x ≈ scale·L − min
    float min;    // ≥ 0 by construction (the offset is clamped to ≤ 0 and negated)
};

namespace detail {
LLMRT_HOST_DEVICE int clamp_level(int l, int nmax) { return l < 0 ? 0 : (l > nmax ? nmax : l); }
}  // namespace detail

// Fits the N values x with weights w; writes the chosen levels to L. When all x are equal
// after the offset clamp, returns scale 0, min = −offset and L = 0.
template <int N>
inline qkx2_fit make_qkx2_quants(const float* x, const float* w, uint8_t* L, const qkx2_search& p) {
    static_assert(N > 0, "make_qkx2_quants<N>: a group needs at least one value");
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < N; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    // The offset never goes above 0, so an all-positive group still reaches down to zero.
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < N; ++i) L[i] = 0;
        return {0.0f, -min};
    }

    auto weighted_error = [&](float scale, float offset, const uint8_t* levels) {
        float error = 0;
        for (int i = 0; i < N; ++i) {
            float diff = scale * float(levels[i]) + offset - x[i];
            diff = p.use_mad ? std::fabs(diff) : diff * diff;
            error += w[i] * diff;
        }
        return error;
    };

    float iscale = float(p.nmax) / (max - min);
    float scale = 1 / iscale;
    for (int i = 0; i < N; ++i) L[i] = uint8_t(detail::clamp_level(nearest_int(iscale * (x[i] - min)), p.nmax));
    float best_error = weighted_error(scale, min, L);

    uint8_t Laux[N];
    for (int is = 0; is <= p.nstep; ++is) {
        iscale = (p.rmin + p.rdelta * float(is) + float(p.nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < N; ++i) {
            const int l = detail::clamp_level(nearest_int(iscale * (x[i] - min)), p.nmax);
            Laux[i] = uint8_t(l);
            const float fl = float(l);
            sum_l += w[i] * fl;
            sum_l2 += w[i] * fl * fl;
            sum_xl += w[i] * fl * x[i];
        }
        // Least squares for (scale, offset) given the levels: a 2x2 system with determinant D.
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            const float cur_error = weighted_error(this_scale, this_min, Laux);
            if (cur_error < best_error) {
                for (int i = 0; i < N; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    return {scale, -min};
}

// The k-quant row functions take whole 256-element super-blocks.
inline void check_superblock_row(int64_t n, const char* type_name, const char* operation) {
    check_whole_blocks(n, 256, type_name, operation);
}

}  // namespace llmrt

LLMRT_STRICT_FP_END
