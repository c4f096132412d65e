// The mixture-of-experts ops on the device, with the CPU reference's formulas and orders
// (cpu/ops.hpp, cpu/mul_mat.hpp):
//
//   shard_ids, shard_weights  expert parallelism: the slots of the rank's own experts
//   router_top_k    the router's float mat-vec (mul_mat_float's blocks, with its bias) whose last
//                   block of a column runs its top_k (below), with the softmax and the expert_weights
//   top_k           one warp per column: k scans, pick j the first index of the largest value
//                   after pick j − 1 in (value descending, index ascending) order; with the
//                   expert_weights of the same values when the step carries them, and the
//                   softmax before it when the step holds it (the router's probabilities).
//                   Columns of more than 256 values (a vocabulary's logits) and k up to
//                   top_k_wide_max_k: top_k_wide.cuh's radix selection, the same picks
//   expert_weights  one thread per column: y_j = p[ids_j], with expert_norm::sum divided by
//                   max(float(Σ_j y_j in double), 2⁻¹⁴) (__fdiv_rn: correctly rounded, as the CPU)
//   weighted_sum    one thread per element: ((w₀x₀ + w₁x₁) + ...) with __fmul_rn/__fadd_rn, so no
//                   fused multiply-add changes the CPU's bits
//   add_id          one thread per element: y = x + b[:, id] (__fadd_rn), NaN where the id is outside
//                   [0, n_expert) (the executor refuses such ids from inputs before a run)
//   mul_mat_id      llmrt's mmvq_id (cuda/mmvq.cuh) on Q8_1 activations: every token's activation
//                   columns quantized once, each (token, slot) reading the expert its id names
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "llmrt/cuda/mmvq.cuh"
#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/cuda/ops/mul_mat.cuh"
#include "llmrt/cuda/ops/norm.cuh"
#include "llmrt/cuda/ops/top_k_wide.cuh"
#include "llmrt/graph/experts.hpp"
#include "llmrt/graph/node.hpp"

