// top_k over long columns on the device (graph::op::top_k past the 256 values that moe.cuh's warp
// holds in registers: a vocabulary's logits), with cpu::top_k's picks bit for bit.
//
// Every value becomes a unique 64-bit key whose order is the picks' order: the float's bits made
// order-preserving in the high word (-0.0 as +0.0, so the two tie; NaN below -inf, at 0), and
// 0xFFFFFFFF − index in the low word (of equal values the lower index ranks first). No value's
// key is 0 (an index below 2³¹ leaves a low word of 2³¹ or more): key 0 stands for none.
//
//   top_k_slices_kernel  grid (slices, cols): a block of 512 threads takes 4096 values of a column
//                        and writes the keys of its best min(k, count) to scratch (in any order,
//                        zeros after them): k keys a slice
//   top_k_merge_kernel   one block a column: its candidates (the slices' keys, or the column's own
//                        values where it has no scratch or fits one slice) in rounds of 16 keys a
//                        thread (8192 or 16384), each the best k kept from before and fresh ones;
//                        then the k best keys sorted (bitonic), the picks, and their
//                        expert_weights with weigh_experts' operations (moe.cuh)
//
// A block finds its best `want` keys by radix selection: 8 bits at a time from the top, a
// histogram of the keys still tied with the prefix fixes the digit of the want-th largest key,
// until the keys of that digit are exactly the ones still wanted; bits all keys share are
// skipped. Shared atomics count and compact, so the order the selected keys are written in varies
// from run to run, but which keys does not, and the final sort fixes the order: the results are
// deterministic.
//
// The picks follow cpu::top_k's scans, NaN included: pick 0 is 0 when x[0] is NaN, else the
// largest key; pick j > 0 is the largest key of a non-NaN value below pick j − 1's key, but j
// itself when there is none or pick j − 1's value is NaN (and the scan goes on below x[j]'s key).
// Without NaN, and with x[0] not NaN, that is the k best keys in order. Other columns walk those
// rules over the k best keys; only where a walk leaves them (x[0] NaN, and then a value ranked k or
// later) does the block scan the whole column for the next key, once per pick.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/cuda/ops/common.cuh"
#include "llmrt/graph/experts.hpp"
#include "llmrt/graph/node.hpp"

