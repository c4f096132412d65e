// mmvq's shapes at compile time (include/llmrt/cuda/mmvq.cuh is the entry point): the row tile,
// the k-split limits, the units and steps of each weight type, a warp's shared-memory ring
// (mmvq_layout), the parameters of a launch (mmvq_params), and the prepared activations it reads.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/codecs.cuh"
#include "llmrt/cuda/mmvq_epilogue.cuh"
#include "llmrt/cuda/views.cuh"

namespace llmrt::cuda {

// Most activation columns one mmvq launch takes.
inline constexpr int mmvq_max_cols = 8;

namespace detail {

constexpr int mmvq_tile_rows = 16;         // rows per warp
constexpr int mmvq_substep_elements = 256;  // k per codec call (a dp4a lane takes half of it)
#ifndef LLMRT_MMVQ_MAX_STEP_GROUP
#define LLMRT_MMVQ_MAX_STEP_GROUP 4
#endif
#ifndef LLMRT_MMVQ_GROUP_MAX_COLS
#define LLMRT_MMVQ_GROUP_MAX_COLS 2
#endif
#ifndef LLMRT_MMVQ_MAX_SPLIT
#define LLMRT_MMVQ_MAX_SPLIT 8
#endif
#ifndef LLMRT_MMVQ_TARGET_WARPS
#define LLMRT_MMVQ_TARGET_WARPS 1536
#endif
#ifndef LLMRT_MMVQ_LOOKAHEAD_GAP
#define LLMRT_MMVQ_LOOKAHEAD_GAP 0
#endif
#ifndef LLMRT_MMVQ_MMA_MIN_COLS
#define LLMRT_MMVQ_MMA_MIN_COLS 5
#endif
// The k-split limits below decide which partial sums are added: changing them changes results
// in the last bits (for every NCols alike). The macros exist for tuning experiments.
constexpr int mmvq_max_split = LLMRT_MMVQ_MAX_SPLIT;  // warps per CTA, splitting k
constexpr int mmvq_wide_step_max_split = 4;           // the same for types of 192 bytes or more per row step
constexpr int mmvq_max_stages = 8;
// From this many columns on, the tensor-core form. Measured on the H100: the dp4a form is faster
// up to 4 columns (by up to a quarter at 4), the mma form from 5.
// Which form runs never changes a result (see codec.cuh); the macro exists for experiments.
constexpr int mmvq_mma_min_cols = LLMRT_MMVQ_MMA_MIN_COLS;
constexpr int64_t mmvq_target_warps = LLMRT_MMVQ_TARGET_WARPS;  // 1536: about 12 warps per SM of an H100
#ifndef LLMRT_MMVQ_WARPS_PER_SM
#define LLMRT_MMVQ_WARPS_PER_SM 12
#endif
constexpr int64_t mmvq_warps_per_sm = LLMRT_MMVQ_WARPS_PER_SM;  // see mmvq_sized_warps_per_sm
constexpr int64_t mmvq_max_cta_smem = 220 * 1024;

constexpr int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Shared-memory layout of one warp: a ring of `stages` slots (chosen per launch, from the shape),
// each 16 rows of one step's weight bytes (row r at r·pitch, starting at the address's offset
// modulo 16: the copies move the aligned 16-byte span around them) then the step's 8 activation
// records.
// The unit of the k-split, in 256-element substeps: for types under 192 bytes per substep, the
// fewest (a power of two, at most LLMRT_MMVQ_MAX_STEP_GROUP) that make a row's part of it a
// multiple of 16 bytes. A copy's box must start 16-byte aligned, so a step of any other size
// drags in up to 31 bytes of its neighbours: a third more traffic between L2 and the SM for
// Q2_K's 84-byte substep, which measured as the limit of the small types on large matrices
// (Q2_K 128256×4096: 69% of 3.1 TB/s with 1-substep steps, 88% with 4).
template <class B>
constexpr int mmvq_substep_bytes() {
    return int(sizeof(B)) * (mmvq_substep_elements / int(B::block_size));
}
template <class B>
constexpr int mmvq_unit_substeps() {
    constexpr int sub_bytes = mmvq_substep_bytes<B>();
    int g = 1;
    while (sub_bytes < 192 && g < LLMRT_MMVQ_MAX_STEP_GROUP && (g * sub_bytes) % 16 != 0) g *= 2;
    return g;
}
// Columns up to which a step is a whole unit (one copy per row): beyond, one substep, where the
// activation records of many columns would make a unit's slot too large for a ring of two.
// Four-substep units (Q2_K, Q3_K) stay whole up to 4 columns: with one step in flight (see
// mmvq_lookahead) that measured up to a quarter faster at 3 and 4 columns on the H100 (Q2_K
// 4096×14336, 4 columns: 16.98 -> 13.32 µs; Q3_K 19.27 -> 15.81 µs); MXFP4's lost a fifth at 4.
template <class B>
constexpr int mmvq_group_max_cols() {
    return mmvq_unit_substeps<B>() >= 4 && LLMRT_MMVQ_GROUP_MAX_COLS < 4 ? 4 : LLMRT_MMVQ_GROUP_MAX_COLS;
}
// Units in a wide step: the fewest (a power of two) that make a row's part of it at least 256
// bytes. A copy of 16 rows × 144 bytes (Q4_K's unit) streams markedly slower than one of 16 rows ×
// 288: on the H100, copies alone (no decoding) of a one-wave 14336×4096 Q4_K grid reached 89.7% of
// 3.1 TB/s with 144-byte boxes and 99.6% with 288-byte ones, at the same bytes in flight.
template <class B>
constexpr int mmvq_wide_step_units() {
    constexpr int unit_bytes = mmvq_substep_bytes<B>() * mmvq_unit_substeps<B>();
    int units = 1;
    while (units * unit_bytes < 256) units *= 2;
    return units;
}
// Whether NCols columns of B can take wide steps: a step of several units, up to
// mmvq_group_max_cols columns (beyond, steps are single substeps).
template <class B, int NCols>
constexpr bool mmvq_has_wide_steps() {
    return mmvq_wide_step_units<B>() > 1 && NCols <= mmvq_group_max_cols<B>();
}
// Substeps per pipeline step. Each warp still takes whole units, in the same order, so how its
// range is copied never changes a result.
template <class B, int NCols, bool Wide>
constexpr int mmvq_step_substeps() {
    return NCols > mmvq_group_max_cols<B>() ? 1 : mmvq_unit_substeps<B>() * (Wide ? mmvq_wide_step_units<B>() : 1);
}

// CTAs of the kernel that an SM must be able to hold by registers (__launch_bounds__): 16 warps'
// worth, or three CTAs of 8 warps for the kernels that launches of 4096 rows run with one step per
// warp (wide steps: Q4_K, Q5_K and Q6_K at 1 and 2 columns; MXFP4's two-substep units at 1 column).
// Such a one-wave grid puts two CTAs on each SM; the third is the next launch's (see
// mmvq_one_step_warps). Their registers then fit 80 per thread. Measured on the H100, 4096×4096,
// with the one-slot rings: 1 column Q5_K 5.54 -> 4.77 µs, Q4_K 4.58 -> 4.31 µs, MXFP4 5.36 ->
// 4.79 µs. Other 8-warp kernels kept their registers: capped as well, Q4_K at 4096×14336 lost up
// to 4% (2 and 4 columns).
template <class B, int NCols, int MaxSplit, bool Wide>
constexpr int mmvq_min_ctas_per_sm() {
    return MaxSplit == 8 && (Wide || (NCols == 1 && mmvq_unit_substeps<B>() == 2)) ? 3 : 16 / MaxSplit;
}

template <class B, int NCols, bool Wide = false>
struct mmvq_layout {
    static_assert(mmvq_substep_elements % B::block_size == 0, "mmvq: a step must hold whole weight blocks");
    static_assert(NCols >= 1 && NCols <= mmvq_max_cols, "mmvq: NCols must be 1..8");
    static_assert(!Wide || mmvq_has_wide_steps<B, NCols>(), "mmvq: wide steps only where mmvq_has_wide_steps");
    static constexpr int substeps = mmvq_step_substeps<B, NCols, Wide>();
    static constexpr int step_elements = substeps * mmvq_substep_elements;
    static constexpr int blocks_per_substep = mmvq_substep_elements / int(B::block_size);
    static constexpr int substep_bytes = mmvq_substep_bytes<B>();
    static constexpr int records_per_step = step_elements / 32;
    static constexpr int blocks_per_step = substeps * blocks_per_substep;
    static constexpr int step_bytes = substeps * substep_bytes;
    // Per-row copies (any alignment): the aligned 16-byte span around a step, plus slack for
    // the decoders' word reads; an odd multiple of 16 keeps lanes of different rows off each
    // other's banks.
    static constexpr int span_chunks = (step_bytes + 15) / 16 + 1;
    static constexpr int row_pitch = 16 * ((span_chunks + 1) | 1);
    // Tensor-map copies: a 16-row box starting at the 16-byte aligned address at or below the
    // step (a box must start 16-byte aligned), its rows an odd multiple of 16 bytes covering the
    // step, in elements of 1, 2, 4 or 8 bytes (a box row holds at most 256 elements).
    // Rows start 16-byte aligned where a tensor map is used, and a step starts at a multiple of
    // its own length or of a unit, whichever is shorter, so (j·stride) mod 16 bytes into its box:
    // the span is the widest of those, e.g. 144 bytes for MXFP4's 136-byte step rather than 136 +
    // 15 (which rounded to 176: 4% slower at 4096×4096, 4 and 8 columns).
    static constexpr int start_stride = std::min(substeps, mmvq_unit_substeps<B>()) * substep_bytes;
    static constexpr int box_span = [] {
        int span = 0;
        for (int j = 0; j < 16; ++j) span = std::max(span, (j * start_stride) % 16 + step_bytes);
        return span;
    }();
    static constexpr int box_bytes = 16 * (((box_span + 15) / 16) | 1);
    static constexpr int box_element_bytes = box_bytes <= 256 ? 1 : box_bytes <= 512 ? 2 : box_bytes <= 1024 ? 4 : 8;
    static_assert(box_bytes / box_element_bytes <= 256, "mmvq: a step must fit a tensor-map box");
    static_assert(step_bytes % box_element_bytes == 0, "mmvq: a step must be whole box elements");
    static constexpr int record_bytes = int(activation_record_bytes(NCols));
    // A ring slot: the step's activation records, then its 16 rows at the wider of the two copy
    // paths' pitches, or compact: at the box pitch (tensor-map copies only). Records first, so
    // that only the slot's length depends on which. Either way the slot holds every byte that the
    // decoders' word reads reach, up to 15 past a row's last byte (the per-row pitch has that
    // slack by construction; box_extent is the same for rows at the box pitch).
    static constexpr int records_region = records_per_step * record_bytes;
    static_assert(records_region % 128 == 0, "mmvq: a slot's rows must start 128-byte aligned");
    static constexpr int weight_bytes = (mmvq_tile_rows * (row_pitch > box_bytes ? row_pitch : box_bytes) + 127) / 128 * 128;
    static constexpr int box_extent = (mmvq_tile_rows - 1) * box_bytes + box_span + 15;
    static_assert(weight_bytes >= box_extent, "mmvq: a slot must hold the decoders' reads past its last row");
    static constexpr int stage_bytes = records_region + weight_bytes;
    static constexpr int compact_stage_bytes = records_region + (box_extent + 127) / 128 * 128;
    static constexpr bool tensor_cores = NCols >= mmvq_mma_min_cols;
    static_assert(2 * compact_stage_bytes >= mmvq_tile_rows * NCols * 4, "mmvq: the partial sums reuse a warp's ring");
};

struct mmvq_params {
    const uint8_t* w;
    int64_t w_row_stride, w_stride2, w_stride3;  // bytes
    int64_t w_row_bytes;                         // bytes of one row's blocks (reads stop there)
    const uint8_t* x;                            // activation records
    int64_t x_stride2, x_stride3;                // bytes between batches of records
    float* y;
    int64_t y_col_stride, y_stride2, y_stride3;  // floats
    const int32_t* ids;                          // mmvq_id: expert of (slot blockIdx.y mod id_slots, token blockIdx.z)
    int64_t ids_token_stride;
    int32_t n_experts;                           // per half: W's batch is half · n_experts + id (half blockIdx.y / id_slots)
    int32_t id_slots;                            // the ids of a token
    const float* bias;                           // mmvq_id: null, or a column of rows per W batch, added to Y
    int32_t rows;
    int32_t nblocks;    // weight blocks per row
    int32_t nblocks32;  // k / 32
    int32_t nsubsteps;  // ceil(k / 256)
    int32_t nunits;     // ceil(k / (256·mmvq_unit_substeps)): what the warps of a CTA divide
    int32_t ratio2, ratio3;  // activation batches per W batch
    int32_t stages;          // ring slots per warp, 2..8
    int32_t lookahead;       // steps in flight ahead of the one being read, 1..stages
    int32_t tensor_map;      // 1: W's rows come through the tensor map, 0: per-row bulk copies
    int32_t interleaved;     // 1: the warps of a CTA take units by turns (mmvq_interleaves)
    int32_t slot_bytes;      // a ring slot: layout::stage_bytes, or compact_stage_bytes (tensor map only)
    int32_t activations;     // activation_order: when X is read against the previous kernel
    int32_t shares;          // the k-split: shares of k whose partial sums are added (a multiple of the warps)
    mmvq_epilogue epilogue;  // what the CTA does with its sums besides storing Y
};

}  // namespace detail

// Activations quantized by quantize_activations: ncols columns of k in batch2 × batch3 batches.
struct prepared_activations {
    const void* data = nullptr;
    int64_t k = 0;
    int64_t ncols = 1;
    int64_t batch2 = 1;
    int64_t batch3 = 1;
    std::string describe() const {
        return "q8_1 records [" + std::to_string(batch3) + " x " + std::to_string(batch2) + " x " +
               std::to_string(ncols) + " x " + std::to_string(k) + "]";
    }
};

// Bytes of scratch mmvq(W, X, ...) needs for X.
inline std::size_t mmvq_scratch_bytes(const input_columns& x) {
    return activation_scratch_bytes(x.length, x.ncols, x.batch2 * x.batch3);
}
// Bytes of scratch mmvq_id needs: every activation column of every token, one record column each.
inline std::size_t mmvq_id_scratch_bytes(const input_columns& x) {
    return activation_scratch_bytes(x.length, 1, x.ncols * x.batch2 * x.batch3);
}

}  // namespace llmrt::cuda