namespace llmrt::cuda::ops {

namespace detail {

constexpr int moe_threads = 128;
constexpr int top_k_warps = 4;

// The kernels are templates (over their block size) so that a header included by several
// translation units of one program defines each of them once.
// expert_weights of one column, y_j = v_j on entry (graph::expert_norm; the CPU's bits):
//   sum      y_j / max(float(Σ_j y_j), 2⁻¹⁴), the sum in double in slot order
//   softmax  exp(y_j − max) · float(1 / Σ_j exp(y_j − max)), the sum in double in slot order
__device__ inline void weigh_experts(float* y, int64_t k, graph::expert_norm norm) {
    if (norm == graph::expert_norm::sum) {
        double sum = 0.0;
        for (int64_t j = 0; j < k; ++j) sum = __dadd_rn(sum, double(y[j]));
        const float total = graph::expert_sum_divisor(sum);
        for (int64_t j = 0; j < k; ++j) y[j] = __fdiv_rn(y[j], total);
    } else if (norm == graph::expert_norm::softmax) {
        float max = -INFINITY;
        for (int64_t j = 0; j < k; ++j) max = fmaxf(max, y[j]);
        double sum = 0.0;
        for (int64_t j = 0; j < k; ++j) {
            y[j] = expf(__fsub_rn(y[j], max));
            sum = __dadd_rn(sum, double(y[j]));
        }
        const float inv = float(1.0 / sum);
        for (int64_t j = 0; j < k; ++j) y[j] = __fmul_rn(y[j], inv);
    }
}

// weigh_experts for k <= 32 picks held by a warp, pick j's value in lane j's v: the same bits
// (the sums in slot order, every lane adding the values it is handed in turn), with no memory
// round trip. Returns lane's weight (lanes k and above: unused).
__device__ inline float weigh_held(float v, int k, graph::expert_norm norm) {
    if (norm == graph::expert_norm::sum) {
        double sum = 0.0;
        for (int j = 0; j < k; ++j) sum = __dadd_rn(sum, double(__shfl_sync(0xffffffffu, v, j)));
        return __fdiv_rn(v, graph::expert_sum_divisor(sum));
    }
    if (norm == graph::expert_norm::softmax) {
        float max = -INFINITY;
        for (int j = 0; j < k; ++j) max = fmaxf(max, __shfl_sync(0xffffffffu, v, j));
        const float e = expf(__fsub_rn(v, max));
        double sum = 0.0;
        for (int j = 0; j < k; ++j) sum = __dadd_rn(sum, double(__shfl_sync(0xffffffffu, e, j)));
        return __fmul_rn(e, float(1.0 / sum));
    }
    return v;
}

// softmax (ops/norm.cuh's formula) of one column of at most 32 · PerLane values by one warp,
// into registers (lane l's elements l + 32r in held[r]) and y: the max, then per lane
// e = exp(x − max) and their sum in double (the lane's elements in order, then a butterfly,
// which leaves every lane the same sum), then y = e · float(1 / sum).
template <int PerLane>
__device__ inline void softmax_held(const float* x, float* y, float (&held)[PerLane], int64_t n, int lane) {
    float max = -INFINITY;
#pragma unroll
    for (int r = 0; r < PerLane; ++r) {
        held[r] = lane + 32 * r < n ? __ldcg(x + lane + 32 * r) : 0.0f;  // x may come from other blocks of this launch
        if (lane + 32 * r < n) max = fmaxf(max, held[r]);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, offset));
    double sum = 0.0;
#pragma unroll
    for (int r = 0; r < PerLane; ++r)
        if (lane + 32 * r < n) {
            held[r] = expf(__fsub_rn(held[r], max));
            sum += double(held[r]);
        }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float inv = float(1.0 / sum);
#pragma unroll
    for (int r = 0; r < PerLane; ++r)
        if (lane + 32 * r < n) {
            held[r] = __fmul_rn(held[r], inv);
            y[lane + 32 * r] = held[r];
        }
}

// One warp per column. Pick j is what the CPU's scan finds: among the values after pick j − 1 in
// (value descending, index ascending) order, the first index of the largest; the lanes scan
// strided slices and a butterfly keeps the larger value, or the lower index of equal ones. NaN is
// never after a pick, and the scan keeps a NaN only as its very first candidate: x[0] when NaN is
// pick 0 (then nothing follows it, and the remaining picks are their own slot numbers j).
// w (when not null): the carried expert_weights of the same values (graph/lower.hpp), weighed
// from the picked values: for k <= 32 lane j keeps pick j and the warp weighs them in registers
// (weigh_held), else lane 0 weighs them in memory (weigh_experts).
// PerLane > 0: the column (n <= 32·PerLane) sits in registers, lane l holding x[l + 32r], read
// once for the k scans; PerLane = 0: every scan reads the column again.
// logits (when not null; PerLane > 0): x = softmax(logits) first, computed into the registers
// and written by the column's warp (softmax_held), which then ranks it.
// The top_k of one column by one warp: x, y, w (null: none) and logits (null: none) at the
// column's own values.
template <int PerLane>
__device__ inline void top_k_column(const float* x, int32_t* y, float* w, int64_t n, int64_t k, graph::expert_norm norm,
                                    const float* logits, int lane) {
    [[maybe_unused]] float held[PerLane > 0 ? PerLane : 1] = {};
    if constexpr (PerLane > 0) {
        if (logits) {
            softmax_held<PerLane>(logits, const_cast<float*>(x), held, n, lane);
        } else {
#pragma unroll
            for (int r = 0; r < PerLane; ++r) held[r] = lane + 32 * r < n ? __ldcg(x + lane + 32 * r) : 0.0f;  // may come from other blocks
        }
    }
    // x[0] (the scan's first candidate) and every pick's value come from registers: no load waits
    // inside the k rounds (only when nothing but NaN is left is a value read back).
    float x0;
    if constexpr (PerLane > 0) x0 = __shfl_sync(0xffffffffu, held[0], 0);
    else x0 = x[0];
    int prev = -1;
    float prev_v = 0.0f;
    const bool held_picks = k <= 32;
    int32_t my_pick = 0;  // held_picks: pick `lane` and its value
    float my_value = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
        int best = INT_MAX;
        float best_v = -INFINITY;
        auto consider = [&](int i, float v) {
            const bool after = prev < 0 ? !isnan(v) : (v < prev_v || (v == prev_v && i > prev));
            if (after && (best == INT_MAX || v > best_v)) {
                best = i;
                best_v = v;
            }
        };
        if constexpr (PerLane > 0) {
#pragma unroll
            for (int r = 0; r < PerLane; ++r)
                if (lane + 32 * r < n) consider(lane + 32 * r, held[r]);
        } else {
            for (int64_t i = lane; i < n; i += 32) consider(int(i), x[i]);
        }
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, best_v, offset);
            const int oi = __shfl_xor_sync(0xffffffffu, best, offset);
            if (oi != INT_MAX && (best == INT_MAX || ov > best_v || (ov == best_v && oi < best))) {
                best = oi;
                best_v = ov;
            }
        }
        if (j == 0 && isnan(x0)) {  // the scan's first candidate, never replaced
            best = 0;
            best_v = x0;
        }
        if (best == INT_MAX || (prev >= 0 && isnan(prev_v))) {  // only NaNs remain: any valid index
            best = int(j);
            best_v = x[j];
        }
        prev = best;
        prev_v = best_v;  // x[best]: the value the scan carried with the index
        if (held_picks) {
            if (lane == j) {
                my_pick = int32_t(best);
                my_value = prev_v;
            }
        } else if (lane == 0) {
            y[j] = int32_t(best);
            if (w) w[j] = prev_v;
        }
    }
    if (held_picks) {
        const float weight = w ? weigh_held(my_value, int(k), norm) : 0.0f;  // every lane takes part
        if (lane < k) {
            y[lane] = my_pick;
            if (w) w[lane] = weight;
        }
    } else if (w && lane == 0) {
        weigh_experts(w, k, norm);
    }
}

