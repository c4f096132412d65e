// Rotary position embedding on the device, as cpu::rope computes it: pair i of each head rotates
// by θ_i = (pos · s^i / factor_i) · freq_scale with s = freq_base^(−2/n_rot), pos · s^i stepped by
// repeated float multiplication as the CPU (and ggml) does, so every thread forms the very θ the
// CPU forms (factor_i = 1 without frequency factors; both 1 leave θ's bits unchanged); the rotation is
//   (a, b) -> (a cosθ − b sinθ, a sinθ + b cosθ)
// over pairs (2i, 2i+1) (normal order) or (i, i + n_rot/2) (NeoX); elements past n_rot are
// copied. A negative position (the CPU raises an error for it) gives a column of NaN.
//
// YaRN (graph::rope_params, ggml's rope_yarn) runs in kernels of their own (Yarn = 1): with
// θ_extrap the angle above before freq_scale and θ_interp = freq_scale · θ_extrap,
//   ramp_i = (1 − min(1, max(0, (i − corr_low) / max(0.001, corr_high − corr_low)))) · ext_factor
//   θ = θ_interp · (1 − ramp_i) + θ_extrap · ramp_i,   cos and sin scaled by m
// in the CPU's order of float operations (m and the ramp's divisor formed on the host as the CPU
// forms them); plain rope's kernels are untouched.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/graph/node.hpp"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int rope_threads = 128;

// What the angle of pair i needs besides the position: theta_scale = freq_base^(−2/n_rot)
// (computed on the host as every rope launcher does), freq_scale, and n_rot/2 factors or null.
struct rope_angle {
    float theta_scale = 1.0f;
    float freq_scale = 1.0f;
    const float* factors = nullptr;
    // YaRN's terms (read by the Yarn kernels only).
    float ext_factor = 0.0f;
    float corr_low = 0.0f;
    float corr_span = 1.0f;  // max(0.001, corr_high − corr_low)
    float mscale = 1.0f;     // attn_factor, times 1 + 0.1 · ln(1 / freq_scale) when ext_factor ≠ 0
};

struct rope_args {
    const float* x = nullptr;
    float* y = nullptr;
    const int32_t* pos = nullptr;
    int32_t n_head = 0, head_dim = 0, n_rot = 0;
    rope_angle angle{};
};

// Pair slot i (< head_dim / 2) of one head at position pos: elements a and b (b < head_dim
// unless head_dim is odd) and their values, rotated for i < n_rot / 2, else passed through
// (elements n_rot + 2(i − n_rot/2) and the one after). pos < 0 gives NaN.
struct rope_slot {
    int a, b;
    float ya, yb;
};

// The pair (x0, x1) of rotated slot i (< n_rot / 2) at position pos >= 0, with the θ the CPU forms.
template <int Yarn>
__device__ __forceinline__ float2 rope_rotate(float x0, float x1, int32_t pos, int i, const rope_angle& f) {
    float theta = float(pos);
    for (int j = 0; j < i; ++j) theta = __fmul_rn(theta, f.theta_scale);
    // Skipped when they would change nothing (x/1 and x·1 are exact): a plain llama's rope does
    // the work it did before frequency factors and scaling existed.
    if (f.factors) theta = __fdiv_rn(theta, f.factors[i]);
    float sn, cs;
    if constexpr (Yarn) {
        const float extrap = theta, interp = __fmul_rn(f.freq_scale, extrap);
        theta = interp;
        if (f.ext_factor != 0.0f) {
            const float y = __fdiv_rn(__fsub_rn(float(i), f.corr_low), f.corr_span);
            const float ramp = __fmul_rn(__fsub_rn(1.0f, fminf(1.0f, fmaxf(0.0f, y))), f.ext_factor);
            theta = __fadd_rn(__fmul_rn(interp, __fsub_rn(1.0f, ramp)), __fmul_rn(extrap, ramp));
        }
        sincosf(theta, &sn, &cs);
        sn = __fmul_rn(sn, f.mscale);
        cs = __fmul_rn(cs, f.mscale);
    } else {
        if (f.freq_scale != 1.0f) theta = __fmul_rn(theta, f.freq_scale);
        sincosf(theta, &sn, &cs);
    }
    return make_float2(__fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn)), __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, cs)));
}

inline rope_angle rope_angle_of(const graph::rope_params& p, const float* factors) {
    rope_angle a;
    a.theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
    a.freq_scale = p.freq_scale;
    a.factors = factors;
    a.ext_factor = p.ext_factor;
    a.corr_low = p.corr_low;
    a.corr_span = std::fmax(0.001f, p.corr_high - p.corr_low);
    // cpu::rope_cos_sin's float operations.
    a.mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) a.mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    return a;
}

