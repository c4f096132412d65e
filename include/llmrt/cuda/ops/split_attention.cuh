// Decode attention split over the cache (flash-decoding): the same causal grouped-query
// attention as cpu::attention, in one kernel that fills the GPU at any context length.
//
//   split    one block per (head block b, chunk j, column t) stages its chunk of K and V in
//            shared memory with one round of asynchronous copies (with q), then takes the chunk's
//            keys for the query heads of b: up to split_max_heads heads of one kv head g (K and V
//            are read once per block of heads, not once per head):
//              s_hi = scale · q_h · k_i,  m_h = max_i s_hi,  l_h = Σ_i e_hi,  o_h = Σ_i e_hi · v_i
//            with e_hi = exp(s_hi − m_h), i over the chunk's keys, in key order
//   combine  the block that finishes its (column, head block) last — an integer counter per pair,
//            no float atomics — combines every chunk of its heads in chunk order:
//              M = max_j m_j,  w_j = exp(m_j − M),  out_h = (Σ_j w_j · o_j) · (1 / Σ_j w_j · l_j)
//            (with sinks M = max(max_j m_j, sink_h) and exp(sink_h − M) added to the sum last)
//            and writes out and, when asked, the Q8_1 records of out for the mul_mat after it;
//            it then sets the counter back to zero for the next launch
//
// The chunks of a query at position p over its n = p + 1 − first keys first..p (first = 0, or
// max(0, p + 1 − window) with a window: a sliding layer reads its window only):
// len = max(min_len, ceil(n / max_chunks)) keys each (min_len 64), ceil(n / len) of them, every
// one with keys; max_chunks (at least 32) grows with the cache so that a chunk's K and V fit the
// shared memory of a block (chunk_cap keys). The split depends on p alone and every sum runs
// in a fixed order: the same bits on every run, whatever the batch, whichever block combines.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/cuda/ops/records.cuh"
#include "llmrt/cuda/ptx.cuh"
#include "llmrt/graph/node.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int split_threads = 256;
constexpr int split_max_head_dim = 512;
constexpr int split_stage_bytes = 64 * 1024;  // a chunk's K and V in shared memory, at most
constexpr int split_min_len = 64;             // keys per chunk, at least
// Query heads a block takes at most (a launch policy, from decode on an H200, split_attention at
// 8-72 keys and at 4096): a kv head's group is split into blocks of 4 heads, and of 2 where the
// model has 4 kv heads or fewer, so that the few kv heads still fill the GPU. Qwen3-30B-A3B (4 kv
// heads of 8) decodes 9% faster with blocks of 2 than of 8 at both depths; gpt-oss-20b (8 of 8)
// 1.7% faster with 4 than 8 at short context and 2% slower with 2 at 4096; llama 8B (8 of 4)
// 3% slower with 2 at 4096 (each block reads its kv head's K and V again).
constexpr int split_max_heads = 4;

// Query heads per block for `group` query heads per kv head and n_head_kv kv heads: the most of
// 4, 2 or 1 (2 or 1 with 4 kv heads or fewer) that divides the group, so that a block's heads
// share one kv head (a group of 3, as 12 heads over 4, takes blocks of one head).
__host__ __device__ constexpr int split_heads_per_block(int group, int n_head_kv) {
    for (int heads = n_head_kv <= 4 ? 2 : split_max_heads; heads > 1; heads /= 2)
        if (group % heads == 0) return heads;
    return 1;
}
static_assert(split_heads_per_block(1, 8) == 1 && split_heads_per_block(2, 2) == 2 && split_heads_per_block(4, 4) == 2 &&
                  split_heads_per_block(8, 8) == 4 && split_heads_per_block(3, 4) == 1 && split_heads_per_block(6, 8) == 2,
              "split_heads_per_block: the largest of 4, 2, 1 within the limit that divides the group");

struct split_attention_args {
    const float* q = nullptr;     // column t of q at q + t · q_stride
    int64_t q_stride = 0;
    const void* k = nullptr;      // caches: n_ctx columns of n_head_kv · head_dim
    const void* v = nullptr;
    const int32_t* pos = nullptr;
    float* partial = nullptr;     // per (column, head, chunk): head_dim sums, then m and l
    int32_t* counters = nullptr;  // per (column, head block): chunks done (zero between launches)
    float* out = nullptr;         // dense columns of n_head · head_dim (null: not kept)
    uint8_t* records = nullptr;   // Q8_1 records of out (null: none)
    int64_t n_ctx = 0;
    int64_t cols = 0;
    int32_t n_head = 0, n_head_kv = 0, head_dim = 0;
    int32_t max_chunks = 0, min_len = 0, chunk_cap = 0;
    float scale = 1.0f;
    int32_t early = 0;  // nonzero: pos and the cache before the batch's first position may be read before the wait
    int32_t window = 0;            // 0: keys 0..p
    const float* sinks = nullptr;  // n_head logits, or null
};