template <int Warps, int PerLane>
__global__ void __launch_bounds__(32 * Warps) top_k_kernel(const float* x, int32_t* y, float* w, int64_t n, int64_t k,
                                                           int64_t cols, graph::expert_norm norm, const float* logits) {
    enter_kernel();
    const int64_t c = int64_t(blockIdx.x) * Warps + (threadIdx.x >> 5);
    const int lane = int(threadIdx.x) & 31;
    if (c >= cols) return;
    top_k_column<PerLane>(x + c * n, y + c * k, w ? w + c * k : nullptr, n, k, norm, logits ? logits + c * n : nullptr, lane);
}

}  // namespace detail

// A router and its top k, as router_top_k computes them (every pointer a device one; cols columns
// of each): the router's logits = W · x (W: n rows of k_in floats of `type`), optionally with a
// bias (biased = logits + bias), then either the softmax of those scores ranked (probs) or the
// scores ranked as they are; ids their top k, weights (null: none) the expert_weights of the
// picks with `norm`.
struct router_picks {
    qtype type = qtype::f32;
    const void* w = nullptr;
    int64_t n = 0, k_in = 0, k = 0;
    const float* x = nullptr;
    float* logits = nullptr;
    const float* bias = nullptr;  // null: none
    float* biased = nullptr;
    bool softmax = true;
    float* probs = nullptr;  // softmax: written
    int32_t* ids = nullptr;
    float* weights = nullptr;
    graph::expert_norm norm = graph::expert_norm::none;
};