namespace llmrt::cuda::ops {

// The largest k the wide path takes: its final keys are sorted in one block's shared memory.
inline constexpr int64_t top_k_wide_max_k = 1024;

namespace detail {

constexpr int top_k_slice_threads = 512, top_k_slice_items = 8;
constexpr int64_t top_k_slice = int64_t(top_k_slice_threads) * top_k_slice_items;  // values a slice block takes
constexpr int top_k_merge_items = 16;  // a merge round: 16 keys a thread, 512 threads (up to 8192 candidates) or 1024

using top_k_key_t = unsigned long long;

__device__ __forceinline__ top_k_key_t top_k_key(float v, int64_t i) {
    uint32_t u = __float_as_uint(v);
    uint32_t high = 0;  // NaN: below every number
    if (v == v) {
        if (v == 0.0f) u = 0;  // -0.0 ties +0.0
        high = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    }
    return (top_k_key_t(high) << 32) | top_k_key_t(0xFFFFFFFFu - uint32_t(i));
}
__device__ __forceinline__ int32_t top_k_key_index(top_k_key_t key) { return int32_t(0xFFFFFFFFu - uint32_t(key)); }
// A NaN's key, or key 0 (none).
__device__ __forceinline__ bool top_k_key_nan(top_k_key_t key) { return (key >> 32) == 0; }

struct top_k_select_shared {
    int hist[2][256];  // the passes' histograms, in turn (one is cleared while the other counts)
    top_k_key_t all_and[32], all_or[32];
    int count[32];
    int digit, above, in_digit;  // a pass's result
    int filled;                  // the compaction's count
};

// The selected keys: key != 0 && (key & mask) >= prefix, want of them.
struct top_k_selection {
    top_k_key_t mask = 0, prefix = 0;
    int want = 0;
};

// The best min(at_most, nonzero keys) of the block's keys (Items a thread, 0: no key; key i of a
// thread is slot i·Threads + thread, and slots from rows·Threads on hold none); every thread of
// the block takes part and gets the same result. The nonzero keys must be unique.
// Bits every key has alike (from the AND and the OR of them all) join the prefix without a pass:
// an index's high bits within a slice, a rounded value's low mantissa bits.
template <int Threads, int Items>
__device__ __forceinline__ top_k_selection top_k_select(const top_k_key_t (&key)[Items], int rows, int64_t at_most,
                                                        top_k_select_shared& s) {
    constexpr int warps = Threads / 32;
    static_assert(Threads % 32 == 0 && warps <= 32, "top_k_select: whole warps, at most 1024 threads");
    const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
    __syncthreads();  // a previous selection's shared values are read, and the keys loaded from shared memory
    for (int t = int(threadIdx.x); t < 256; t += Threads) s.hist[0][t] = 0;
    if (threadIdx.x == 0) s.filled = 0;
    int count = 0;
    top_k_key_t all_and = ~0ull, all_or = 0;
#pragma unroll
    for (int i = 0; i < Items; ++i)
        if (i < rows && key[i] != 0) {
            ++count;
            all_and &= key[i];
            all_or |= key[i];
        }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        count += __shfl_xor_sync(0xffffffffu, count, offset);
        all_and &= __shfl_xor_sync(0xffffffffu, all_and, offset);
        all_or |= __shfl_xor_sync(0xffffffffu, all_or, offset);
    }
    if (lane == 0) {
        s.count[warp] = count;
        s.all_and[warp] = all_and;
        s.all_or[warp] = all_or;
    }
    __syncthreads();
    count = lane < warps ? s.count[lane] : 0;  // every warp folds the warps' values alike
    all_and = lane < warps ? s.all_and[lane] : ~0ull;
    all_or = lane < warps ? s.all_or[lane] : 0;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        count += __shfl_xor_sync(0xffffffffu, count, offset);
        all_and &= __shfl_xor_sync(0xffffffffu, all_and, offset);
        all_or |= __shfl_xor_sync(0xffffffffu, all_or, offset);
    }
    top_k_selection sel;
    sel.want = int(count < at_most ? count : at_most);
    if (sel.want == count) return sel;  // every key (mask 0)
    const top_k_key_t varied = all_and ^ all_or;  // the bits some keys have and others not
    int rest = sel.want;                          // how many of the keys tied with the prefix are wanted
    for (int pass = 0, top = 63;; ++pass) {
        // Bits top and below that every key has alike join the prefix; the pass takes the 8 (or
        // fewer) from the highest varied one down.
        const top_k_key_t below = top == 63 ? ~0ull : (1ull << (top + 1)) - 1;
        if ((varied & below) == 0) {  // (never: the keys are unique, and more than rest are tied)
            sel.mask |= below;
            sel.prefix |= all_and & below;
            return sel;
        }
        const int high = 63 - __clzll((long long)(varied & below));
        const top_k_key_t alike = below & ~((high == 63 ? ~0ull : (1ull << (high + 1)) - 1));
        sel.mask |= alike;
        sel.prefix |= all_and & alike;
        const int width = high + 1 < 8 ? high + 1 : 8, shift = high + 1 - width;
        const top_k_key_t digits = (1ull << width) - 1;
        int* hist = s.hist[pass & 1];
        for (int t = int(threadIdx.x); t < 256; t += Threads) s.hist[(pass + 1) & 1][t] = 0;  // read before the last barrier
#pragma unroll
        for (int i = 0; i < Items; ++i) {
            if (i >= rows) break;
            const bool tied = key[i] != 0 && (key[i] & sel.mask) == sel.prefix;
            const unsigned tied_lanes = __ballot_sync(0xffffffffu, tied);
            if (tied_lanes == 0) continue;
            const int d = tied ? int((key[i] >> shift) & digits) : -1;
            const int leader = __ffs(int(tied_lanes)) - 1;
            const int leader_d = __shfl_sync(0xffffffffu, d, leader);
            if (__all_sync(0xffffffffu, !tied || d == leader_d)) {  // one digit (ties, early passes): one atomic
                if (lane == leader) atomicAdd(hist + leader_d, __popc(tied_lanes));
            } else if (tied) {
                atomicAdd(hist + d, 1);
            }
        }
        __syncthreads();
        if (warp == 0) {  // the digit where the count from the top reaches rest: lane l holds digits 255 − 8l − q
            int c[8], sum = 0;
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                c[q] = hist[255 - (lane * 8 + q)];
                sum += c[q];
            }
            int inclusive = sum;
#pragma unroll
            for (int offset = 1; offset < 32; offset <<= 1) {
                const int o = __shfl_up_sync(0xffffffffu, inclusive, offset);
                if (lane >= offset) inclusive += o;
            }
            const int exclusive = inclusive - sum;
            const bool here = exclusive < rest && rest <= inclusive;
            if (__ballot_sync(0xffffffffu, here) == 0 && lane == 0) s.digit = -1;
            if (here) {
                int above = exclusive;
                for (int q = 0; q < 8; ++q) {
                    if (above + c[q] >= rest) {
                        s.digit = 255 - (lane * 8 + q);
                        s.above = above;
                        s.in_digit = c[q];
                        break;
                    }
                    above += c[q];
                }
            }
        }
        __syncthreads();
        const int d = s.digit;
        if (d < 0) return sel;  // (never: the tied keys are rest or more)
        rest -= s.above;
        sel.prefix |= top_k_key_t(d) << shift;
        sel.mask |= digits << shift;
        if (s.in_digit == rest || shift == 0) return sel;
        top = shift - 1;
    }
}