// Calls f with std::integral_constant<int, 0 or 1>: the Yarn kernels only where YaRN changes
// something (graph::rope_params::yarn), so plain rope keeps its kernels' code and bits.
template <class F>
void with_yarn(const graph::rope_params& p, F&& f) {
    if (p.yarn())
        f(std::integral_constant<int, 1>{});
    else
        f(std::integral_constant<int, 0>{});
}

template <int Neox, int Yarn>
__device__ __forceinline__ rope_slot rope_slot_of(const float* x, int32_t pos, int i, int head_dim, int n_rot,
                                                  const rope_angle& angle) {
    const int half_rot = n_rot / 2;
    rope_slot r;
    const float nan = __int_as_float(0x7fc00000);
    if (i >= half_rot) {
        r.a = n_rot + 2 * (i - half_rot);
        r.b = r.a + 1;
        r.ya = pos < 0 ? nan : x[r.a];
        r.yb = pos < 0 || r.b >= head_dim ? nan : x[r.b];
        return r;
    }
    r.a = Neox ? i : 2 * i;
    r.b = Neox ? i + half_rot : 2 * i + 1;
    if (pos < 0) {
        r.ya = r.yb = nan;
        return r;
    }
    const float2 y = rope_rotate<Yarn>(x[r.a], x[r.b], pos, i, angle);
    r.ya = y.x;
    r.yb = y.y;
    return r;
}

template <int Neox, int Yarn>
__device__ __forceinline__ void rope_pair(const float* x, float* y, int32_t pos, int i, int head_dim, int n_rot,
                                          const rope_angle& angle) {
    const rope_slot r = rope_slot_of<Neox, Yarn>(x, pos, i, head_dim, n_rot, angle);
    y[r.a] = r.ya;
    if (r.b < head_dim) y[r.b] = r.yb;
}

// Grid (ceil(n_head · head_dim/2 / threads), cols): one thread per pair slot of a column.
template <int Neox, int Yarn>
__global__ void __launch_bounds__(rope_threads) rope_kernel(const rope_args p) {
    enter_kernel();
    const int half_dim = p.head_dim / 2;
    const int64_t slot = int64_t(blockIdx.x) * rope_threads + threadIdx.x;
    if (slot >= int64_t(p.n_head) * half_dim) return;
    const int h = int(slot / half_dim), i = int(slot % half_dim);
    const int64_t base = int64_t(blockIdx.y) * p.n_head * p.head_dim + int64_t(h) * p.head_dim;
    rope_pair<Neox, Yarn>(p.x + base, p.y + base, p.pos[blockIdx.y], i, p.head_dim, p.n_rot, p.angle);
}

struct rope_cache_args {
    const float* q = nullptr;  // column c of q at q + c · q_stride (and k, v likewise)
    const float* k = nullptr;
    const float* v = nullptr;
    int64_t q_stride = 0, k_stride = 0, v_stride = 0;
    float* q_out = nullptr;    // dense: n_head · head_dim per column
    void* k_cache = nullptr;   // n_ctx columns of n_head_kv · head_dim, f16 or f32
    void* v_cache = nullptr;
    const int32_t* pos = nullptr;
    int64_t n_ctx = 0;
    int32_t n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
    rope_angle angle{};
    // Per-head RMS norms before the ropes (null: none): q's heads (k's) become
    // rms_norm(head) ⊙ w with w head_dim floats, eps the norm's.
    const float* q_norm_w = nullptr;
    const float* k_norm_w = nullptr;
    float q_eps = 0.0f, k_eps = 0.0f;
};

// A head of x normed into shared memory by the block's threads (blockDim.x <= 1024 of them, any
// count: no warp shuffles): head = x · 1/sqrt(Σx²/hd + eps) ⊙ w, ops/norm.cuh's formula (Σ in
// double, then float), the threads' partial sums added in thread order by thread 0.
__device__ inline const float* norm_head(const float* x, const float* w, float eps, int hd, float* head) {
    __shared__ double partial[1024];
    __shared__ float scale_of_head;
    const int t = int(threadIdx.x), threads = int(blockDim.x);
    double sum = 0.0;
    for (int e = t; e < hd; e += threads) sum += double(x[e]) * double(x[e]);
    partial[t] = sum;
    __syncthreads();
    if (t == 0) {
        double total = partial[0];
        for (int j = 1; j < threads; ++j) total += partial[j];
        const float mean = float(total / double(hd));
        scale_of_head = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
    }
    __syncthreads();
    const float scale = scale_of_head;
    for (int e = t; e < hd; e += threads) head[e] = __fmul_rn(__fmul_rn(x[e], scale), w[e]);
    __syncthreads();
    return head;
}