// Keys per chunk for a query that sees n keys.
__host__ __device__ inline int64_t split_chunk_length(int64_t n, int32_t max_chunks, int32_t min_len) {
    const int64_t len = (n + max_chunks - 1) / max_chunks;
    return len < min_len ? min_len : len;
}

template <class KV>
__device__ __forceinline__ float kv_at(const KV* row, int e) {
    if constexpr (sizeof(KV) == 2)
        return __half2float(__ushort_as_half(row[e]));
    else
        return row[e];
}

// Elements e and e + 1 of a cache row (e even; rows are 16-byte aligned in shared memory).
template <class KV>
__device__ __forceinline__ float2 kv_pair(const KV* row, int e) {
    if constexpr (sizeof(KV) == 2)
        return __half22float2(*reinterpret_cast<const __half2*>(row + e));
    else
        return *reinterpret_cast<const float2*>(row + e);
}

// N values per lane (N a power of two, at most 32) summed over the warp's 32 lanes at once: each
// round halves the values a lane holds, trading the half it gives away for its partner's half of
// the same indices, then the rounds left add plain butterflies. Returns which value's total the
// lane holds in v[0] (32 / N lanes hold each). The same fixed order on every run.
template <int N>
__device__ __forceinline__ int reduce_lanes(float (&v)[N], int lane) {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "reduce_lanes: N must be a power of two up to 32");
    int index = 0;
    int n = N;
#pragma unroll
    for (int offset = 16; offset >= 1; offset >>= 1) {
        if (n > 1) {
            const int half = n / 2;
            const bool upper = (lane & offset) != 0;
#pragma unroll
            for (int i = 0; i < N / 2; ++i) {
                if (i >= half) break;
                const float give = upper ? v[i] : v[i + half];
                const float keep = upper ? v[i + half] : v[i];
                v[i] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, give, offset));
            }
            if (upper) index += half;
            n = half;
        } else {
            v[0] = __fadd_rn(v[0], __shfl_xor_sync(0xffffffffu, v[0], offset));
        }
    }
    return index;
}