// The selected keys of the block into out[0, sel.want) in any order; `filled` (zeroed by
// top_k_select) counts them.
template <int Items>
__device__ __forceinline__ void top_k_compact(const top_k_key_t (&key)[Items], int rows, const top_k_selection& sel,
                                              top_k_key_t* out, int* filled) {
    const int lane = int(threadIdx.x) & 31;
#pragma unroll
    for (int i = 0; i < Items; ++i) {
        if (i >= rows) break;
        const bool take = key[i] != 0 && (key[i] & sel.mask) >= sel.prefix;
        const unsigned takers = __ballot_sync(0xffffffffu, take);
        if (takers == 0) continue;
        int base = 0;
        if (lane == 0) base = atomicAdd(filled, __popc(takers));
        base = __shfl_sync(0xffffffffu, base, 0);
        const int at = base + __popc(takers & ((1u << lane) - 1u));
        if (take && at < sel.want) out[at] = key[i];
    }
}

// Grid (slices, cols): block (s, c) writes the keys of the best min(k, count) of values
// [s·Threads·Items, +Threads·Items) of column c to keys[(c·slices + s)·k, +k), zeros after them.
template <int Threads, int Items>
__global__ void __launch_bounds__(Threads) top_k_slices_kernel(const float* x, top_k_key_t* keys, int64_t n, int64_t k) {
    enter_kernel();
    __shared__ top_k_select_shared s;
    const int64_t slices = gridDim.x, slice = blockIdx.x, c = blockIdx.y;
    x += c * n;
    const int64_t begin = slice * Threads * Items;
    const int64_t count = n - begin < Threads * Items ? n - begin : Threads * Items;
    top_k_key_t key[Items];
#pragma unroll
    for (int i = 0; i < Items; ++i) {
        const int64_t at = int64_t(i) * Threads + threadIdx.x;
        key[i] = at < count ? top_k_key(x[begin + at], begin + at) : 0;
    }
    const int rows = int((count + Threads - 1) / Threads);
    const top_k_selection sel = top_k_select<Threads, Items>(key, rows, k, s);
    top_k_key_t* out = keys + (c * slices + slice) * k;
    top_k_compact(key, rows, sel, out, &s.filled);
    __syncthreads();
    for (int64_t j = (s.filled < sel.want ? s.filled : sel.want) + threadIdx.x; j < k; j += Threads) out[j] = 0;
}

