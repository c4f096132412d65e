// mul_mat on Vulkan: y[:, t] = W · x[:, t] for t < cols.
//
//   quantized W (weight_types)  llmrt's mmvq on Q8_1 activations (vulkan/mmvq.hpp), the values the
//                               CPU reference's activation_format::q8_1 rounds to. Up to 8 columns
//                               are one launch; more run as batches of 8 columns (mmvq's batch
//                               dimension, W read by every batch) plus one launch for the rest.
//                               mmvq gives a column the same bits whatever the columns beside it,
//                               so every token of a batch of any size gets the bits it would get
//                               alone: batched verification in speculative decoding sees exactly
//                               the logits of one-token decoding.
//   f32, f16, bf16 W            shaders/ops/mul_mat_float.comp on float activations, in double.
//
// Quantized W needs scratch for the Q8_1 activations: region A for the batches of 8 columns,
// region B for the rest (mul_mat_scratch_bytes). Within one recording, mul_mats of the same x
// can share one quantization (activation_cache).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llmrt/graph/graph.hpp"
#include "llmrt/quant/dispatch.hpp"
#include "llmrt/quant/types.hpp"
#include "llmrt/vulkan/mmvq.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::ops {

namespace detail {
struct mul_mat_float_push {
    uint64_t w, x, y, row_bytes;
    uint32_t rows, k;
};
static_assert(sizeof(mul_mat_float_push) == 40, "mul_mat_float_push must match shaders/ops/mul_mat_float.comp");

// Bytes of scratch region A (the batches of 8 columns) at the largest column count.
inline std::size_t batched_activation_bytes(int64_t k, int64_t max_cols) {
    return max_cols >= mmvq_max_columns ? q8_1_activation_layout(k, max_cols / mmvq_max_columns * mmvq_max_columns).bytes : 0;
}

// Regions A and B for up to max_cols columns of k values.
inline std::size_t activation_scratch_bytes(int64_t k, int64_t max_cols) {
    const int64_t rest_max = std::min<int64_t>(std::max<int64_t>(max_cols, 1), mmvq_max_columns - 1);
    return batched_activation_bytes(k, max_cols) + q8_1_activation_layout(k, rest_max).bytes;
}
}  // namespace detail

// Whether mul_mat takes weights of type t.
inline bool has_mul_mat(qtype t) { return is_float_matrix_type(t) || is_in<weight_types>(t); }

// Scratch for W of type t with k columns and up to max_cols activation columns.
inline std::size_t mul_mat_scratch_bytes(qtype t, int64_t k, int64_t max_cols) {
    return is_in<weight_types>(t) ? detail::activation_scratch_bytes(k, max_cols) : 0;
}

// Activations quantized to Q8_1 for mmvq: `cols` columns of k values from x, the batches of 8
// columns in region A of a scratch, the rest in region B.
struct q8_1_activations {
    operand x;
    int64_t k = 0, cols = 0;
    operand region_a, region_b;  // the parts written (empty when no column went there)
    std::size_t written_at = 0;  // the recorder's write count once they were written
};

// Where `cols` columns of k Q8_1 activations (of at most max_cols) lie in `scratch`: the batches
// of 8 columns in region A, the rest in region B.
inline q8_1_activations q8_1_regions(const operand& x, int64_t k, int64_t cols, const operand& scratch, int64_t max_cols) {
    require_bytes(scratch, detail::activation_scratch_bytes(k, max_cols), "vulkan::ops::mul_mat", "the Q8_1 scratch");
    const int64_t batches = cols / mmvq_max_columns, rest = cols % mmvq_max_columns, done = batches * mmvq_max_columns;
    q8_1_activations a;
    a.x = x.bytes ? x.part(0, uint64_t(k * cols) * 4) : x;
    a.k = k;
    a.cols = cols;
    a.region_a = scratch.part(0, batches ? q8_1_activation_layout(k, done).bytes : 0);
    a.region_b = scratch.part(detail::batched_activation_bytes(k, max_cols), rest ? q8_1_activation_layout(k, rest).bytes : 0);
    return a;
}