// Dynamic shared memory: q (Heads · head_dim floats), the scores (Heads · chunk_cap floats), the
// sums of the parts of the keys (parts · Heads · head_dim floats), then the chunk's K and V rows
// (chunk_cap · head_dim elements each); the combine reuses the K and V region for the chunks'
// weights.
template <class KV, int Heads, int Pairs>
__global__ void __launch_bounds__(split_threads) split_attention_kernel(const split_attention_args a) {
    extern __shared__ __align__(16) uint8_t smem[];
    __shared__ float chunk_max[Heads], chunk_sum[Heads];
    __shared__ int last;
    const int b = int(blockIdx.x), j = int(blockIdx.y), t = int(blockIdx.z);
    const int h0 = b * Heads;                            // this block's first query head
    const int g = h0 / (a.n_head / a.n_head_kv);         // its kv head
    const int hd = a.head_dim, tid = int(threadIdx.x);
    // Positions that are inputs are copied in before the forward's first kernel: readable before
    // the wait (a.early); otherwise the kernel waits first.
    if (!a.early) enter_kernel();
    const int32_t p = a.pos[t];
    const bool live = p >= 0 && p < a.n_ctx;  // the executor refuses other positions before a run
    const int64_t end = int64_t(p) + 1;
    const int64_t first = a.window > 0 && end > a.window ? end - a.window : 0;  // the window's first key
    const int64_t n_keys = end - first;
    const int64_t len = split_chunk_length(n_keys, a.max_chunks, a.min_len);
    const int chunks = live ? int((n_keys + len - 1) / len) : 0;
    const int64_t k0 = first + int64_t(j) * len;
    const int keys = j < chunks ? int(end - k0 < len ? end - k0 : len) : 0;
    const int64_t kv_ne0 = int64_t(a.n_head_kv) * hd;
    float* q = reinterpret_cast<float*>(smem);
    float* scores = q + Heads * hd;
    const int parts_room = (hd / (Pairs > 0 ? 2 : 1)) <= split_threads ? split_threads / (hd / (Pairs > 0 ? 2 : 1)) : 1;
    KV* ks = reinterpret_cast<KV*>(scores + Heads * a.chunk_cap + parts_room * Heads * hd);
    KV* vs = ks + int64_t(a.chunk_cap) * hd;

    // The chunk's K and V rows, 16 bytes at a time. Keys before the first position of this batch
    // were written by earlier forwards: their copies start before the wait for the kernels before
    // this one (which write the batch's own keys), so they overlap with them.
    const int pieces = hd * int(sizeof(KV)) / 16;  // the launcher asks head_dim · sizeof(KV) % 16 == 0
    const auto* k_rows = static_cast<const uint8_t*>(a.k) + (k0 * kv_ne0 + int64_t(g) * hd) * int64_t(sizeof(KV));
    const auto* v_rows = static_cast<const uint8_t*>(a.v) + (k0 * kv_ne0 + int64_t(g) * hd) * int64_t(sizeof(KV));
    const int64_t row_stride = kv_ne0 * int64_t(sizeof(KV));
    int64_t stable = 0;  // keys below this one hold earlier forwards' values (a.early)
    if (a.early) {
        stable = end;
        for (int64_t c = 0; c < a.cols; ++c) stable = a.pos[c] < stable ? a.pos[c] : stable;
    }
    const int early = int(stable - k0 < 0 ? 0 : stable - k0 < keys ? stable - k0 : keys);
    auto copy_rows = [&](int from, int to) {
        for (int i = from * pieces + tid; i < to * pieces; i += split_threads) {
            const int key = i / pieces, piece = i % pieces;
            ptx::cp_async_16(reinterpret_cast<uint8_t*>(ks) + i * 16, k_rows + key * row_stride + piece * 16, 16);
            ptx::cp_async_16(reinterpret_cast<uint8_t*>(vs) + i * 16, v_rows + key * row_stride + piece * 16, 16);
        }
    };
    if (a.early) {
        copy_rows(0, early);
        enter_kernel();
    }
    if (keys == 0) {
        ptx::cp_async_commit();
        ptx::cp_async_wait<0>();
        return;  // past the query's last chunk, or a position outside the cache
    }
    copy_rows(early, keys);
    ptx::cp_async_commit();
    for (int i = tid; i < Heads * hd; i += split_threads) q[i] = a.q[int64_t(t) * a.q_stride + int64_t(h0) * hd + i];
    ptx::cp_async_wait<0>();
    __syncthreads();

    // Scores, kept key-major (scores[i · Heads + h]): a warp takes four keys at a time, lanes
    // striding the head's elements (two neighbours at a time where Pairs > 0: head_dim = 64·Pairs,
    // with q in registers); the Heads · 4 dot products then meet across the lanes in one
    // transposing reduction (reduce_lanes).
    const int warp = tid >> 5, lane = tid & 31;
    constexpr int warps = split_threads / 32, per_warp = 4, values = Heads * per_warp;
    float q_pairs[Heads][Pairs > 0 ? Pairs : 1][2];
    if constexpr (Pairs > 0) {
#pragma unroll
        for (int h = 0; h < Heads; ++h)
#pragma unroll
            for (int v = 0; v < Pairs; ++v) {
                q_pairs[h][v][0] = q[h * hd + 64 * v + 2 * lane];
                q_pairs[h][v][1] = q[h * hd + 64 * v + 2 * lane + 1];
            }
    }
    for (int i0 = warp * per_warp; i0 < keys; i0 += warps * per_warp) {
        float dot[values];
#pragma unroll
        for (int v = 0; v < values; ++v) dot[v] = 0.0f;
        if constexpr (Pairs > 0) {
#pragma unroll
            for (int v = 0; v < Pairs; ++v) {
                float2 kv[per_warp];
#pragma unroll
                for (int u = 0; u < per_warp; ++u)
                    kv[u] = i0 + u < keys ? kv_pair(ks + int64_t(i0 + u) * hd, 64 * v + 2 * lane) : make_float2(0.0f, 0.0f);
#pragma unroll
                for (int h = 0; h < Heads; ++h)
#pragma unroll
                    for (int u = 0; u < per_warp; ++u) {
                        float& d = dot[h * per_warp + u];
                        d = __fmaf_rn(q_pairs[h][v][0], kv[u].x, d);
                        d = __fmaf_rn(q_pairs[h][v][1], kv[u].y, d);
                    }
            }
        } else {
            for (int e = lane; e < hd; e += 32) {
                float kv[per_warp];
#pragma unroll
                for (int u = 0; u < per_warp; ++u) kv[u] = i0 + u < keys ? kv_at(ks + int64_t(i0 + u) * hd, e) : 0.0f;
#pragma unroll
                for (int h = 0; h < Heads; ++h) {
                    const float qe = q[h * hd + e];
#pragma unroll
                    for (int u = 0; u < per_warp; ++u) dot[h * per_warp + u] = __fmaf_rn(qe, kv[u], dot[h * per_warp + u]);
                }
            }
        }
        const int index = reduce_lanes<values>(dot, lane);  // lane's result: dot product `index`
        const int h = index / per_warp, u = index % per_warp;
        if (lane % (32 / values) == 0 && i0 + u < keys) scores[(i0 + u) * Heads + h] = __fmul_rn(dot[0], a.scale);
    }
    __syncthreads();

    // Per head (a warp each, in turn): the chunk's max, the exponentials and their sum.
    for (int h = warp; h < Heads; h += warps) {
        float m = -INFINITY;
        for (int i = lane; i < keys; i += 32) m = fmaxf(m, scores[i * Heads + h]);
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
        float l = 0.0f;
        for (int i = lane; i < keys; i += 32) {
            const float e = expf(__fsub_rn(scores[i * Heads + h], m));
            scores[i * Heads + h] = e;
            l = __fadd_rn(l, e);
        }
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) l = __fadd_rn(l, __shfl_xor_sync(0xffffffffu, l, offset));
        if (lane == 0) {
            chunk_max[h] = m;
            chunk_sum[h] = l;
        }
    }
    __syncthreads();

    // o_h[e] = Σ_i e_hi · v_i[e]: `parts` threads per element (per pair of elements where
    // Pairs > 0), part r taking the r-th of `parts` contiguous runs of the keys in order, then the
    // parts added in order.
    constexpr int width = Pairs > 0 ? 2 : 1;  // elements a thread takes
    const int lanes = hd / width;             // threads per part
    const int parts = lanes <= split_threads ? split_threads / lanes : 1;
    const int part = tid / lanes < parts ? tid / lanes : parts;  // parts: this thread takes no element
    const int run = (keys + parts - 1) / parts;
    const int i_begin = part * run, i_end = i_begin + run < keys ? i_begin + run : keys;
    float* sums = scores + Heads * a.chunk_cap;  // parts · Heads · head_dim floats, past the scores
    for (int e = width * (tid % lanes); part < parts && e < hd; e += (parts > 1 ? hd : width * split_threads)) {
        float acc[Heads][width];
#pragma unroll
        for (int h = 0; h < Heads; ++h)
#pragma unroll
            for (int w2 = 0; w2 < width; ++w2) acc[h][w2] = 0.0f;
        for (int i = i_begin; i < i_end; ++i) {
            float v[width];
            if constexpr (Pairs > 0) {
                const float2 pair = kv_pair(vs + int64_t(i) * hd, e);
                v[0] = pair.x;
                v[width - 1] = pair.y;
            } else {
                v[0] = kv_at(vs + int64_t(i) * hd, e);
            }
#pragma unroll
            for (int h = 0; h < Heads; ++h)
#pragma unroll
                for (int w2 = 0; w2 < width; ++w2) acc[h][w2] = __fmaf_rn(scores[i * Heads + h], v[w2], acc[h][w2]);
        }
#pragma unroll
        for (int h = 0; h < Heads; ++h)
#pragma unroll
            for (int w2 = 0; w2 < width; ++w2) sums[(part * Heads + h) * hd + e + w2] = acc[h][w2];
    }
    __syncthreads();
    for (int i = tid; i < Heads * hd; i += split_threads) {
        float o = sums[i];
        for (int r = 1; r < parts; ++r) o = __fadd_rn(o, sums[r * Heads * hd + i]);
        const int h = i / hd, e = i % hd;
        a.partial[((int64_t(t) * a.n_head + h0 + h) * a.max_chunks + j) * (hd + 2) + e] = o;
    }
    if (tid < Heads) {
        float* tail = a.partial + ((int64_t(t) * a.n_head + h0 + tid) * a.max_chunks + j) * (hd + 2) + hd;
        tail[0] = chunk_max[tid];
        tail[1] = chunk_sum[tid];
    }

    // The last block of this (column, kv head) to finish combines.
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        int32_t* counter = a.counters + int64_t(t) * (a.n_head / Heads) + b;
        last = atomicAdd(counter, 1) == chunks - 1;
        if (last) *counter = 0;  // every block of this launch has counted: ready for the next
    }
    __syncthreads();
    if (!last) return;
    __threadfence();

    // The chunks' weights w_j and the normalizers, a warp per head (lanes take chunks in turn,
    // then a butterfly); then a thread per element, eight chunks' loads in flight at a time.
    float* w = reinterpret_cast<float*>(ks);  // Heads · chunks floats: the launcher sized the region
    __shared__ float inv_l[Heads];
    for (int h = warp; h < Heads; h += warps) {
        const float* head = a.partial + (int64_t(t) * a.n_head + h0 + h) * a.max_chunks * (hd + 2);
        // Each lane's chunks' m and l in one round of loads (up to 4 chunks a lane in registers).
        constexpr int held = 4;
        float ms[held], ls[held];
#pragma unroll
        for (int u = 0; u < held; ++u) {
            const int c = lane + 32 * u;
            ms[u] = c < chunks ? __ldcg(head + c * (hd + 2) + hd) : -INFINITY;
            ls[u] = c < chunks ? __ldcg(head + c * (hd + 2) + hd + 1) : 0.0f;
        }
        float m = -INFINITY;
#pragma unroll
        for (int u = 0; u < held; ++u) m = fmaxf(m, ms[u]);
        for (int c = lane + 32 * held; c < chunks; c += 32) m = fmaxf(m, __ldcg(head + c * (hd + 2) + hd));
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
        const float sink = a.sinks ? a.sinks[h0 + h] : -INFINITY;
        if (a.sinks) m = fmaxf(m, sink);
        float l = 0.0f;
#pragma unroll
        for (int u = 0; u < held; ++u) {
            const int c = lane + 32 * u;
            if (c < chunks) {
                const float wc = expf(__fsub_rn(ms[u], m));
                w[h * chunks + c] = wc;
                l = __fadd_rn(l, __fmul_rn(wc, ls[u]));
            }
        }
        for (int c = lane + 32 * held; c < chunks; c += 32) {
            const float wc = expf(__fsub_rn(__ldcg(head + c * (hd + 2) + hd), m));
            w[h * chunks + c] = wc;
            l = __fadd_rn(l, __fmul_rn(wc, __ldcg(head + c * (hd + 2) + hd + 1)));
        }
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) l = __fadd_rn(l, __shfl_xor_sync(0xffffffffu, l, offset));
        if (a.sinks) l = __fadd_rn(l, expf(__fsub_rn(sink, m)));
        if (lane == 0) inv_l[h] = __fdiv_rn(1.0f, l);
    }
    __syncthreads();
    const int64_t q_ne0 = int64_t(a.n_head) * hd;
    for (int i = tid; i < Heads * hd; i += split_threads) {
        const int h = i / hd, e = i % hd;
        const float* part = a.partial + (int64_t(t) * a.n_head + h0 + h) * a.max_chunks * (hd + 2) + e;
        float o = 0.0f;
        constexpr int ahead = 32;
        for (int c0 = 0; c0 < chunks; c0 += ahead) {
            float x[ahead];
#pragma unroll
            for (int u = 0; u < ahead; ++u) x[u] = c0 + u < chunks ? __ldcg(part + (c0 + u) * (hd + 2)) : 0.0f;
#pragma unroll
            for (int u = 0; u < ahead; ++u)
                if (c0 + u < chunks) o = __fadd_rn(o, __fmul_rn(w[h * chunks + c0 + u], x[u]));
        }
        const float value = __fmul_rn(o, inv_l[h]);
        if (a.out) a.out[int64_t(t) * q_ne0 + int64_t(h0) * hd + i] = value;
        // The records: head_dim is a multiple of 32 here, so a warp's 32 values are one block.
        if (a.records) write_record(a.records, q_ne0, a.cols, t, (int64_t(h0) * hd + i) / 32, value, lane);
    }
}

