// The launch shapes of the Vulkan mat-vec (shaders/mmvq.comp) per weight type: the policy that
// vulkan::mmvq (the mechanism) reads. default_tuning picks the measured shapes for the device;
// mmvq::set_tuning replaces a type's for benches and experiments.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <cstdint>

#include "llmrt/core/qtype.hpp"
#include "llmrt/quant/dispatch.hpp"
#include "llmrt/quant/layout.hpp"
#include "llmrt/quant/types.hpp"
#include "llmrt/vulkan/context.hpp"

namespace llmrt::vulkan {

inline constexpr int64_t mmvq_max_columns = 8;

// The work-group shape of one weight type's shaders (see shaders/mmvq.comp). Every column's sum
// depends on subgroup_size, slices_per_lane and k_split alone, so those are fixed per type while
// the rows per team may follow the number of columns.
//
// A row's sum depends on k_split (or long_row_k_split), subgroup_size and slices_per_lane alone.
struct mmvq_tuning {
    uint32_t workgroup_size = 128;  // a multiple of subgroup_size · k_split
    uint32_t subgroup_size = 32;    // the pipelines' required subgroup size
    uint32_t slices_per_lane = 1;   // slices a lane computes per staged chunk
    uint32_t k_split = 4;           // subgroups sharing a row (splitting k); a work-group holds
                                    // workgroup_size / subgroup_size / k_split teams
    // The k split of matrices with fewer rows than k (each row long, few teams to share the work);
    // 0: k_split. Both depend on the matrix shape alone, never on the number of columns.
    uint32_t long_row_k_split = 0;
    uint32_t rows[mmvq_max_columns] = {1, 2, 2, 2, 2, 2, 2, 2};  // rows per team for 1..8 columns
    // Read in place: slices a lane loads (for all its rows) before it dots them, for 1..8 columns.
    // More loads in flight per lane; the sums, and so the results, do not change.
    uint32_t unroll[mmvq_max_columns] = {1, 1, 1, 1, 1, 1, 1, 1};
    // Stage the weights through shared memory (always possible), or let lanes read them in place
    // (types whose blocks are a multiple of 4 bytes, when the strides keep that alignment; other
    // shapes fall back to staging, with the same results bit for bit).
    bool staged = true;

    // The k split used for a matrix of rows × k.
    uint32_t k_split_for(int64_t rows, int64_t k) const {
        return k > rows && long_row_k_split != 0 ? long_row_k_split : k_split;
    }
};

namespace detail {

// Shapes for NVIDIA (subgroups of 32), picked with llmrt-bench-mmvq-vulkan --sweep on an H100
// (driver 580; bench/RESULTS.md has the numbers) by the steady-state time of dependent dispatches
// (a barrier between consecutive ones) on 14336×4096, 4096×14336 and 128256×4096: blocks of a
// multiple of 4 bytes read in place (q4_K two slices ahead at one column), the others staged
// through shared memory; q4_K and q5_K split k over two subgroups, q6_K over two where
// rows are longer than the matrix is tall. q6_K and mxfp4 re-picked after the cheaper
// staged reads and unpacking of 03e528b (two rows per team at one column; q6_K in work-groups of
// two subgroups); q2_K and q3_K keep theirs.
struct tuned_shape {
    qtype type;
    uint32_t workgroup_size, k_split, long_row_k_split, slices_per_lane;
    bool staged;
    uint32_t rows[mmvq_max_columns];
    uint32_t unroll[mmvq_max_columns] = {1, 1, 1, 1, 1, 1, 1, 1};
};
inline constexpr tuned_shape nvidia_shapes[] = {
    {qtype::q8_0, 64, 1, 0, 1, true, {1, 1, 1, 2, 2, 2, 2, 4}},
    {qtype::q2_K, 128, 1, 0, 1, false, {2, 2, 2, 4, 4, 4, 4, 4}},
    {qtype::q3_K, 64, 1, 0, 1, true, {2, 2, 2, 4, 4, 4, 4, 4}},
    {qtype::q4_K, 128, 2, 0, 1, false, {1, 1, 1, 2, 2, 2, 2, 2}, {2, 1, 1, 1, 1, 1, 1, 1}},
    {qtype::q5_K, 128, 2, 0, 1, false, {1, 2, 2, 2, 2, 2, 2, 2}},
    {qtype::q6_K, 64, 1, 2, 1, true, {2, 2, 2, 4, 4, 4, 4, 2}},
    {qtype::mxfp4, 128, 1, 0, 2, true, {2, 2, 2, 2, 2, 2, 2, 2}},
};

// The shape of a family type with no row above: the nibble32 types (Q4_0 ... IQ4_XS) take
// MXFP4's (32-value slices of 4-bit codes, staged); not yet swept for each.
inline constexpr tuned_shape nibble32_shape = {qtype::f32, 128, 1, 0, 2, true, {2, 2, 2, 2, 2, 2, 2, 2}};

// The shape for `type` on NVIDIA, or nullptr where it has none (a type of no family and no row).
template <class B>
constexpr const tuned_shape* nvidia_shape() {
    for (const tuned_shape& shape : nvidia_shapes)
        if (shape.type == B::id) return &shape;
    if constexpr (nibble32_block<B>) return &nibble32_shape;
    return nullptr;
}

// A weight type of its own codec (block_family::own) added to llmrt::weight_types without a row
// in nvidia_shapes is a compile error.
constexpr bool shapes_cover_every_weight_type() {
    bool all = true;
    weight_types::for_each([&](auto tag) { all = all && nvidia_shape<typename decltype(tag)::type>() != nullptr; });
    return all;
}
static_assert(shapes_cover_every_weight_type(),
              "llmrt::vulkan: a type of llmrt::weight_types has no row in nvidia_shapes (mmvq_tuning.hpp) and no family shape");

}  // namespace detail

// Chosen per device: on NVIDIA with subgroups of 32 the measured shapes above; elsewhere
// (lavapipe's subgroups of 8 included) four subgroups per work-group splitting k.
inline mmvq_tuning default_tuning(const device_info& device, qtype type) {
    mmvq_tuning t;
    t.subgroup_size = device.subgroup_size;
    t.workgroup_size = std::min<uint32_t>(4 * device.subgroup_size, device.max_workgroup_size);
    if (device.maker == vendor::nvidia && device.subgroup_size == 32) {
        const detail::tuned_shape* shape = nullptr;
        dispatch<weight_types>(type, "Vulkan mmvq tuning",
                               [&](auto tag) { shape = detail::nvidia_shape<typename decltype(tag)::type>(); });
        t.workgroup_size = shape->workgroup_size;
        t.k_split = shape->k_split;
        t.long_row_k_split = shape->long_row_k_split;
        t.slices_per_lane = shape->slices_per_lane;
        t.staged = shape->staged;
        for (int64_t i = 0; i < mmvq_max_columns; ++i) {
            t.rows[i] = shape->rows[i];
            t.unroll[i] = shape->unroll[i];
        }
    }
    return t;
}

}  // namespace llmrt::vulkan