struct top_k_merge_shared {
    top_k_select_shared select;
    top_k_key_t kept[top_k_wide_max_k];  // the best keys so far; at the end sorted, largest first
    int position[top_k_wide_max_k];      // a walk's: where index j's key is among the kept (-1: not there)
    int32_t picks[top_k_wide_max_k];
    float weights[top_k_wide_max_k];
    top_k_key_t best[32];
    float scalar[2];
};

// The largest key of a non-NaN value of the column below `ceiling` (0: none), to every thread.
template <int Threads>
__device__ top_k_key_t top_k_below(const float* x, int64_t n, top_k_key_t ceiling, top_k_key_t* shared) {
    top_k_key_t best = 0;
    for (int64_t i = threadIdx.x; i < n; i += Threads) {
        const top_k_key_t key = top_k_key(x[i], i);
        if (!top_k_key_nan(key) && key < ceiling && key > best) best = key;
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const top_k_key_t o = __shfl_xor_sync(0xffffffffu, best, offset);
        best = o > best ? o : best;
    }
    __syncthreads();  // a previous call's values are read
    if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = best;
    __syncthreads();
    best = 0;
    for (int w = 0; w < Threads / 32; ++w) best = shared[w] > best ? shared[w] : best;
    return best;
}

// cpu::top_k's picks of a column from its k best keys s.kept (sorted), into s.picks: the rules in
// the comment at the top, every thread walking them alike (the scans are the block's).
template <int Threads>
__device__ void top_k_walk(const float* x, int64_t n, int k, top_k_merge_shared& s) {
    for (int j = int(threadIdx.x); j < k; j += Threads) s.position[j] = -1;
    __syncthreads();
    for (int t = int(threadIdx.x); t < k; t += Threads) {
        const int32_t i = top_k_key_index(s.kept[t]);
        if (s.kept[t] != 0 && i < k) s.position[i] = t;
    }
    __syncthreads();
    top_k_key_t prev = 0;  // pick j − 1's key, when its value is not NaN
    int at = -1;           // where prev is among the kept (-1: not there)
    bool prev_nan = false;
    for (int j = 0; j < k; ++j) {
        int32_t pick = j;
        bool own = false;  // pick j is j itself
        if (j == 0) {
            own = x[0] != x[0];
            if (!own) {
                prev = s.kept[0];
                at = 0;
                pick = top_k_key_index(prev);
            }
        } else if (prev_nan) {
            own = true;
        } else {
            top_k_key_t next = 0;
            int next_at = -1;
            if (at >= 0 && at + 1 < k) {  // the kept keys are the column's best: the next is the next kept
                next = s.kept[at + 1];
                next_at = at + 1;
                if (top_k_key_nan(next)) next = 0;  // no value below prev but NaN
            } else {  // past the kept keys (only when they are all numbers): the column's
                next = top_k_below<Threads>(x, n, prev, s.best);
            }
            own = next == 0;
            if (!own) {
                prev = next;
                at = next_at;
                pick = top_k_key_index(next);
            }
        }
        if (own) {
            const float v = x[j];
            prev_nan = v != v;
            if (!prev_nan) {
                prev = top_k_key(v, j);
                at = s.position[j];
            }
        }
        if (threadIdx.x == 0) s.picks[j] = pick;
    }
}

// weigh_experts (moe.cuh) of v[0, k) in shared memory by a block, with its operations on the same
// values in the same order: the max and the sums by one thread in slot order, the rest a slot a
// thread.
template <int Threads>
__device__ void top_k_weigh(float* v, int k, graph::expert_norm norm, float* scalar) {
    if (norm == graph::expert_norm::sum) {
        if (threadIdx.x == 0) {
            double sum = 0.0;
            for (int j = 0; j < k; ++j) sum = __dadd_rn(sum, double(v[j]));
            scalar[0] = graph::expert_sum_divisor(sum);
        }
        __syncthreads();
        const float total = scalar[0];
        for (int j = int(threadIdx.x); j < k; j += Threads) v[j] = __fdiv_rn(v[j], total);
    } else if (norm == graph::expert_norm::softmax) {
        if (threadIdx.x == 0) {
            float max = -INFINITY;
            for (int j = 0; j < k; ++j) max = fmaxf(max, v[j]);
            scalar[0] = max;
        }
        __syncthreads();
        const float max = scalar[0];
        for (int j = int(threadIdx.x); j < k; j += Threads) v[j] = expf(__fsub_rn(v[j], max));
        __syncthreads();
        if (threadIdx.x == 0) {
            double sum = 0.0;
            for (int j = 0; j < k; ++j) sum = __dadd_rn(sum, double(v[j]));
            scalar[1] = float(1.0 / sum);
        }
        __syncthreads();
        const float inv = scalar[1];
        for (int j = int(threadIdx.x); j < k; j += Threads) v[j] = __fmul_rn(v[j], inv);
    }
    __syncthreads();
}