// Keys per chunk at most: what a block's K and V stage holds, a multiple of 8 in [8, 256].
inline int32_t split_chunk_cap(int32_t head_dim, std::size_t kv_bytes) {
    const auto fit = int32_t(std::size_t(split_stage_bytes) / (std::size_t(head_dim) * kv_bytes * 2)) / 8 * 8;
    return fit < 8 ? 8 : fit > 256 ? 256 : fit;
}

inline int32_t split_min_length(int32_t chunk_cap) { return chunk_cap < split_min_len ? chunk_cap : split_min_len; }

}  // namespace detail

// Chunks per (column, head) the split keeps room for, for a cache of n_ctx positions and chunks
// of at most chunk_cap keys: at least 32 (with 8 kv heads, 256 blocks from 2048 positions on),
// and enough that no chunk holds more than chunk_cap keys; never more than chunks of the shortest
// length can make.
inline int32_t split_attention_chunks(int64_t n_ctx, int32_t chunk_cap) {
    const int64_t min_len = detail::split_min_length(chunk_cap);
    const int64_t by_cap = (n_ctx + chunk_cap - 1) / chunk_cap;
    const int64_t by_min = (n_ctx + min_len - 1) / min_len;
    const int64_t chunks = by_cap > 32 ? by_cap : 32;
    return int32_t(chunks < by_min ? chunks : by_min);
}