namespace detail {

// The router and its top k in one launch: mul_mat_float's blocks over the experts' scores of
// column blockIdx.y; the block that finishes a column last (an integer counter per column, left
// at zero) runs top_k_column on it with its warp 0: the softmax, the picks and their weights.
// KPerLane > 0: the router's weights are loaded before the wait for the kernel before
// (mul_mat_float_rows_early), while that kernel (the norm) still runs.
template <class B, int PerLane, int KPerLane>
__global__ void __launch_bounds__(32 * mul_mat_warps) router_top_k_kernel(const router_picks a, int32_t* counters) {
    __shared__ int last;
    if constexpr (KPerLane > 0) {
        mul_mat_float_rows_early<B, KPerLane>(static_cast<const B*>(a.w), a.x, a.logits, a.n, a.k_in, a.bias, a.biased);
    } else {
        enter_kernel();
        mul_mat_float_rows<B>(static_cast<const B*>(a.w), a.x, a.logits, a.n, a.k_in, a.bias, a.biased);
    }
    __threadfence();  // the block's scores are visible before its arrival is
    __syncthreads();
    const int64_t c = blockIdx.y;
    if (threadIdx.x == 0) {
        last = atomicAdd(counters + c, 1) == int(gridDim.x) - 1;
        if (last) counters[c] = 0;  // every block of this column has counted: ready for the next launch
    }
    __syncthreads();
    if (!last || threadIdx.x >= 32) return;
    __threadfence();  // the other blocks' scores are read after their arrivals
    const float* scores = (a.bias ? a.biased : a.logits) + c * a.n;
    float* weights = a.weights ? a.weights + c * a.k : nullptr;
    if (a.softmax)
        top_k_column<PerLane>(a.probs + c * a.n, a.ids + c * a.k, weights, a.n, a.k, a.norm, scores, int(threadIdx.x));
    else
        top_k_column<PerLane>(scores, a.ids + c * a.k, weights, a.n, a.k, a.norm, nullptr, int(threadIdx.x));
}

template <int Threads>
__global__ void __launch_bounds__(Threads)
    expert_weights_kernel(const float* p, const int32_t* ids, float* y, int64_t n, int64_t k, int64_t cols, graph::expert_norm norm) {
    enter_kernel();
    const int64_t c = int64_t(blockIdx.x) * Threads + threadIdx.x;
    if (c >= cols) return;
    for (int64_t j = 0; j < k; ++j) {
        const int32_t id = ids[c * k + j];
        y[c * k + j] = id >= 0 && id < n ? p[c * n + id] : __int_as_float(0x7fc00000);
    }
    weigh_experts(y + c * k, k, norm);
}

template <int Threads>
__global__ void __launch_bounds__(Threads)
    weighted_sum_kernel(const float* x, const float* w, float* y, int64_t n, int64_t k) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * Threads + threadIdx.x, c = blockIdx.y;
    if (i >= n) return;
    x += c * n * k;
    w += c * k;
    float acc = __fmul_rn(w[0], x[i]);
    for (int64_t s = 1; s < k; ++s) acc = __fadd_rn(acc, __fmul_rn(w[s], x[s * n + i]));
    y[c * n + i] = acc;
}

// Grid x over cols · k · rows elements: element i of slot (column, s) = i / rows.
template <int Threads>
__global__ void __launch_bounds__(Threads) add_id_kernel(const float* x, const float* b, const int32_t* ids, float* y,
                                                         int64_t rows, int64_t n_expert, int64_t count) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * Threads + threadIdx.x;
    if (i >= count) return;
    const int64_t slot = i / rows, r = i % rows;
    const int32_t id = ids[slot];
    y[i] = id >= 0 && id < n_expert ? __fadd_rn(x[i], b[int64_t(id) * rows + r]) : __int_as_float(0x7fc00000);
}

// Expert parallelism (graph/experts.hpp): a thread per column, or per slot.
template <int Threads>
__global__ void __launch_bounds__(Threads)
    shard_ids_kernel(const int32_t* ids, int32_t* y, int64_t k, int64_t cols, int64_t first, int64_t count) {
    enter_kernel();
    const int64_t c = int64_t(blockIdx.x) * Threads + threadIdx.x;
    if (c < cols) graph::shard_ids_column(ids + c * k, y + c * k, k, first, count);
}

template <int Threads>
__global__ void __launch_bounds__(Threads) shard_weights_kernel(const float* w, const int32_t* ids, float* y, int64_t count_all,
                                                                int64_t first, int64_t count) {
    enter_kernel();
    const int64_t i = int64_t(blockIdx.x) * Threads + threadIdx.x;
    if (i < count_all) y[i] = graph::shard_weight(w[i], ids[i], first, count);
}

}  // namespace detail

// Expert parallelism (graph::op::shard_ids, shard_weights; cpu/ops.hpp's bits): cols columns of
// k slots, the rank holding experts [first, first + count).
inline void shard_ids(const int32_t* ids, int32_t* y, int64_t k, int64_t cols, int64_t first, int64_t count,
                      cudaStream_t stream, const launch_options& o = {}) {
    const char* op = "cuda::ops::shard_ids";
    if (cols == 0) return;
    detail::launch(op, detail::shard_ids_kernel<detail::moe_threads>, dim3(detail::blocks_for(cols, detail::moe_threads, op)),
                   detail::moe_threads, 0, stream, o, ids, y, k, cols, first, count);
}