// The addresses a fused shader writes Q8_1 activations to (shaders/ops/norm_step.comp): columns
// below `split` in region A, the others in region B.
struct q8_1_target {
    uint64_t qs_a = 0, records_a = 0, qs_b = 0, records_b = 0;
    uint32_t split = 0;
};

inline q8_1_target q8_1_target_of(const q8_1_activations& a) {
    const int64_t done = a.cols / mmvq_max_columns * mmvq_max_columns, rest = a.cols - done;
    q8_1_target t;
    t.split = uint32_t(done);
    if (done) {
        const q8_1_layout l = q8_1_activation_layout(a.k, done);
        t.qs_a = a.region_a.address + l.qs_offset;
        t.records_a = a.region_a.address + l.records_offset;
    }
    if (rest) {
        const q8_1_layout l = q8_1_activation_layout(a.k, rest);
        t.qs_b = a.region_b.address + l.qs_offset;
        t.records_b = a.region_b.address + l.records_offset;
    }
    if (!t.qs_a) {  // the shaders take "no rounding" from qs_a == 0: point A at B (no column goes there)
        t.qs_a = t.qs_b;
        t.records_a = t.records_b;
    }
    return t;
}

inline q8_1_activations record_quantize_activations(mmvq& k_mmvq, recorder& r, const operand& x, int64_t k, int64_t cols,
                                                    const operand& scratch, int64_t max_cols) {
    q8_1_activations a = q8_1_regions(x, k, cols, scratch, max_cols);
    const int64_t batches = cols / mmvq_max_columns, rest = cols % mmvq_max_columns, done = batches * mmvq_max_columns;
    vk::CommandBuffer cmd = r.command_buffer();
    if (batches) {
        const operand x_a = x.part(0, uint64_t(k * done) * 4);
        r.access({x_a}, {a.region_a});
        k_mmvq.record_quantize(cmd, {.k = k, .ncols = mmvq_max_columns, .batch = batches}, x_a.span(), a.region_a.span());
        r.count_dispatch();
    }
    if (rest) {
        const operand x_b = x.part(uint64_t(k * done) * 4, uint64_t(k * rest) * 4);
        r.access({x_b}, {a.region_b});
        k_mmvq.record_quantize(cmd, {.k = k, .ncols = rest}, x_b.span(), a.region_b.span());
        r.count_dispatch();
    }
    a.written_at = r.write_count();
    return a;
}

// Q8_1 activations that earlier mul_mats of one recording quantized, for later mul_mats of the same
// x (the q, k and v projections; gate and up): an entry serves while neither its x nor its
// regions were written after it, and while the new mul_mat's result does not land on them (the
// memory planner may hand a finished op's scratch to a later op; the recorder sees every write,
// so reuse never reads bytes that changed or are being written).
class activation_cache {
public:
    // Activations of x for a mul_mat writing y, which may lie in memory the entry's regions used.
    const q8_1_activations* find(const recorder& r, const operand& x, int64_t k, int64_t cols, const operand& y) const {
        for (const q8_1_activations& a : entries_)
            if (a.k == k && a.cols == cols && a.x.buffer == x.buffer && a.x.offset == x.offset &&
                !r.written_since(a.x, a.written_at) && !r.written_since(a.region_a, a.written_at) &&
                !r.written_since(a.region_b, a.written_at) && !a.region_a.overlaps(y) && !a.region_b.overlaps(y))
                return &a;
        return nullptr;
    }
    void add(const q8_1_activations& a) {
        if (entries_.size() == 8) entries_.erase(entries_.begin());
        entries_.push_back(a);
    }

private:
    std::vector<q8_1_activations> entries_;
};