// One block per column c: the best k of `count` candidate keys (keys + c·count; keys null: the
// column's n values themselves, count = n) in rounds, sorted; then the picks into y (k a column)
// and, where w is not null, their expert_weights with `norm` into w.
template <int Threads, int Items>
__global__ void __launch_bounds__(Threads) top_k_merge_kernel(const float* x, const top_k_key_t* keys, int64_t count,
                                                              int32_t* y, float* w, int64_t n, int64_t k64,
                                                              graph::expert_norm norm) {
    enter_kernel();
    __shared__ top_k_merge_shared s;
    const int k = int(k64);
    const int64_t c = blockIdx.x;
    x += c * n;
    y += c * k64;
    if (w) w += c * k64;
    if (keys) keys += c * count;
    else count = n;
    int kept = 0;
    for (int64_t next = 0;;) {  // a round: the kept keys, then fresh candidates from next on
        top_k_key_t key[Items];
#pragma unroll
        for (int i = 0; i < Items; ++i) {
            const int64_t at = int64_t(i) * Threads + threadIdx.x, from = next + at - kept;
            key[i] = at < kept ? s.kept[at] : from >= count ? 0 : keys ? keys[from] : top_k_key(x[from], from);
        }
        const int64_t fresh = count - next < int64_t(Threads) * Items - kept ? count - next : int64_t(Threads) * Items - kept;
        const int rows = int((kept + fresh + Threads - 1) / Threads);  // the rows of slots holding keys
        next += int64_t(Threads) * Items - kept;
        const top_k_selection sel = top_k_select<Threads, Items>(key, rows, k64, s.select);  // its first barrier: s.kept is read
        top_k_compact(key, rows, sel, s.kept, &s.select.filled);
        __syncthreads();
        kept = s.select.filled < sel.want ? s.select.filled : sel.want;
        if (next >= count) break;
    }
    int size = 1;  // the sort's: a power of two, k or more
    while (size < k) size <<= 1;
    for (int j = kept + int(threadIdx.x); j < size; j += Threads) s.kept[j] = 0;
    __syncthreads();
    for (int width = 2; width <= size; width <<= 1)
        for (int stride = width >> 1; stride > 0; stride >>= 1) {
            for (int t = int(threadIdx.x); t < size / 2; t += Threads) {
                const int i = 2 * t - (t & (stride - 1)), j = i + stride;
                const top_k_key_t a = s.kept[i], b = s.kept[j];
                if ((i & width) == 0 ? a < b : a > b) {  // descending runs where bit `width` of i is 0: all in the last
                    s.kept[i] = b;
                    s.kept[j] = a;
                }
            }
            __syncthreads();
        }
    if (x[0] == x[0] && !top_k_key_nan(s.kept[k - 1])) {  // no NaN in the way: the k best keys in order
        for (int j = int(threadIdx.x); j < k; j += Threads) s.picks[j] = top_k_key_index(s.kept[j]);
    } else {
        top_k_walk<Threads>(x, n, k, s);
    }
    __syncthreads();
    for (int j = int(threadIdx.x); j < k; j += Threads) {
        y[j] = s.picks[j];
        if (w) s.weights[j] = x[s.picks[j]];
    }
    if (!w) return;
    __syncthreads();
    top_k_weigh<Threads>(s.weights, k, norm, s.scalar);
    for (int j = int(threadIdx.x); j < k; j += Threads) w[j] = s.weights[j];
}

}  // namespace detail