inline void shard_weights(const float* w, const int32_t* ids, float* y, int64_t k, int64_t cols, int64_t first, int64_t count,
                          cudaStream_t stream, const launch_options& o = {}) {
    const char* op = "cuda::ops::shard_weights";
    if (cols == 0) return;
    detail::launch(op, detail::shard_weights_kernel<detail::moe_threads>,
                   dim3(detail::blocks_for(k * cols, detail::moe_threads, op)), detail::moe_threads, 0, stream, o, w, ids, y,
                   k * cols, first, count);
}

// x: cols columns of n floats; y: cols columns of k int32 (k <= n). weights (null: none): the
// expert_weights(x, y, norm) of the same columns, cols × k floats, from the same launch.
// logits (null: none): x = softmax(logits) is computed first and written to x, in the same
// launch where a column fits the registers (n <= 256), else by the softmax kernel before.
// Columns of more than 256 values with k <= top_k_wide_max_k go to top_k_wide, split over
// blocks with scratch of top_k_scratch_bytes(n, k, cols) bytes (null: a block per column);
// larger k to one warp per column, k scans of the column.
inline void top_k(const float* x, int32_t* y, int64_t n, int64_t k, int64_t cols, cudaStream_t stream,
                  const launch_options& o = {}, float* weights = nullptr, graph::expert_norm norm = graph::expert_norm::none,
                  const float* logits = nullptr, void* scratch = nullptr, std::size_t scratch_bytes = 0) {
    const char* op = "cuda::ops::top_k";
    check(n >= 1 && k >= 1 && k <= n && n <= 0x7fffffff, errc::shape_mismatch,
          [&] { return std::string(op) + ": k = " + std::to_string(k) + " of columns of " + std::to_string(n); });
    if (cols == 0) return;
    if (logits && n > 256) {
        softmax(logits, const_cast<float*>(x), n, cols, stream, o);
        logits = nullptr;
    }
    if (top_k_wide_supports(n, k)) {
        top_k_wide(x, y, n, k, cols, scratch, scratch_bytes, stream, o, weights, norm);
        return;
    }
    auto run = [&](auto kernel) {
        detail::launch(op, kernel, dim3(detail::blocks_for(cols, detail::top_k_warps, op)), 32 * detail::top_k_warps, 0,
                       stream, o, x, y, weights, n, k, cols, norm, logits);
    };
    // Up to 256 values (the experts of every MoE model so far) are held in registers; longer
    // columns come here only for k past top_k_wide_max_k.
    if (n <= 128)
        run(detail::top_k_kernel<detail::top_k_warps, 4>);
    else if (n <= 256)
        run(detail::top_k_kernel<detail::top_k_warps, 8>);
    else
        run(detail::top_k_kernel<detail::top_k_warps, 0>);
}

// Whether router_top_k takes a router of this type (one it dispatches over) and n experts (the
// column in registers).
inline bool router_top_k_supports(qtype type, int64_t n) {
    return is_in<float_weight_types>(type) && n >= 1 && n <= 256;
}

// r's results for cols columns in one launch, the bits that mul_mat_float, add, and top_k (with
// its logits where r.softmax) give. counters: cols int32 at zero, left at zero.
inline void router_top_k(const router_picks& r, int64_t cols, int32_t* counters, cudaStream_t stream,
                         const launch_options& o = {}) {
    const char* op = "cuda::ops::router_top_k";
    check(router_top_k_supports(r.type, r.n) && r.k >= 1 && r.k <= r.n && r.k_in >= 1, errc::shape_mismatch, [&] {
        return std::string(op) + ": a router of " + name(r.type) + " with " + std::to_string(r.n) + " experts, k = " +
               std::to_string(r.k) + " (a float type, 1..256 experts, 1 <= k <= n)";
    });
    check(counters && r.w && r.x && r.logits && r.ids && (!r.softmax || r.probs) && (!r.bias || r.biased),
          errc::invalid_argument, [&] { return std::string(op) + ": null pointer"; });
    if (cols == 0) return;
    detail::check_columns(cols, op);
    const dim3 grid(detail::blocks_for(r.n, detail::mul_mat_rows_per_block, op), unsigned(cols));
    // Routers of up to 4096 inputs (every released MoE's so far) hold their weights in registers.
    const int64_t lanes = detail::mul_mat_early_lanes(r.k_in);
    dispatch<float_weight_types>(r.type, op, [&](auto tag) {
        using B = typename decltype(tag)::type;
        auto go = [&](auto kernel) {
            detail::launch(op, kernel, grid, dim3(32 * detail::mul_mat_warps), 0, stream, o, r, counters);
        };
        auto with_picks = [&](auto per_lane) {
            constexpr int P = decltype(per_lane)::value;
            if (lanes <= 16) go(detail::router_top_k_kernel<B, P, 16>);
            else if (lanes <= 32) go(detail::router_top_k_kernel<B, P, 32>);
            else go(detail::router_top_k_kernel<B, P, 0>);
        };
        if (r.n <= 128) with_picks(std::integral_constant<int, 4>{});
        else with_picks(std::integral_constant<int, 8>{});
    });
}

