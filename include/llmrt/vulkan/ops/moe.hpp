// The mixture-of-experts ops on Vulkan, with the CPU reference's formulas (cpu/ops.hpp):
//
//   top_k, expert_weights, weighted_sum,  shaders/ops/moe.comp (one invocation per column, or per
//   add_id                                element for weighted_sum and add_id); top_k of columns
//                                         longer than 256 (logits) through ops/top_k.hpp
//   mul_mat_id                            llmrt's mmvq_id on Q8_1 activations (vulkan/mmvq.hpp):
//                                         the activations of every token quantized once, then
//                                         each (token, slot) reads the expert its id names
//
// mul_mat_id takes quantized experts (weight_types) only: f32/f16/bf16 experts are refused when
// the graph is prepared.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include "llmrt/graph/graph.hpp"
#include "llmrt/graph/node.hpp"
#include "llmrt/quant/codec.hpp"
#include "llmrt/quant/dispatch.hpp"
#include "llmrt/quant/types.hpp"
#include "llmrt/vulkan/mmvq.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"
#include "llmrt/vulkan/ops/top_k.hpp"

namespace llmrt::vulkan::ops {

namespace detail {
enum class moe_op : uint32_t { top_k = 0, weights = 1, weighted_sum = 2, add_id = 3 };  // OP_* of the shader
struct moe_push {
    uint64_t a = 0, b = 0, y = 0;
    uint64_t c = 0;  // add_id: the ids
    uint32_t n = 0, k = 0, op = 0, cols = 0;
    uint32_t norm = 0;      // expert_weights: 0 none, 1 sum, 2 softmax
    uint32_t n_expert = 0;  // add_id
};
static_assert(sizeof(moe_push) == 56, "moe_push must match shaders/ops/moe.comp");

inline void check_moe_shape(int64_t n, int64_t k, int64_t cols, const char* name) {
    check(n >= 1 && k >= 1 && cols >= 1 && n <= int64_t(INT32_MAX) && k <= 65535, errc::shape_mismatch, [&] {
        return std::string(name) + ": " + std::to_string(cols) + " columns of " + std::to_string(n) + " values, " +
               std::to_string(k) + " slots";
    });
}

inline void record_per_column(kernels& kn, recorder& r, const moe_push& push, int64_t cols, const char* name) {
    const grid g = make_grid(kn.device().info(), (uint64_t(cols) + workgroup_size - 1) / workgroup_size, 1, name);
    r.dispatch(kn.pipeline("moe", sizeof push), push, g);
}
}  // namespace detail

// x: cols columns of n floats; y: cols columns of k int32; scratch: top_k_scratch_bytes(n, k, cols)
// bytes. Columns the wide path takes go there (ops/top_k.hpp); the others, one invocation per
// column scanning it once per pick (the routers' few experts).
inline void record_top_k(kernels& kn, recorder& r, const operand& x, const operand& y, int64_t n, int64_t k, int64_t cols,
                         const operand& scratch = {}) {
    const char* name = "vulkan::ops::top_k";
    detail::check_moe_shape(n, k, cols, name);
    check(k <= n, errc::shape_mismatch, [&] { return std::string(name) + ": k > n"; });
    if (top_k_wide_takes(kn.device().info(), n, k)) {
        record_top_k_wide(kn, r, x, y, n, k, cols, scratch);
        return;
    }
    require_bytes(x, uint64_t(n * cols) * 4, name, "x");
    require_bytes(y, uint64_t(k * cols) * 4, name, "y");
    r.access({x.part(0, uint64_t(n * cols) * 4)}, {y.part(0, uint64_t(k * cols) * 4)});
    detail::record_per_column(kn, r,
                              {x.address, x.address, y.address, 0, uint32_t(n), uint32_t(k),
                               uint32_t(detail::moe_op::top_k), uint32_t(cols), 0, 0},
                              cols, name);
}

// probs: cols columns of n floats; ids: cols columns of k int32; y: cols columns of k floats. An id
// outside [0, n) gives NaN (the host checks ids it writes before a run).
inline uint32_t norm_code(graph::expert_norm norm) {
    switch (norm) {
        case graph::expert_norm::none: return 0;
        case graph::expert_norm::sum: return 1;
        case graph::expert_norm::softmax: return 2;
    }
    throw error(errc::invalid_argument, "vulkan::ops::expert_weights: unknown expert_norm " + std::to_string(int(norm)));
}

inline void record_expert_weights(kernels& kn, recorder& r, const operand& probs, const operand& ids, const operand& y,
                                  int64_t n, int64_t k, int64_t cols, graph::expert_norm norm) {
    const char* name = "vulkan::ops::expert_weights";
    detail::check_moe_shape(n, k, cols, name);
    require_bytes(probs, uint64_t(n * cols) * 4, name, "probs");
    require_bytes(ids, uint64_t(k * cols) * 4, name, "ids");
    require_bytes(y, uint64_t(k * cols) * 4, name, "y");
    r.access({probs.part(0, uint64_t(n * cols) * 4), ids.part(0, uint64_t(k * cols) * 4)}, {y.part(0, uint64_t(k * cols) * 4)});
    detail::record_per_column(kn, r,
                              {probs.address, ids.address, y.address, 0, uint32_t(n), uint32_t(k),
                               uint32_t(detail::moe_op::weights), uint32_t(cols), norm_code(norm), 0},
                              cols, name);
}

// x: cols columns of k slots of n floats; w: cols columns of k floats; y: cols columns of n.
inline void record_weighted_sum(kernels& kn, recorder& r, const operand& x, const operand& w, const operand& y, int64_t n,
                                int64_t k, int64_t cols) {
    const char* name = "vulkan::ops::weighted_sum";
    detail::check_moe_shape(n, k, cols, name);
    require_bytes(x, uint64_t(n * k * cols) * 4, name, "x");
    require_bytes(w, uint64_t(k * cols) * 4, name, "w");
    require_bytes(y, uint64_t(n * cols) * 4, name, "y");
    const detail::moe_push push{x.address, w.address, y.address, 0, uint32_t(n), uint32_t(k),
                                uint32_t(detail::moe_op::weighted_sum), uint32_t(cols), 0, 0};
    const grid g = make_grid(kn.device().info(), (uint64_t(n) + workgroup_size - 1) / workgroup_size, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": columns of " + std::to_string(n) + " values are too long"; });
    r.access({x.part(0, uint64_t(n * k * cols) * 4), w.part(0, uint64_t(k * cols) * 4)}, {y.part(0, uint64_t(n * cols) * 4)});
    r.dispatch(kn.pipeline("moe", sizeof push), push, g);
}