// Whether top_k_wide takes columns of n values and k picks.
inline bool top_k_wide_supports(int64_t n, int64_t k) {
    return n > 256 && n <= 0x7fffffff && k >= 1 && k <= n && k <= top_k_wide_max_k;
}

// The slices a column of n values is split into (4096 values each), and the scratch they write
// for cols columns: 0 where top_k_wide does not split (one slice, or a shape it does not take).
inline int64_t top_k_wide_slices(int64_t n) { return (n + detail::top_k_slice - 1) / detail::top_k_slice; }
inline std::size_t top_k_scratch_bytes(int64_t n, int64_t k, int64_t cols) {
    if (!top_k_wide_supports(n, k) || n <= detail::top_k_slice || cols < 1) return 0;
    return std::size_t(top_k_wide_slices(n) * k * cols) * sizeof(detail::top_k_key_t);
}

// x: cols columns of n floats; y: cols columns of k int32, cpu::top_k's picks; weights (null:
// none): the expert_weights(x, y, norm) of the same columns, cols × k floats. Scratch of
// top_k_scratch_bytes(n, k, cols) bytes (8-byte aligned) splits each column over blocks of 4096
// values; without it (null), or past 65535 columns, one block per column takes the whole column,
// in rounds of 16384 values (slower on long columns, the same picks).
inline void top_k_wide(const float* x, int32_t* y, int64_t n, int64_t k, int64_t cols, void* scratch,
                       std::size_t scratch_bytes, cudaStream_t stream, const launch_options& o = {}, float* weights = nullptr,
                       graph::expert_norm norm = graph::expert_norm::none) {
    const char* op = "cuda::ops::top_k";
    check(top_k_wide_supports(n, k), errc::shape_mismatch, [&] {
        return std::string(op) + ": k = " + std::to_string(k) + " of columns of " + std::to_string(n) +
               " on the wide path (257..2^31-1 values, 1 <= k <= min(n, " + std::to_string(top_k_wide_max_k) + "))";
    });
    if (cols == 0) return;
    check(cols >= 1 && cols <= 0x7fffffff, errc::invalid_argument,
          [&] { return std::string(op) + ": " + std::to_string(cols) + " columns"; });
    const std::size_t need = top_k_scratch_bytes(n, k, cols);
    const detail::top_k_key_t* keys = nullptr;
    int64_t count = n;
    if (need > 0 && scratch) {
        check(scratch_bytes >= need && reinterpret_cast<std::uintptr_t>(scratch) % alignof(detail::top_k_key_t) == 0,
              errc::invalid_argument, [&] {
                  return std::string(op) + ": scratch of " + std::to_string(scratch_bytes) + " bytes for columns of " +
                         std::to_string(n) + " and k = " + std::to_string(k) + "; " + std::to_string(need) +
                         " bytes, 8-byte aligned, needed";
              });
    }
    if (need > 0 && scratch && cols <= 65535) {  // grid y: the columns
        const int64_t slices = top_k_wide_slices(n);
        auto* slice_keys = static_cast<detail::top_k_key_t*>(scratch);
        detail::launch(op, detail::top_k_slices_kernel<detail::top_k_slice_threads, detail::top_k_slice_items>,
                       dim3(unsigned(slices), unsigned(cols)), dim3(detail::top_k_slice_threads), 0, stream, o, x, slice_keys,
                       n, k);
        keys = slice_keys;
        count = slices * k;
    }
    auto merge = [&](auto kernel, int threads) {
        detail::launch(op, kernel, dim3(unsigned(cols)), dim3(threads), 0, stream, o, x, keys, count, y, weights, n, k, norm);
    };
    if (count <= 512 * detail::top_k_merge_items)  // one round of 512 threads: fewer registers, no spills
        merge(detail::top_k_merge_kernel<512, detail::top_k_merge_items>, 512);
    else
        merge(detail::top_k_merge_kernel<1024, detail::top_k_merge_items>, 1024);
}

}  // namespace llmrt::cuda::ops
