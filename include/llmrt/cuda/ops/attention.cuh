// Causal attention over the KV cache on the device, as cpu::attention computes it: for query
// column t at position p, head h and kv head g = h / (n_head / n_head_kv),
//   s_j = scale · q_h · k_g[j]  (j = 0..p),   e_j = exp(s_j − max s),   w_j = e_j · (1 / Σ e)
//   out_h = Σ_j w_j · v_g[j]
// With a window w only the keys j > p − w take part (the scores keep them from index 0); with
// sinks the max takes sink_h too and Σ e gets exp(sink_h − max) after the keys' terms.
// One block per (head, column). Phase 1: warps take keys four at a time, lanes split the dot
// (a butterfly sum); the scores go to the op's scratch (n_ctx floats per head and column).
// Phase 2: max and Σ e (in double) by block_reduce. Phase 3: the block splits the keys into
// `groups` contiguous ranges, a thread per (range, element) sums its range in key order, and
// the ranges' sums are added in range order. Every order is fixed: the same bits on every run,
// and a column's result does not depend on the batch. A position outside [0, n_ctx) (an error
// on the CPU) gives NaN for that column.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/graph/node.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int attention_threads = 256;

struct attention_args {
    const float* q = nullptr;
    const void* k = nullptr;
    const void* v = nullptr;
    const int32_t* pos = nullptr;
    float* out = nullptr;
    float* scores = nullptr;  // n_ctx floats per (column, head)
    int64_t n_ctx = 0;
    int32_t n_head = 0, n_head_kv = 0, head_dim = 0;
    float scale = 1.0f;
    int32_t window = 0;            // 0: every key 0..p
    const float* sinks = nullptr;  // n_head logits, or null
};

template <class KV>
__device__ __forceinline__ float cache_value(const void* cache, int64_t at) {
    if constexpr (sizeof(KV) == 2)
        return fp16_to_fp32(static_cast<const uint16_t*>(cache)[at]);
    else
        return static_cast<const float*>(cache)[at];
}

// Dynamic shared memory: head_dim floats of q, then max(threads, head_dim) partial sums.
template <class KV, int Threads>
__global__ void __launch_bounds__(Threads) attention_kernel(const attention_args a) {
    enter_kernel();
    extern __shared__ float shared[];
    __shared__ float reduce_max[Threads / 32 + 1];
    __shared__ double reduce_sum[Threads / 32 + 1];
    const int h = int(blockIdx.x), c = int(blockIdx.y);
    const int hd = a.head_dim;
    const int g = h / (a.n_head / a.n_head_kv);
    const int64_t q_ne0 = int64_t(a.n_head) * hd, kv_ne0 = int64_t(a.n_head_kv) * hd;
    float* out = a.out + int64_t(c) * q_ne0 + int64_t(h) * hd;
    const int32_t p = a.pos[c];
    if (p < 0 || p >= a.n_ctx) {
        for (int i = int(threadIdx.x); i < hd; i += Threads) out[i] = __int_as_float(0x7fc00000);
        return;
    }
    const int64_t end = int64_t(p) + 1;
    const int64_t first = a.window > 0 && end > a.window ? end - a.window : 0;  // the window's first key
    const int64_t n_keys = end - first;
    const void* k_cache = static_cast<const uint8_t*>(a.k) + first * kv_ne0 * int64_t(sizeof(KV));
    const void* v_cache = static_cast<const uint8_t*>(a.v) + first * kv_ne0 * int64_t(sizeof(KV));
    float* q = shared;
    float* partial = shared + hd;
    float* scores = a.scores + (int64_t(c) * a.n_head + h) * a.n_ctx;
    for (int i = int(threadIdx.x); i < hd; i += Threads) q[i] = a.q[int64_t(c) * q_ne0 + int64_t(h) * hd + i];
    __syncthreads();

    // Each warp takes keys_per_warp consecutive keys at a time, so that their loads are in flight
    // together; every dot is still this lane's k-strided sum, then the same butterfly.
    const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
    constexpr int keys_per_warp = 4;
    float max = -INFINITY;
    for (int64_t j0 = int64_t(warp) * keys_per_warp; j0 < n_keys; j0 += (Threads / 32) * keys_per_warp) {
        float dot[keys_per_warp];
#pragma unroll
        for (int u = 0; u < keys_per_warp; ++u) dot[u] = 0.0f;
        for (int i = lane; i < hd; i += 32) {
            const float qi = q[i];
#pragma unroll
            for (int u = 0; u < keys_per_warp; ++u)
                if (j0 + u < n_keys)
                    dot[u] = __fmaf_rn(qi, cache_value<KV>(k_cache, (j0 + u) * kv_ne0 + int64_t(g) * hd + i), dot[u]);
        }
#pragma unroll
        for (int u = 0; u < keys_per_warp; ++u) {
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1)
                dot[u] = __fadd_rn(dot[u], __shfl_xor_sync(0xffffffffu, dot[u], offset));
            if (j0 + u < n_keys) {
                const float s = __fmul_rn(dot[u], a.scale);
                if (lane == 0) scores[j0 + u] = s;
                max = fmaxf(max, s);
            }
        }
    }
    max = block_reduce<Threads>(max, max_op{}, reduce_max);  // its barriers also publish the scores
    const float sink = a.sinks ? a.sinks[h] : -INFINITY;
    if (a.sinks) max = fmaxf(max, sink);

    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < n_keys; j += Threads) {
        const float e = expf(__fsub_rn(scores[j], max));
        scores[j] = e;
        sum += double(e);
    }
    sum = block_reduce<Threads>(sum, sum_op{}, reduce_sum);
    if (a.sinks) sum += double(expf(__fsub_rn(sink, max)));
    const float inv = float(1.0 / sum);

    const int lanes_per_group = (hd + 31) / 32 * 32;
    const int groups = lanes_per_group <= Threads ? Threads / lanes_per_group : 1;
    const int64_t keys_per_group = (n_keys + groups - 1) / groups;
    const int group = int(threadIdx.x) / lanes_per_group;
    if (group < groups) {
        const int64_t j_begin = group * keys_per_group;
        const int64_t j_end = j_begin + keys_per_group < n_keys ? j_begin + keys_per_group : n_keys;
        for (int i = int(threadIdx.x) % lanes_per_group; i < hd; i += (groups > 1 ? lanes_per_group : Threads)) {
            // Chunks of 8 keys: their loads first, then the adds in key order.
            constexpr int chunk = 8;
            float acc = 0.0f;
            for (int64_t j = j_begin; j < j_end; j += chunk) {
                float w[chunk], vv[chunk];
#pragma unroll
                for (int u = 0; u < chunk; ++u) {
                    const bool live = j + u < j_end;
                    w[u] = live ? scores[j + u] : 0.0f;
                    vv[u] = live ? cache_value<KV>(v_cache, (j + u) * kv_ne0 + int64_t(g) * hd + i) : 0.0f;
                }
#pragma unroll
                for (int u = 0; u < chunk; ++u)
                    if (j + u < j_end) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(w[u], inv), vv[u]));
            }
            if (groups > 1)
                partial[group * hd + i] = acc;
            else
                out[i] = acc;
        }
    }
    if (groups == 1) return;
    __syncthreads();
    for (int i = int(threadIdx.x); i < hd; i += Threads) {
        float acc = partial[i];
        for (int s = 1; s < groups; ++s) acc = __fadd_rn(acc, partial[s * hd + i]);
        out[i] = acc;
    }
}

}  // namespace detail