// x, y: cols columns of k slots of `rows` floats; b: n_expert columns of rows floats; ids: cols
// columns of k int32. y = x + b's column of each slot's id; an id outside [0, n_expert) gives NaN
// (the host checks ids it writes before a run).
inline void record_add_id(kernels& kn, recorder& r, const operand& x, const operand& b, const operand& ids, const operand& y,
                          int64_t rows, int64_t n_expert, int64_t k, int64_t cols) {
    const char* name = "vulkan::ops::add_id";
    detail::check_moe_shape(rows * k, k, cols, name);
    check(rows >= 1 && n_expert >= 1 && n_expert <= int64_t(INT32_MAX), errc::shape_mismatch, [&] {
        return std::string(name) + ": " + std::to_string(rows) + " rows, " + std::to_string(n_expert) + " experts";
    });
    const uint64_t x_bytes = uint64_t(rows * k * cols) * 4, b_bytes = uint64_t(rows * n_expert) * 4,
                   ids_bytes = uint64_t(k * cols) * 4;
    require_bytes(x, x_bytes, name, "x");
    require_bytes(b, b_bytes, name, "b");
    require_bytes(ids, ids_bytes, name, "ids");
    require_bytes(y, x_bytes, name, "y");
    const detail::moe_push push{x.address, b.address, y.address, ids.address, uint32_t(rows), uint32_t(k),
                                uint32_t(detail::moe_op::add_id), uint32_t(cols), 0, uint32_t(n_expert)};
    const uint64_t groups = (uint64_t(rows * k) + workgroup_size - 1) / workgroup_size;
    const grid g = make_grid(kn.device().info(), groups, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch,
          [&] { return std::string(name) + ": columns of " + std::to_string(rows * k) + " values are too long"; });
    r.access({x.part(0, x_bytes), b.part(0, b_bytes), ids.part(0, ids_bytes)}, {y.part(0, x_bytes)});
    r.dispatch(kn.pipeline("moe", sizeof push), push, g);
}

// Whether mul_mat_id takes experts of type t.
inline bool has_mul_mat_id(qtype t) { return is_in<weight_types>(t); }

// Scratch of mul_mat_id: the Q8_1 activations of up to max_cols tokens of x_per_token columns of k.
inline std::size_t mul_mat_id_scratch_bytes(int64_t k, int64_t x_per_token, int64_t max_cols) {
    return q8_1_activation_layout(k, x_per_token * max_cols).bytes;
}

// w: n_expert matrices of rows × k of type t, one after another; x: cols tokens of x_per_token
// (1, or n_used) columns of k floats; ids: cols × n_used int32; y: cols × n_used columns of rows.
inline void record_mul_mat_id(mmvq& k_mmvq, recorder& r, qtype t, const operand& w, int64_t rows, int64_t k,
                              int64_t n_expert, const operand& x, int64_t x_per_token, const operand& ids, int64_t n_used,
                              const operand& y, int64_t cols, const operand& scratch) {
    const char* name = "vulkan::ops::mul_mat_id";
    check(has_mul_mat_id(t), errc::unsupported_type, [&] {
        return std::string(name) + ": experts of type " + graph::type_name(t) + "; mul_mat_id takes the weight types";
    });
    const uint64_t x_bytes = uint64_t(k * x_per_token * cols) * 4, y_bytes = uint64_t(rows * n_used * cols) * 4,
                   w_bytes = row_size(t, k) * uint64_t(rows * n_expert), ids_bytes = uint64_t(n_used * cols) * 4;
    const std::size_t q_bytes = mul_mat_id_scratch_bytes(k, x_per_token, cols);
    require_bytes(w, w_bytes, name, "W");
    require_bytes(x, x_bytes, name, "x");
    require_bytes(ids, ids_bytes, name, "ids");
    require_bytes(y, y_bytes, name, "y");
    require_bytes(scratch, q_bytes, name, "the Q8_1 scratch");
    const operand q = scratch.part(0, q_bytes);
    vk::CommandBuffer cmd = r.command_buffer();
    r.access({x.part(0, x_bytes)}, {q});
    k_mmvq.record_quantize(cmd, {.k = k, .ncols = x_per_token, .batch = cols}, x.part(0, x_bytes).span(), q.span());
    r.count_dispatch();
    r.access({w.part(0, w_bytes), q, ids.part(0, ids_bytes)}, {y.part(0, y_bytes)});
    k_mmvq.record_mmvq_id(cmd, t,
                          {.rows = rows, .k = k, .experts = n_expert, .tokens = cols, .slots = n_used,
                           .x_per_token = x_per_token},
                          w.span(), ids.part(0, ids_bytes).span(), q.span(), y.part(0, y_bytes).span());
    r.count_dispatch();
}

}  // namespace llmrt::vulkan::ops