// p: cols columns of n probabilities; ids: cols × k int32 (an id outside [0, n) gives NaN);
// y: cols × k weights.
inline void expert_weights(const float* p, const int32_t* ids, float* y, int64_t n, int64_t k, int64_t cols,
                           graph::expert_norm norm, cudaStream_t stream, const launch_options& o = {}) {
    const char* op = "cuda::ops::expert_weights";
    if (cols == 0) return;
    detail::launch(op, detail::expert_weights_kernel<detail::moe_threads>,
                   dim3(detail::blocks_for(cols, detail::moe_threads, op)), detail::moe_threads, 0, stream, o, p, ids,
                   y, n, k, cols, norm);
}

// x: cols columns of k slots of n floats; w: cols × k; y: cols columns of n.
inline void weighted_sum(const float* x, const float* w, float* y, int64_t n, int64_t k, int64_t cols, cudaStream_t stream,
                         const launch_options& o = {}) {
    const char* op = "cuda::ops::weighted_sum";
    if (cols == 0 || n == 0) return;
    detail::check_columns(cols, op);
    detail::launch(op, detail::weighted_sum_kernel<detail::moe_threads>,
                   dim3(detail::blocks_for(n, detail::moe_threads, op), unsigned(cols)), detail::moe_threads, 0, stream, o, x, w,
                   y, n, k);
}

// x, y: cols columns of k slots of rows floats (y may be x); b: n_expert columns of rows;
// ids: cols × k (an id outside [0, n_expert) gives NaN for its slot).
inline void add_id(const float* x, const float* b, const int32_t* ids, float* y, int64_t rows, int64_t n_expert, int64_t k,
                   int64_t cols, cudaStream_t stream, const launch_options& o = {}) {
    const char* op = "cuda::ops::add_id";
    const int64_t count = rows * k * cols;
    if (count == 0) return;
    detail::launch(op, detail::add_id_kernel<detail::moe_threads>, dim3(detail::blocks_for(count, detail::moe_threads, op)),
                   detail::moe_threads, 0, stream, o, x, b, ids, y, rows, n_expert, count);
}

// Scratch of mul_mat_id: the Q8_1 records of up to max_cols tokens of x_per_token columns of k.
inline std::size_t mul_mat_id_scratch_bytes(int64_t k, int64_t x_per_token, int64_t max_cols) {
    input_columns x;
    x.length = k;
    x.ncols = x_per_token;
    x.batch2 = max_cols;
    return mmvq_id_scratch_bytes(x);
}

// W: n_expert matrices of rows × k of a weight type, one after another; x: cols tokens of
// x_per_token (1 or n_used) columns of k; ids: cols × n_used; y: cols × n_used columns of rows.
inline void mul_mat_id(qtype t, const void* w, int64_t rows, int64_t k, int64_t n_expert, const float* x,
                       int64_t x_per_token, const int32_t* ids, int64_t n_used, float* y, int64_t cols, void* scratch,
                       std::size_t scratch_bytes, cudaStream_t stream, const launch_options& o = {}) {
    if (cols == 0) return;
    qmatrix_view experts;
    experts.type = t;
    experts.data = w;
    experts.rows = rows;
    experts.k = k;
    experts.batch2 = n_expert;
    input_columns xs;
    xs.data = x;
    xs.length = k;
    xs.ncols = x_per_token;
    xs.batch2 = cols;
    expert_ids_view iv;
    iv.data = ids;
    iv.n_tokens = cols;
    iv.n_used = n_used;
    output_columns ys;
    ys.data = y;
    ys.length = rows;
    ys.ncols = n_used;
    ys.batch2 = cols;
    mmvq_id(experts, xs, iv, ys, scratch, scratch_bytes, stream, o);
}

}  // namespace llmrt::cuda::ops