// Bytes of scratch attention needs: n_ctx scores per head and column.
inline std::size_t attention_scratch_bytes(int64_t n_ctx, int32_t n_head, int64_t max_cols) {
    return std::size_t(n_ctx) * std::size_t(n_head) * std::size_t(max_cols) * sizeof(float);
}

// q, out: cols columns of n_head · head_dim floats; k, v: n_ctx columns of n_head_kv · head_dim
// elements of kv_type (f32 or f16); scratch: attention_scratch_bytes(n_ctx, n_head, cols) bytes;
// sinks: n_head device floats, or null.
inline void attention(const float* q, qtype kv_type, const void* k, const void* v, int64_t n_ctx, const int32_t* pos,
                      float* out, int64_t cols, const graph::attention_params& p, void* scratch,
                      std::size_t scratch_bytes, cudaStream_t stream, const launch_options& o = {},
                      const float* sinks = nullptr) {
    const char* op = "cuda::ops::attention";
    check(kv_type == qtype::f32 || kv_type == qtype::f16, errc::unsupported_type,
          [&] { return std::string(op) + ": caches are f32 or f16, not " + name(kv_type); });
    check(p.n_head >= 1 && p.n_head_kv >= 1 && p.head_dim >= 1 && p.n_head % p.n_head_kv == 0 && p.head_dim <= 4096,
          errc::shape_mismatch, [&] {
              return std::string(op) + ": n_head " + std::to_string(p.n_head) + ", n_head_kv " +
                     std::to_string(p.n_head_kv) + ", head_dim " + std::to_string(p.head_dim) +
                     ": n_head_kv must divide n_head, head_dim 1..4096";
          });
    if (cols == 0) return;
    detail::check_columns(cols, op);
    check(scratch_bytes >= attention_scratch_bytes(n_ctx, p.n_head, cols), errc::invalid_argument,
          [&] {
              return std::string(op) + ": scratch of " + std::to_string(scratch_bytes) + " bytes, " +
                     std::to_string(attention_scratch_bytes(n_ctx, p.n_head, cols)) + " needed";
          });
    const int hd = p.head_dim;
    const int partial = ((hd + 31) / 32 * 32) <= detail::attention_threads ? detail::attention_threads : hd;
    const std::size_t smem = std::size_t(hd + partial) * sizeof(float);
    check(p.window >= 0, errc::invalid_argument,
          [&] { return std::string(op) + ": window " + std::to_string(p.window) + " must be >= 0 (0: none)"; });
    detail::attention_args a{q,      k, v, pos, out, static_cast<float*>(scratch), n_ctx, p.n_head, p.n_head_kv, hd,
                             p.scale, p.window, sinks};
    const dim3 grid(unsigned(p.n_head), unsigned(cols));
    const dim3 block(detail::attention_threads);
    if (kv_type == qtype::f16)
        detail::launch(op, detail::attention_kernel<uint16_t, detail::attention_threads>, grid, block, smem, stream, o, a);
    else
        detail::launch(op, detail::attention_kernel<float, detail::attention_threads>, grid, block, smem, stream, o, a);
}

}  // namespace llmrt::cuda::ops