// Whether the split form takes these heads and cache (else the one-block-per-head attention runs).
inline bool split_attention_supports(const graph::attention_params& p, qtype kv_type) {
    const int group = p.n_head_kv > 0 ? p.n_head / p.n_head_kv : 0;
    const std::size_t bytes = kv_type == qtype::f16 ? 2 : 4;
    return p.head_dim >= 8 && p.head_dim <= detail::split_max_head_dim && std::size_t(p.head_dim) * bytes % 16 == 0 &&
           p.n_head_kv >= 1 && p.n_head % p.n_head_kv == 0 && group >= 1 && (kv_type == qtype::f16 || kv_type == qtype::f32);
}

inline int32_t split_chunk_cap(const graph::attention_params& p, qtype kv_type) {
    return detail::split_chunk_cap(p.head_dim, kv_type == qtype::f16 ? 2 : 4);
}

// Scratch of the split form: the partial sums of every (column, head, chunk).
inline std::size_t split_attention_scratch_bytes(int64_t n_ctx, const graph::attention_params& p, qtype kv_type,
                                                 int64_t max_cols) {
    return std::size_t(max_cols) * std::size_t(p.n_head) *
           std::size_t(split_attention_chunks(n_ctx, split_chunk_cap(p, kv_type))) * std::size_t(p.head_dim + 2) *
           sizeof(float);
}