template <class KV>
__device__ __forceinline__ void store_cache(void* cache, int64_t at, float v) {
    if constexpr (sizeof(KV) == 2)
        static_cast<uint16_t*>(cache)[at] = fp32_to_fp16(v);
    else
        static_cast<float*>(cache)[at] = v;
}

// Grid (n_head + 2 · n_head_kv, cols), head_dim / 2 threads: block x < n_head rotates a head of
// q; the next n_head_kv rotate a head of k into the K cache's column pos; the last n_head_kv copy
// a head of v into the V cache. Each value has the bits rope and set_rows give it. With per-head
// norms, a head of q or k is first normed into dynamic shared memory (head_dim floats).
template <int Neox, class KV, int Yarn>
__global__ void rope_cache_kernel(const rope_cache_args p) {
    extern __shared__ float head[];
    enter_kernel();
    const int slot = int(blockIdx.x), c = int(blockIdx.y), i = int(threadIdx.x), hd = p.head_dim;
    const int32_t pos = p.pos[c];
    if (slot < p.n_head) {
        const float* q = p.q + c * p.q_stride + int64_t(slot) * hd;
        if (p.q_norm_w) q = norm_head(q, p.q_norm_w, p.q_eps, hd, head);
        rope_pair<Neox, Yarn>(q, p.q_out + int64_t(c) * p.n_head * hd + int64_t(slot) * hd, pos, i, hd, p.n_rot, p.angle);
        return;
    }
    if (pos < 0 || pos >= p.n_ctx) return;  // the executor refuses such positions before a run
    const int64_t column = int64_t(pos) * p.n_head_kv * hd;
    if (slot < p.n_head + p.n_head_kv) {
        const int h = slot - p.n_head;
        const float* k = p.k + c * p.k_stride + int64_t(h) * hd;
        if (p.k_norm_w) k = norm_head(k, p.k_norm_w, p.k_eps, hd, head);
        const rope_slot r = rope_slot_of<Neox, Yarn>(k, pos, i, hd, p.n_rot, p.angle);
        store_cache<KV>(p.k_cache, column + int64_t(h) * hd + r.a, r.ya);
        if (r.b < hd) store_cache<KV>(p.k_cache, column + int64_t(h) * hd + r.b, r.yb);
        return;
    }
    const int h = slot - p.n_head - p.n_head_kv;
    const float* x = p.v + c * p.v_stride + int64_t(h) * hd;
    for (int e = 2 * i; e < 2 * i + 2 && e < hd; ++e) store_cache<KV>(p.v_cache, column + int64_t(h) * hd + e, x[e]);
}

}  // namespace detail

// x, y: cols columns of n_head · head_dim floats (y may not alias x); pos: one position per column;
// factors: n_rot/2 floats on the device, or null (all 1).
inline void rope(const float* x, float* y, const int32_t* pos, int64_t cols, const graph::rope_params& p,
                 const float* factors, cudaStream_t stream, const launch_options& o = {}) {
    check(p.n_head >= 1 && p.head_dim >= 2 && p.head_dim % 2 == 0 && p.n_rot >= 2 && p.n_rot % 2 == 0 &&
              p.n_rot <= p.head_dim && p.freq_base > 0.0f && p.freq_scale > 0.0f,
          errc::shape_mismatch, [&] {
              return "cuda::ops::rope: n_head " + std::to_string(p.n_head) + ", head_dim " + std::to_string(p.head_dim) +
                     ", n_rot " + std::to_string(p.n_rot) + ": need an even head_dim and an even n_rot <= head_dim";
          });
    if (cols == 0) return;
    detail::check_columns(cols, "cuda::ops::rope");
    detail::rope_args a{x, y, pos, p.n_head, p.head_dim, p.n_rot, detail::rope_angle_of(p, factors)};
    const dim3 grid(detail::blocks_for(int64_t(p.n_head) * (p.head_dim / 2), detail::rope_threads, "cuda::ops::rope"),
                    unsigned(cols));
    detail::with_yarn(p, [&](auto yarn) {
        constexpr int Y = decltype(yarn)::value;
        if (p.order == graph::rope_order::neox)
            detail::launch("cuda::ops::rope", detail::rope_kernel<1, Y>, grid, dim3(detail::rope_threads), 0, stream, o, a);
        else
            detail::launch("cuda::ops::rope", detail::rope_kernel<0, Y>, grid, dim3(detail::rope_threads), 0, stream, o, a);
    });
}

