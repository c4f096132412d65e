// Row gathers and scatters on Vulkan:
//   get_rows  y[:, t] = dequantize(table row ids[t])   (shaders/ops/get_rows.comp, one variant per
//             table type: f32, f16, bf16 and every weight type with a dequantize include)
//   set_rows  cache[:, pos[t]] = src[:, t], f32 or f16 (shaders/ops/set_rows.comp)
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <string>

#include "llmrt/core/qtype.hpp"
#include "llmrt/graph/graph.hpp"
#include "llmrt/vulkan/ops/kernels.hpp"
#include "llmrt/vulkan/ops/recorder.hpp"

namespace llmrt::vulkan::ops {

namespace detail {
struct get_rows_push {
    uint64_t table, ids, y, row_bytes;
    uint32_t ne0, n_rows;
};
static_assert(sizeof(get_rows_push) == 40, "get_rows_push must match shaders/ops/get_rows.comp");

struct set_rows_push {
    uint64_t cache, src, positions;
    uint32_t ne0, n_ctx, tokens, f16;
};
static_assert(sizeof(set_rows_push) == 40, "set_rows_push must match shaders/ops/set_rows.comp");
}  // namespace detail

// The name of the get_rows shader for tables of type t ("get_rows_q4_K").
inline std::string get_rows_shader(qtype t) { return std::string("get_rows_") + graph::type_name(t); }

// Whether get_rows has a shader for tables of type t.
inline bool has_get_rows(qtype t) { return t != graph::i32_type && find_op_shader(get_rows_shader(t)) != nullptr; }

// table: n_rows rows of ne0 values of type t; ids: cols int32; y: cols columns of ne0 floats.
inline void record_get_rows(kernels& k, recorder& r, qtype t, const operand& table, int64_t ne0, int64_t n_rows,
                            const operand& ids, const operand& y, int64_t cols) {
    const char* name = "vulkan::ops::get_rows";
    check(has_get_rows(t), errc::unsupported_type, [&] {
        return std::string(name) + ": no shader for tables of " + graph::type_name(t) +
               " (shaders/ops/dequantize/<type>.glsl)";
    });
    check(ne0 >= 1 && n_rows >= 1 && cols >= 1 && ne0 % block_size(t) == 0 && n_rows <= int64_t(INT32_MAX), errc::shape_mismatch, [&] {
        return std::string(name) + ": a table of " + std::to_string(n_rows) + " rows of " + std::to_string(ne0) + " " +
               graph::type_name(t) + " values, " + std::to_string(cols) + " ids";
    });
    const uint64_t row_bytes = row_size(t, ne0), y_bytes = uint64_t(ne0 * cols) * 4;
    require_bytes(table, row_bytes * uint64_t(n_rows), name, "the table");
    require_bytes(ids, uint64_t(cols) * 4, name, "ids");
    require_bytes(y, y_bytes, name, "y");
    const detail::get_rows_push push{table.address, ids.address, y.address, row_bytes, uint32_t(ne0), uint32_t(n_rows)};
    const grid g = make_grid(k.device().info(), (uint64_t(ne0) + workgroup_size - 1) / workgroup_size, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": rows of " + std::to_string(ne0) + " values are too long"; });
    r.access({table.part(0, row_bytes * uint64_t(n_rows)), ids.part(0, uint64_t(cols) * 4)}, {y.part(0, y_bytes)});
    r.dispatch(k.pipeline(get_rows_shader(t), sizeof push), push, g);
}

// Bytes of a KV cache of n_ctx columns of `column_values` values of type t (f32 or f16): what
// set_rows writes, and the attention and rope_cache steps read and write.
inline uint64_t cache_bytes(qtype t, int64_t column_values, int64_t n_ctx) {
    return uint64_t(column_values) * uint64_t(n_ctx) * (t == qtype::f32 ? 4 : 2);
}

// cache: n_ctx columns of ne0 values of cache_type (f32 or f16); src: cols columns of ne0 floats.
inline void record_set_rows(kernels& k, recorder& r, qtype cache_type, const operand& cache, int64_t ne0, int64_t n_ctx,
                            const operand& src, const operand& positions, int64_t cols) {
    const char* name = "vulkan::ops::set_rows";
    check(cache_type == qtype::f32 || cache_type == qtype::f16, errc::unsupported_type,
          [&] { return std::string(name) + ": caches are f32 or f16, not " + graph::type_name(cache_type); });
    check(ne0 >= 1 && n_ctx >= 1 && cols >= 1 && uint64_t(ne0) * uint64_t(n_ctx) <= UINT32_MAX, errc::shape_mismatch, [&] {
        return std::string(name) + ": a cache of " + std::to_string(n_ctx) + " columns of " + std::to_string(ne0) +
               " values, " + std::to_string(cols) + " source columns";
    });
    const uint64_t cache_size = cache_bytes(cache_type, ne0, n_ctx), src_bytes = uint64_t(ne0 * cols) * 4;
    require_bytes(cache, cache_size, name, "the cache");
    require_bytes(src, src_bytes, name, "src");
    require_bytes(positions, uint64_t(cols) * 4, name, "positions");
    const detail::set_rows_push push{cache.address, src.address, positions.address, uint32_t(ne0), uint32_t(n_ctx),
                                     uint32_t(cols), cache_type == qtype::f16 ? 1u : 0u};
    const grid g = make_grid(k.device().info(), (uint64_t(ne0) + workgroup_size - 1) / workgroup_size, uint64_t(cols), name);
    check(g.z == 1, errc::shape_mismatch, [&] { return std::string(name) + ": columns of " + std::to_string(ne0) + " values are too long"; });
    r.access({src.part(0, src_bytes), positions.part(0, uint64_t(cols) * 4)}, {cache.part(0, cache_size)});
    r.dispatch(k.pipeline("set_rows", sizeof push), push, g);
}

}  // namespace llmrt::vulkan::ops