// The mmvq dispatches of y = W · x on activations already quantized (a), for W of a weight type.
// w: W's placement (mmvq reads whole 16-byte units, so it may need room past W's bytes).
inline void record_mmvq_prepared(mmvq& k_mmvq, recorder& r, qtype t, const operand& w, int64_t rows, int64_t k,
                                 const q8_1_activations& a, const operand& y, int64_t cols) {
    require_bytes(y, uint64_t(rows * cols) * 4, "vulkan::ops::mul_mat", "y");
    require_bytes(w, row_size(t, k) * uint64_t(rows), "vulkan::ops::mul_mat", "W");
    const operand w_used = w.part(0, row_size(t, k) * uint64_t(rows));
    const int64_t batches = cols / mmvq_max_columns, rest = cols % mmvq_max_columns, done = batches * mmvq_max_columns;
    vk::CommandBuffer cmd = r.command_buffer();
    if (batches) {
        const operand y_a = y.part(0, uint64_t(rows * done) * 4);
        r.access({w_used, a.region_a}, {y_a});
        k_mmvq.record_mmvq(cmd, t, {.rows = rows, .k = k, .ncols = mmvq_max_columns, .batch = batches}, w.span(),
                           a.region_a.span(), y_a.span());
        r.count_dispatch();
    }
    if (rest) {
        const operand y_b = y.part(uint64_t(rows * done) * 4, uint64_t(rows * rest) * 4);
        r.access({w_used, a.region_b}, {y_b});
        k_mmvq.record_mmvq(cmd, t, {.rows = rows, .k = k, .ncols = rest}, w.span(), a.region_b.span(), y_b.span());
        r.count_dispatch();
    }
}

// W: rows × k of type t (row r at r · row_size(t, k)); x: cols columns of k floats; y: cols
// columns of rows floats. With a cache, quantized W reuses activations an earlier mul_mat left.
inline void record_mul_mat(kernels& k_ops, mmvq& k_mmvq, recorder& r, qtype t, const operand& w, int64_t rows, int64_t k,
                           const operand& x, const operand& y, int64_t cols, const operand& scratch, int64_t max_cols,
                           activation_cache* cache = nullptr) {
    const char* name = "vulkan::ops::mul_mat";
    check(has_mul_mat(t), errc::unsupported_type, [&] {
        return std::string(name) + ": W of type " + graph::type_name(t) + " (quantized weights of " +
               "weight_types, or f32, f16, bf16)";
    });
    check(rows >= 1 && k >= 1 && cols >= 1 && cols <= max_cols && k % block_size(t) == 0 && rows <= int64_t(UINT32_MAX) &&
              k <= int64_t(UINT32_MAX),
          errc::shape_mismatch, [&] {
              return std::string(name) + ": W " + std::to_string(rows) + " x " + std::to_string(k) + " of " +
                     graph::type_name(t) + ", " + std::to_string(cols) + " columns (of at most " +
                     std::to_string(max_cols) + "): k must be a multiple of the block size " +
                     std::to_string(block_size(t));
          });
    const uint64_t row_bytes = row_size(t, k), x_bytes = uint64_t(k * cols) * 4, y_bytes = uint64_t(rows * cols) * 4;
    require_bytes(w, row_bytes * uint64_t(rows), name, "W");
    require_bytes(x, x_bytes, name, "x");
    require_bytes(y, y_bytes, name, "y");
    const operand w_used = w.part(0, row_bytes * uint64_t(rows));

    if (is_float_matrix_type(t)) {
        const detail::mul_mat_float_push push{w.address, x.address, y.address, row_bytes, uint32_t(rows), uint32_t(k)};
        const grid g = make_grid(k_ops.device().info(), uint64_t(rows), uint64_t(cols), name);
        r.access({w_used, x.part(0, x_bytes)}, {y.part(0, y_bytes)});
        r.dispatch(k_ops.pipeline(std::string("mul_mat_float_") + graph::type_name(t), sizeof push), push, g);
        return;
    }

    const q8_1_activations* found = cache ? cache->find(r, x, k, cols, y.part(0, y_bytes)) : nullptr;
    q8_1_activations fresh;
    if (!found) {
        fresh = record_quantize_activations(k_mmvq, r, x, k, cols, scratch, max_cols);
        if (cache) cache->add(fresh);
        found = &fresh;
    }
    record_mmvq_prepared(k_mmvq, r, t, w, rows, k, *found, y, cols);
}

}  // namespace llmrt::vulkan::ops
