// Rotary position embedding on the device, as cpu::rope computes it: pair i of each head rotates
// by θ_i = pos · s^i with s = freq_base^(−2/n_rot), θ_i stepped by repeated float multiplication
// as the CPU (and ggml) does, so every thread forms the very θ the CPU forms; the rotation is
//   (a, b) -> (a cosθ − b sinθ, a sinθ + b cosθ)
// over pairs (2i, 2i+1) (normal order) or (i, i + n_rot/2) (NeoX); elements past n_rot are
// copied. A negative position (the CPU raises an error for it) gives a column of NaN.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/graph/node.hpp"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int rope_threads = 128;

struct rope_args {
    const float* x;
    float* y;
    const int32_t* pos;
    int32_t n_head, head_dim, n_rot;
    float theta_scale;
};

// Grid (ceil(n_head · head_dim/2 / threads), cols): one thread per pair slot of a column; the
// slots past n_rot/2 in each head copy two passed-through elements.
template <int Neox>
__global__ void __launch_bounds__(rope_threads) rope_kernel(const rope_args p) {
    enter_kernel();
    const int half_dim = p.head_dim / 2;
    const int64_t slot = int64_t(blockIdx.x) * rope_threads + threadIdx.x;
    if (slot >= int64_t(p.n_head) * half_dim) return;
    const int h = int(slot / half_dim), i = int(slot % half_dim);
    const int64_t base = int64_t(blockIdx.y) * p.n_head * p.head_dim + int64_t(h) * p.head_dim;
    const float* x = p.x + base;
    float* y = p.y + base;
    const int32_t pos = p.pos[blockIdx.y];
    const int half_rot = p.n_rot / 2;
    if (i >= half_rot) {  // pass-through: elements n_rot + 2(i − half_rot) and the one after
        const int e = p.n_rot + 2 * (i - half_rot);
        for (int k = e; k < e + 2 && k < p.head_dim; ++k) y[k] = pos < 0 ? __int_as_float(0x7fc00000) : x[k];
        return;
    }
    if (pos < 0) {
        const int a = Neox ? i : 2 * i, b = Neox ? i + half_rot : 2 * i + 1;
        y[a] = y[b] = __int_as_float(0x7fc00000);
        return;
    }
    float theta = float(pos);
    for (int j = 0; j < i; ++j) theta = __fmul_rn(theta, p.theta_scale);
    float sn, cs;
    sincosf(theta, &sn, &cs);
    const int a = Neox ? i : 2 * i, b = Neox ? i + half_rot : 2 * i + 1;
    const float x0 = x[a], x1 = x[b];
    y[a] = __fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn));
    y[b] = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, cs));
}

}  // namespace detail

// x, y: cols columns of n_head · head_dim floats (y may not alias x); pos: one position per column.
inline void rope(const float* x, float* y, const int32_t* pos, int64_t cols, const graph::rope_params& p,
                 cudaStream_t stream, const launch_options& o = {}) {
    check(p.n_head >= 1 && p.head_dim >= 2 && p.head_dim % 2 == 0 && p.n_rot >= 2 && p.n_rot % 2 == 0 &&
              p.n_rot <= p.head_dim && p.freq_base > 0.0f,
          errc::shape_mismatch, [&] {
              return "cuda::ops::rope: n_head " + std::to_string(p.n_head) + ", head_dim " + std::to_string(p.head_dim) +
                     ", n_rot " + std::to_string(p.n_rot) + ": need an even head_dim and an even n_rot <= head_dim";
          });
    if (cols == 0) return;
    detail::check_columns(cols, "cuda::ops::rope");
    detail::rope_args a{x, y, pos, p.n_head, p.head_dim, p.n_rot, std::pow(p.freq_base, -2.0f / float(p.n_rot))};
    const dim3 grid(detail::blocks_for(int64_t(p.n_head) * (p.head_dim / 2), detail::rope_threads, "cuda::ops::rope"),
                    unsigned(cols));
    if (p.order == graph::rope_order::neox)
        detail::launch("cuda::ops::rope", detail::rope_kernel<1>, grid, dim3(detail::rope_threads), 0, stream, o, a);
    else
        detail::launch("cuda::ops::rope", detail::rope_kernel<0>, grid, dim3(detail::rope_threads), 0, stream, o, a);
}

}  // namespace llmrt::cuda::ops