// The counters the split form keeps between launches: one int32 per (column, head block), zero
// before the first launch (the kernel leaves them zero).
inline std::size_t split_attention_counter_bytes(const graph::attention_params& p, int64_t max_cols) {
    const int heads = detail::split_heads_per_block(p.n_head / p.n_head_kv, p.n_head_kv);
    return std::size_t(max_cols) * std::size_t(p.n_head / heads) * sizeof(int32_t);
}

// out (null: not kept) and records (null: none; else rounded_records_bytes(n_head · head_dim,
// cols) bytes and head_dim a multiple of 32) from q (column t at q + t · q_stride) and the caches.
// positions_before_wait: no kernel on the stream writes pos, nor the cache below the batch's
// first position, so a programmatic dependent launch may read them (and copy those keys) while
// the kernels before it run. p.window: see attention_params; sinks: n_head device floats, or null.
inline void split_attention(const float* q, int64_t q_stride, qtype kv_type, const void* k, const void* v, int64_t n_ctx,
                            const int32_t* pos, float* out, void* records, int64_t cols,
                            const graph::attention_params& p, void* scratch, std::size_t scratch_bytes, int32_t* counters,
                            std::size_t counter_bytes, cudaStream_t stream, const launch_options& o = {},
                            bool positions_before_wait = false, const float* sinks = nullptr) {
    const char* op = "cuda::ops::split_attention";
    check(split_attention_supports(p, kv_type), errc::shape_mismatch, [&] {
        return std::string(op) + ": n_head " + std::to_string(p.n_head) + ", n_head_kv " + std::to_string(p.n_head_kv) +
               ", head_dim " + std::to_string(p.head_dim) + ", cache " + name(kv_type) +
               ": needs an f16 or f32 cache, head_dim 8..512 with rows of whole 16 bytes, and n_head a multiple of "
               "n_head_kv";
    });
    check(p.window >= 0, errc::invalid_argument,
          [&] { return std::string(op) + ": window " + std::to_string(p.window) + " must be >= 0 (0: none)"; });
    check(!records || p.head_dim % 32 == 0, errc::shape_mismatch, [&] {
        return std::string(op) + ": Q8_1 records need head_dim a multiple of 32, got " + std::to_string(p.head_dim);
    });
    if (cols == 0) return;
    detail::check_columns(cols, op);
    check(scratch_bytes >= split_attention_scratch_bytes(n_ctx, p, kv_type, cols) &&
              counter_bytes >= split_attention_counter_bytes(p, cols),
          errc::invalid_argument, [&] {
              return std::string(op) + ": scratch of " + std::to_string(scratch_bytes) + " bytes and counters of " +
                     std::to_string(counter_bytes) + ", " +
                     std::to_string(split_attention_scratch_bytes(n_ctx, p, kv_type, cols)) + " and " +
                     std::to_string(split_attention_counter_bytes(p, cols)) + " needed";
          });
    const int32_t cap = split_chunk_cap(p, kv_type);
    const int32_t chunks = split_attention_chunks(n_ctx, cap);
    const int heads = detail::split_heads_per_block(p.n_head / p.n_head_kv, p.n_head_kv);
    const std::size_t kv_bytes = kv_type == qtype::f16 ? 2 : 4;
    // q and the scores, then the K and V stage, which the combine reuses for the chunks' weights.
    const std::size_t stage = std::max(2 * std::size_t(cap) * std::size_t(p.head_dim) * kv_bytes,
                                       std::size_t(heads) * std::size_t(chunks) * sizeof(float));
    const int pairs = p.head_dim == 64 ? 1 : p.head_dim == 128 ? 2 : 0;  // the paired form's head sizes
    const std::size_t lanes = std::size_t(p.head_dim / (pairs > 0 ? 2 : 1));
    const std::size_t parts = lanes <= std::size_t(detail::split_threads) ? std::size_t(detail::split_threads) / lanes : 1;
    const std::size_t smem = std::size_t(heads) * std::size_t(p.head_dim + cap) * sizeof(float) +
                             parts * std::size_t(heads) * std::size_t(p.head_dim) * sizeof(float) + stage;
    check(smem <= 200 * 1024, errc::invalid_argument, [&] {
        return std::string(op) + ": a cache of " + std::to_string(n_ctx) + " positions needs " + std::to_string(smem) +
               " bytes of shared memory per block";
    });
    detail::split_attention_args a{q,      q_stride, k,     v,          pos,         static_cast<float*>(scratch),
                                   counters, out,    static_cast<uint8_t*>(records), n_ctx, cols, p.n_head,
                                   p.n_head_kv, p.head_dim, chunks, detail::split_min_length(cap), cap, p.scale,
                                   positions_before_wait ? 1 : 0, p.window, sinks};
    const dim3 grid(unsigned(p.n_head / heads), unsigned(chunks), unsigned(cols));
    auto split = [&](auto kernel) {
        if (smem > 48 * 1024)
            LLMRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        detail::launch(op, kernel, grid, dim3(detail::split_threads), smem, stream, o, a);
    };
    const bool half = kv_type == qtype::f16;
    auto with_pairs = [&](auto heads) {
        constexpr int H = decltype(heads)::value;
        switch (pairs) {
            case 1: half ? split(detail::split_attention_kernel<uint16_t, H, 1>) : split(detail::split_attention_kernel<float, H, 1>); break;
            case 2: half ? split(detail::split_attention_kernel<uint16_t, H, 2>) : split(detail::split_attention_kernel<float, H, 2>); break;
            default: half ? split(detail::split_attention_kernel<uint16_t, H, 0>) : split(detail::split_attention_kernel<float, H, 0>); break;
        }
    };
    static_assert(detail::split_max_heads == 4, "split_attention: the launch below takes 1, 2 or 4 heads a block");
    switch (heads) {
        case 1: with_pairs(std::integral_constant<int, 1>{}); break;
        case 2: with_pairs(std::integral_constant<int, 2>{}); break;
        default: with_pairs(std::integral_constant<int, 4>{}); break;
    }
}

}  // namespace llmrt::cuda::ops