// Without frequency factors.
inline void rope(const float* x, float* y, const int32_t* pos, int64_t cols, const graph::rope_params& p,
                 cudaStream_t stream, const launch_options& o = {}) {
    rope(x, y, pos, cols, p, static_cast<const float*>(nullptr), stream, o);
}

// The rope_cache step: q_out = rope(q); K[:, pos] = rope(k); V[:, pos] = v, for cols columns, one
// kernel. q, k and v are read with column strides (a stacked matvec step's products); q_out is
// dense; the caches hold n_ctx columns of n_head_kv · head_dim elements of kv_type (f16 or f32).
// k's rope parameters (and frequency factors: n_rot/2 device floats or null) are q's with
// n_head_kv heads.
// Per-head norms (the rope_cache step's q_norm, k_norm; null: none): each head of q (of k) becomes
// rms_norm(head, eps) ⊙ w before its rope, w head_dim floats on the device.
struct head_norms {
    const float* q_w = nullptr;
    const float* k_w = nullptr;
    float q_eps = 0.0f, k_eps = 0.0f;
};

inline void rope_cache(const float* q, int64_t q_stride, const float* k, int64_t k_stride, const float* v,
                       int64_t v_stride, float* q_out, qtype kv_type, void* k_cache, void* v_cache, int64_t n_ctx,
                       int32_t n_head_kv, const int32_t* pos, int64_t cols, const graph::rope_params& p,
                       const float* factors, cudaStream_t stream, const launch_options& o = {}, const head_norms& norms = {}) {
    const char* op = "cuda::ops::rope_cache";
    check(p.n_head >= 1 && n_head_kv >= 1 && p.head_dim >= 2 && p.head_dim <= 2048 && p.n_rot >= 2 && p.n_rot % 2 == 0 &&
              p.n_rot <= p.head_dim && p.freq_base > 0.0f && p.freq_scale > 0.0f,
          errc::shape_mismatch, [&] {
              return std::string(op) + ": n_head " + std::to_string(p.n_head) + ", n_head_kv " + std::to_string(n_head_kv) +
                     ", head_dim " + std::to_string(p.head_dim) + ", n_rot " + std::to_string(p.n_rot) +
                     ": need head_dim 2..2048 and an even n_rot <= head_dim";
          });
    check(kv_type == qtype::f16 || kv_type == qtype::f32, errc::unsupported_type,
          [&] { return std::string(op) + ": caches are f32 or f16, not " + name(kv_type); });
    if (cols == 0) return;
    detail::check_columns(cols, op);
    detail::rope_cache_args a{q,       k,       v,   q_stride, k_stride, v_stride,  q_out,    k_cache,
                              v_cache, pos,     n_ctx, p.n_head, n_head_kv, p.head_dim, p.n_rot,
                              detail::rope_angle_of(p, factors)};
    a.q_norm_w = norms.q_w;
    a.k_norm_w = norms.k_w;
    a.q_eps = norms.q_eps;
    a.k_eps = norms.k_eps;
    const dim3 grid(unsigned(p.n_head + 2 * n_head_kv), unsigned(cols));
    const dim3 block(unsigned((p.head_dim + 1) / 2));
    const std::size_t shared = norms.q_w || norms.k_w ? std::size_t(p.head_dim) * sizeof(float) : 0;
    const bool neox = p.order == graph::rope_order::neox, half = kv_type == qtype::f16;
    detail::with_yarn(p, [&](auto yarn) {
        constexpr int Y = decltype(yarn)::value;
        if (neox && half) detail::launch(op, detail::rope_cache_kernel<1, uint16_t, Y>, grid, block, shared, stream, o, a);
        else if (neox) detail::launch(op, detail::rope_cache_kernel<1, float, Y>, grid, block, shared, stream, o, a);
        else if (half) detail::launch(op, detail::rope_cache_kernel<0, uint16_t, Y>, grid, block, shared, stream, o, a);
        else detail::launch(op, detail::rope_cache_kernel<0, float, Y>, grid, block, shared, stream, o, a);
    });
}

// Without frequency factors.
inline void rope_cache(const float* q, int64_t q_stride, const float* k, int64_t k_stride, const float* v,
                       int64_t v_stride, float* q_out, qtype kv_type, void* k_cache, void* v_cache, int64_t n_ctx,
                       int32_t n_head_kv, const int32_t* pos, int64_t cols, const graph::rope_params& p,
                       cudaStream_t stream, const launch_options& o = {}) {
    rope_cache(q, q_stride, k, k_stride, v, v_stride, q_out, kv_type, k_cache, v_cache, n_ctx, n_head_kv, pos, cols, p,
               static_cast<const float*>(nullptr), stream, o);
}

}  // namespace llmrt::cuda::ops
