// mmvq: Y = W·X for a quantized matrix W (rows × k) and 1..8 float activation columns, on the
// device, plus its batched form (two outer dimensions, W broadcast across activation batches) and
// its mixture-of-experts form mmvq_id (each activation column picks its W by an int32 id).
//
//   llmrt::cuda::mmvq(W, X, Y, scratch, scratch_bytes, stream)   quantizes X to Q8_1, then W·X
//   llmrt::cuda::quantize_activations + mmvq_prepared           the same in two steps, so one
//                                                              quantized X can feed several W
//   llmrt::cuda::mmvq_prepared_many(products, X, stream)        several W sharing one prepared X
//   llmrt::cuda::mmvq_id(experts, X, ids, Y, scratch, ...)      mixture of experts
//   llmrt::cuda::mmvq_id_prepared(experts, X, ids, Y, ...)      the same on prepared X, optionally
//                                                              two products (gate, up) in one launch
//
// Pointers are device pointers, the stream is the caller's, nothing is allocated: the caller
// passes scratch (mmvq_scratch_bytes says how much). Every shape is checked on the host before
// anything is launched; a mismatch raises llmrt::error naming both shapes.
//
// The kernel, mmvq_kernel<Block, NCols, MaxSplit, Wide, SharedTile, SeveralShares>, is instantiated from the type
// list through llmrt::dispatch, never by hand. Each warp owns 16 rows and a share of k units (1, 2
// or 4 substeps of 256 elements: enough that a row's part of a unit is a multiple of 16 bytes): a
// contiguous range, or for one-substep units every split-th unit (mmvq_interleaves), so that the
// CTA's warps read neighbouring pieces of each row at once. Tensor-map or bulk copies stream each
// step's rows (raw bytes, any alignment) and activation records into a shared-memory ring, one or
// more steps ahead of the step being read (mmvq_lookahead says how many, from the type and shape).
// A step is a unit, a substep (from 3 or 5 columns on), or for Q4_K, Q5_K and Q6_K at 1 and 2
// columns two units where the ring has room for them (mmvq_wide_steps; where a warp's units are
// its turns, only as a shared tile: the CTA's whole row tile, each warp's units read from the
// others' slots, see mmvq_interleaves). One to four columns take the dp4a form (one lane per row and
// half-substep), five to eight the int8 tensor-core form (the 8 columns of an m16n8k32/k16 mma);
// both form the same integers and add them in the same float order (see codec.cuh), so a
// column's result does not depend on NCols. Codecs may ask for a step's records rearranged in
// shared memory before the dp4a form reads them (paired records: MXFP4 at 1 and 2 columns), and
// the tensor-core form of unaligned blocks is instantiated for the rows' address modulo 4 where
// the copies make it known (see codec.cuh). The warps of a CTA split k; their partial sums meet
// in shared memory in a fixed order. No atomics.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda.h>  // CUtensorMap (a header-only use: the encoder is reached through the runtime)
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/check.cuh"
#include "llmrt/cuda/codecs.cuh"
#include "llmrt/cuda/mmvq_epilogue.cuh"
#include "llmrt/cuda/ptx.cuh"
#include "llmrt/cuda/views.cuh"
#include "llmrt/quant/dispatch.hpp"

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

// The kernel: one CTA per 16 rows and batch, grid (ceil(rows/16), batch2, batch3), blockDim
// (32, split) with split warps dividing k, dynamic shared memory split · p.stages · p.slot_bytes or more,
// split <= MaxSplit. Launch it through mmvq / mmvq_prepared, which take the narrowest MaxSplit
// that holds the launch's split (a CTA shape of 8 warps measured slower on the H100 than one of 4
// for launches of 4 warps or fewer) and choose Wide (see mmvq_wide_steps); neither changes a
// result. SharedTile (wide steps read by turns from the CTA's whole row tile) goes with
// p.interleaved, which does change which partial sums are added (see mmvq_interleaves).
// SeveralShares: fewer warps than p.shares, each running several shares of the k-split in narrow
// steps (see mmvq_warps); a kernel of its own, so that the others keep their registers.
template <class B, int NCols, int MaxSplit, bool Wide, bool SharedTile, bool SeveralShares>
__global__ void __launch_bounds__(32 * MaxSplit, detail::mmvq_min_ctas_per_sm<B, NCols, MaxSplit, Wide>())
    mmvq_kernel(const detail::mmvq_params p, const __grid_constant__ CUtensorMap weights) {
    using namespace detail;
    static_assert(MaxSplit >= 1 && MaxSplit <= mmvq_max_split && (MaxSplit & (MaxSplit - 1)) == 0,
                  "mmvq_kernel: MaxSplit must be a power of two up to mmvq_max_split");
    static_assert(!SharedTile || (Wide && mmvq_unit_substeps<B>() == 1),
                  "mmvq_kernel: a shared tile takes wide steps of one-substep units");
    static_assert(!SeveralShares || !Wide, "mmvq_kernel: a warp takes several shares only in narrow steps");
    using layout = mmvq_layout<B, NCols, Wide>;
    using codec = device_codec<B>;
    extern __shared__ __align__(128) uint8_t smem[];
    const int lane = int(threadIdx.x), warp = int(threadIdx.y), split = int(blockDim.y);
    // The k-split has p.shares shares; each warp takes shares_per_warp neighbouring ones (only
    // where the shares are contiguous ranges of k, in narrow steps) and keeps their sums apart, so
    // that the sums added are the same however many warps run them (mmvq_warps).
    const int shares_per_warp = SeveralShares ? p.shares / split : 1;
    const int shares = shares_per_warp * split;
    const int row0 = int(blockIdx.x) * mmvq_tile_rows;

    const uint8_t* w = p.w;
    bool expert_valid = true;
    int w2, w3;  // W's batch indices
    int x2 = int(blockIdx.y);  // X's: the slot, with ids
    if (p.ids != nullptr) {
        ptx::wait_for_prerequisite_grids();  // the ids may come from the previous kernel
        x2 = int(blockIdx.y % unsigned(p.id_slots));
        const int half = int(blockIdx.y / unsigned(p.id_slots));
        const int32_t expert = p.ids[int64_t(blockIdx.z) * p.ids_token_stride + x2];
        expert_valid = expert >= 0 && expert < p.n_experts;
        w2 = expert_valid ? half * p.n_experts + expert : 0;
        w3 = 0;
    } else {
        w2 = int(blockIdx.y / unsigned(p.ratio2));
        w3 = int(blockIdx.z / unsigned(p.ratio3));
    }
    w += int64_t(w2) * p.w_stride2 + int64_t(w3) * p.w_stride3;
    const uint8_t* x = p.x + int64_t(x2) * p.x_stride2 + int64_t(blockIdx.z) * p.x_stride3;
    float* y = p.y + int64_t(blockIdx.y) * p.y_stride2 + int64_t(blockIdx.z) * p.y_stride3;

    if (!expert_valid) {  // an id outside [0, n_experts): that column is NaN, nothing is read
        ptx::wait_for_prerequisite_grids();
        ptx::allow_dependent_grids();
        const int tid = warp * 32 + lane;
        for (int idx = tid; idx < NCols * mmvq_tile_rows; idx += 32 * split) {
            const int c = idx / mmvq_tile_rows, row = row0 + idx % mmvq_tile_rows;
            if (row < p.rows) y[c * p.y_col_stride + row] = __int_as_float(0x7fc00000);
        }
        if (p.epilogue.kind == mmvq_finish::weighted_sum)  // the slot still arrives (NaN rows)
            finish_weighted_sum(p.epilogue, p.y + int64_t(blockIdx.z) * p.y_stride3, p.y_stride2, p.rows, row0, warp, lane,
                                split, reinterpret_cast<double*>(smem));
        if (p.epilogue.kind == mmvq_finish::swiglu_slots)
            finish_swiglu_slots(p.epilogue, p.y + int64_t(blockIdx.z) * p.y_stride3, p.y_stride2, row0, warp, lane);
        return;
    }

    // This warp's units, added in increasing order: by turns where p.interleaved (unit u to warp
    // u mod split, so that at every step the CTA's warps read neighbouring pieces of each row;
    // only for one-substep units, whose narrow step is one unit), else the contiguous substeps
    // [sub_begin, sub_end), read in steps of layout::substeps (a wide warp's last step may be
    // shorter). A shared tile (wide steps by turns, see mmvq_interleaves) reads differently: each
    // warp copies the wide step `warp` of the row tile into its slot and decodes its own units from
    // whichever warp's slot holds them.
    constexpr int unit_substeps = mmvq_unit_substeps<B>();
    constexpr bool shared_tile = SharedTile;
    const bool interleaved = shared_tile || (!Wide && unit_substeps == 1 && p.interleaved != 0);
    auto share_begin = [&](int share) { return int(int64_t(share) * p.nunits / shares) * unit_substeps; };
    const int sub_begin = interleaved ? warp : share_begin(warp * shares_per_warp);
    const int sub_end = interleaved ? p.nsubsteps : min(share_begin((warp + 1) * shares_per_warp), p.nsubsteps);
    // The warp's step i starts at substep sub_begin + i·sub_stride. It copies `ncopies` steps:
    // all of them, or in a shared tile the one wide step `warp`.
    const int sub_stride = interleaved ? split : layout::substeps;
    const int nsteps = interleaved ? max(0, (p.nsubsteps - sub_begin + split - 1) / split)
                                   : max(0, (sub_end - sub_begin + layout::substeps - 1) / layout::substeps);
    const int ncopies = shared_tile ? (warp * layout::substeps < p.nsubsteps ? 1 : 0) : nsteps;
    auto step_sub = [&](int i) { return sub_begin + i * sub_stride; };
    const int stages = p.stages;
    const int slot_bytes = p.slot_bytes;
    const int warp_smem_bytes = stages * slot_bytes;
    uint8_t* const ring = smem + warp * warp_smem_bytes;
    __shared__ uint64_t slot_barriers[MaxSplit][mmvq_max_stages];
    uint64_t* const barriers = slot_barriers[warp];
    if (lane == 0)
        for (int s = 0; s < stages; ++s) ptx::mbarrier_init(&barriers[s], 1);
    if constexpr (shared_tile)
        __syncthreads();  // a warp waits on other warps' barriers
    else
        __syncwarp();

    // Weights: with a tensor map, lane 0 loads the step's 16 rows as one box (zeros past a row's
    // end or the last row); otherwise lane r < 16 copies row r as the aligned 16-byte span around
    // the step's bytes, and a row whose end is not 16-byte aligned gets its last few bytes by
    // plain loads, so no read passes a row's last block. Lane 16 copies the activation records.
    const bool by_tensor_map = p.tensor_map != 0;
    const bool copies_row = !by_tensor_map && lane < mmvq_tile_rows && row0 + lane < p.rows;
    const uint8_t* const row_begin = w + int64_t(row0 + lane) * p.w_row_stride;
    const uint8_t* const row_end = row_begin + p.w_row_bytes;
    const uint8_t* const row_aligned_end = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(row_end) & ~uintptr_t(15));
    // The step starting at substep `sub`.
    auto issue = [&](int sub, int slot) {
        uint8_t* const slot_base = ring + slot * slot_bytes + layout::records_region;
        uint64_t* const barrier = &barriers[slot];
        if (by_tensor_map) {
            if (lane == 0) {
                ptx::mbarrier_expect_bytes(barrier, unsigned(mmvq_tile_rows * layout::box_bytes));
                ptx::tensor_copy_to_shared(slot_base, &weights,
                                           ((sub * layout::substep_bytes) & ~15) / layout::box_element_bytes, row0, w2,
                                           w3, barrier);
            }
        } else if (copies_row) {
            uint8_t* dst = slot_base + lane * layout::row_pitch;
            const uint8_t* src = row_begin + int64_t(sub) * layout::substep_bytes;
            const int nblocks = min(layout::blocks_per_step, p.nblocks - sub * layout::blocks_per_substep);
            const uint8_t* first = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(src) & ~uintptr_t(15));
            const uint8_t* last = reinterpret_cast<const uint8_t*>(
                (reinterpret_cast<uintptr_t>(src + nblocks * int(sizeof(B))) + 15) & ~uintptr_t(15));
            const uint8_t* bulk_end = last < row_aligned_end ? last : row_aligned_end;
            if (bulk_end > first) {
                const unsigned bytes = unsigned(bulk_end - first);
                ptx::mbarrier_expect_bytes(barrier, bytes);
                ptx::bulk_copy_to_shared(dst, first, bytes, barrier);
            }
            for (const uint8_t* q = bulk_end > first ? bulk_end : first; q < row_end && q < last; ++q) dst[q - first] = *q;
        }
    };
    // Activation records of the step starting at substep `sub` (the last step of a row may be short).
    auto step_records = [&](int sub) { return min(layout::records_per_step, p.nblocks32 - 8 * sub); };
    auto issue_records = [&](int sub, int slot) {
        if (lane != mmvq_tile_rows) return;
        uint64_t* barrier = &barriers[slot];
        const unsigned bytes = unsigned(step_records(sub) * layout::record_bytes);
        ptx::mbarrier_expect_bytes(barrier, bytes);
        ptx::bulk_copy_to_shared(ring + slot * slot_bytes,
                                 x + int64_t(8) * sub * layout::record_bytes, bytes, barrier);
    };
    // A slot's phase completes once lane 0 has arrived (after every lane's copies are issued and
    // their bytes announced) and all those bytes have landed.
    auto close_slot = [&](int slot) {
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&barriers[slot]);
    };

    // The weights do not depend on the previous kernel: start them before waiting for it.
    // The next kernel on the stream may start as well: it waits for this grid before reading
    // anything this grid writes. Where X was complete before this launch (activation_order::
    // shared), X comes at once too and the wait moves to just before Y is written; the first of
    // several launches on one X lets the next start only once X is complete.
    const int ahead = p.lookahead;
    const bool x_ready = p.activations == int(activation_order::shared);
    const bool first_of_shared = p.activations == int(activation_order::first_of_shared);
    // A shared tile's warp copies the tile's wide step `warp`.
    auto copied_sub = [&](int i) { return shared_tile ? warp * layout::substeps : step_sub(i); };
    for (int i = 0; i < ahead && i < ncopies; ++i) issue(copied_sub(i), i);
    if (!first_of_shared) ptx::allow_dependent_grids();
    if (!x_ready) ptx::wait_for_prerequisite_grids();
    if (first_of_shared) ptx::allow_dependent_grids();
    for (int i = 0; i < ahead && i < ncopies; ++i) {
        issue_records(copied_sub(i), i);
        close_slot(i);
    }
    // The per-row copies store a row's last few bytes with plain stores, which other warps of a
    // shared tile read. Lane 0 arrives on the slot's barrier after them, but racecheck does not
    // follow that order from one warp to another: the CTA barrier states it.
    if constexpr (shared_tile)
        if (!by_tensor_map) __syncthreads();

    // Where this lane's rows start inside a slot: row offset plus the misalignment of the step's
    // bytes (both copy paths start at the aligned address below them), which only changes from
    // step to step when a step is not a multiple of 16 bytes.
    const int pitch = by_tensor_map ? layout::box_bytes : layout::row_pitch;
    const int my_row_a = layout::tensor_cores ? (lane >> 2) : (lane & 15);
    const int my_row_b = my_row_a + 8;
    const unsigned mis_a = unsigned(reinterpret_cast<uintptr_t>(w + int64_t(row0 + my_row_a) * p.w_row_stride) +
                                    uintptr_t(sub_begin) * layout::substep_bytes) & 15u;
    const unsigned mis_b = unsigned(reinterpret_cast<uintptr_t>(w + int64_t(row0 + my_row_b) * p.w_row_stride) +
                                    uintptr_t(sub_begin) * layout::substep_bytes) & 15u;
    // Where the rows of a step all sit at the same address modulo 4 in their slot (always where W
    // comes through the tensor map), the tensor-core form of codecs of unaligned blocks reads them
    // at fixed offsets: residue 0 at every step for Q8_0 and MXFP4, 0 and 2 by turns for Q3_K and
    // Q6_K, whose substeps are 2 bytes past a multiple of 4. On the H100, 8 columns: MXFP4
    // 14336×4096 27.4 -> 24.1 µs, Q8_0 4096×4096 9.0 -> 8.3 µs. In the dp4a form only Q3_K's parts
    // read so (reads_at_residue with residue_in_dot_part), by pairs of substeps at residues 0 and
    // 2: the unaligned words' extra loads, shifts and address arithmetic were 29 of its 262
    // instructions per substep. With the rotations of its dot_part, 224. On the H100, after the
    // previous kernel: 1 column 14336×4096 11.58 -> 11.29 µs, 4096×14336 11.50 -> 11.25 µs,
    // 4096×4096 4.11 -> 3.98 µs; shared X: 4 columns 14336×4096 13.54 -> 12.69 µs, 4096×14336 13.18
    // -> 12.56 µs, 128256×4096 108.5 -> 101.8 µs; 1 column the same (4096×4096 2.78 -> 2.84 µs).
    // The same for Q6_K lost up to 9% at 4 columns (4096×14336 after previous 20.7 -> 22.6 µs), and
    // for Q8_0 and MXFP4 it gained nothing at 1 column and lost up to 4% at 4 (their decoding twice
    // over).
    constexpr bool residue_known = layout::tensor_cores
                                       ? layout::substeps == 1 && reads_at_residue<codec>(residue_in_mma_step)
                                       : reads_at_residue<codec>(residue_in_dot_part);
    constexpr bool residue_alternates = layout::substep_bytes % 4 != 0;
    const unsigned mis_first = __shfl_sync(0xffffffffu, mis_a, 0);
    const bool rows_share_residue =
        residue_known && __all_sync(0xffffffffu, ((mis_a - mis_first) & 3u) == 0 && ((mis_b - mis_first) & 3u) == 0);
    // Accumulators of the canonical order: [half of the step][row lo/hi][column pair] for the
    // tensor-core form, [column] of this lane's half for the dp4a form.
    float acc_mma[2][2][2] = {{{0.0f, 0.0f}, {0.0f, 0.0f}}, {{0.0f, 0.0f}, {0.0f, 0.0f}}};
    float acc_lane[NCols];
#pragma unroll
    for (int c = 0; c < NCols; ++c) acc_lane[c] = 0.0f;

    // Substeps [g_begin, g_end) of the slot at `slot_records` whose step starts at substep `sub`;
    // `shift` moves the rows' misalignment at sub_begin to that step's.
    auto decode_substeps = [&](const uint8_t* slot_records, int sub, unsigned shift, int g_begin, int g_end) {
        const uint8_t* slot_base = slot_records + layout::records_region;
        // Substep g, whose rows sit at `residue` modulo 4 where it is known (else -1); false past
        // the warp's range.
        auto decode_substep = [&](int g, auto residue) {
            const int nvalid32 = min(8, p.nblocks32 - 8 * (sub + g));
            if (sub + g >= sub_end || nvalid32 <= 0) return false;
            const uint8_t* records = slot_records + 8 * g * layout::record_bytes;
            const uint8_t* row_a = slot_base + my_row_a * pitch + ((mis_a + shift) & 15u) + g * layout::substep_bytes;
            if constexpr (layout::tensor_cores) {
                const uint8_t* row_b = slot_base + my_row_b * pitch + ((mis_b + shift) & 15u) + g * layout::substep_bytes;
                if constexpr (residue_known)
                    codec::template mma_step<NCols, decltype(residue)::value>(row_a, row_b, nvalid32, records, lane, acc_mma);
                else
                    codec::template mma_step<NCols>(row_a, row_b, nvalid32, records, lane, acc_mma);
            } else {
                const int part = lane >> 4;
                const int nvalid = max(0, min(4, nvalid32 - 4 * part));
                if constexpr (residue_known)
                    codec::template dot_part<NCols, decltype(residue)::value>(
                        row_a, part, nvalid, records + 4 * part * layout::record_bytes, acc_lane);
                else
                    codec::template dot_part<NCols>(row_a, part, nvalid, records + 4 * part * layout::record_bytes, acc_lane);
            }
            return true;
        };
        auto decode = [&](auto residue) {
#pragma unroll 1
            for (int g = g_begin; g < g_end; ++g)
                if (!decode_substep(g, residue)) break;
        };
        // The rows' address modulo 4 at substep g_begin, or -1 where it is not one value for all rows.
        const int step_residue =
            rows_share_residue ? int((mis_first + shift + unsigned(g_begin * layout::substep_bytes)) & 3u) : -1;
        using residue_0 = std::integral_constant<int, 0>;
        using residue_2 = std::integral_constant<int, 2>;
        if constexpr (!layout::tensor_cores && residue_known && residue_alternates) {
            // The dp4a form's substeps of 2 bytes past a multiple of 4 (Q3_K) sit at residues 0
            // and 2 by turns: one substep at 2 where the range starts there, then pairs.
            if (step_residue < 0) return decode(std::integral_constant<int, -1>{});
            int g = g_begin;
            if (step_residue == 2 && !decode_substep(g++, residue_2{})) return;
#pragma unroll 1
            for (; g < g_end; g += 2)
                if (!decode_substep(g, residue_0{}) || g + 1 >= g_end || !decode_substep(g + 1, residue_2{})) break;
        } else if (residue_known && step_residue == 0) {
            decode(residue_0{});
        } else if (residue_known && residue_alternates && step_residue == 2) {
            decode(std::integral_constant<int, residue_alternates ? 2 : -1>{});
        } else {
            decode(std::integral_constant<int, -1>{});
        }
    };
    auto shift_at = [&](int sub) { return unsigned((sub - sub_begin) * layout::substep_bytes) & 15u; };

    // The warp's sums (half 0 + half 1) as [column][row] at `partial`; then zero for the next share.
    auto store_sums = [&](float* partial) {
        if constexpr (layout::tensor_cores) {
            const int g = lane >> 2, t = lane & 3;
#pragma unroll
            for (int ri = 0; ri < 2; ++ri)
#pragma unroll
                for (int ci = 0; ci < 2; ++ci) {
                    if (2 * t + ci < NCols)
                        partial[(2 * t + ci) * mmvq_tile_rows + g + 8 * ri] =
                            __fadd_rn(acc_mma[0][ri][ci], acc_mma[1][ri][ci]);
                    acc_mma[0][ri][ci] = acc_mma[1][ri][ci] = 0.0f;
                }
        } else {
#pragma unroll
            for (int c = 0; c < NCols; ++c) {
                const float other = __shfl_xor_sync(0xffffffffu, acc_lane[c], 16);
                if (lane < 16) partial[c * mmvq_tile_rows + lane] = __fadd_rn(acc_lane[c], other);
                acc_lane[c] = 0.0f;
            }
        }
    };
    // Where a warp takes several shares, their sums go past the CTA's rings, share by share.
    float* const share_sums = reinterpret_cast<float*>(smem + split * warp_smem_bytes);
    int share = warp * shares_per_warp;
    int share_end = shares_per_warp > 1 ? share_begin(share + 1) : p.nsubsteps;

    int slot = 0;
    unsigned parity = 0;
    int ahead_slot = ahead == stages ? 0 : ahead;
    for (int i = 0; i < nsteps; ++i) {
        const int sub = step_sub(i);
        // Where the step's substeps sit: this warp's slot, or in a shared tile the slot of the warp
        // that copied wide step sub / layout::substeps.
        const int owner = shared_tile ? sub / layout::substeps : warp;
        const int slot_sub = shared_tile ? owner * layout::substeps : sub;
        const uint8_t* const slot_records = shared_tile ? smem + owner * warp_smem_bytes : ring + slot * slot_bytes;
        ptx::mbarrier_wait(shared_tile ? &slot_barriers[owner][0] : &barriers[slot], parity);
        if constexpr (!layout::tensor_cores && pairs_records<codec, NCols>()) {
            pair_record_quants<NCols>(ring + slot * slot_bytes, step_records(sub), lane);
            __syncwarp();
        }
        if (ahead < stages) {
            // The slot ahead was emptied by an earlier step: refill it before this step's work.
            if (i + ahead < ncopies) {
                issue(step_sub(i + ahead), ahead_slot);
                issue_records(step_sub(i + ahead), ahead_slot);
                close_slot(ahead_slot);
            }
            if (++ahead_slot == stages) ahead_slot = 0;
        }
        if (shares_per_warp > 1 && sub >= share_end) {  // the warp's next share starts here
            store_sums(share_sums + share * NCols * mmvq_tile_rows);
            ++share;
            share_end = share_begin(share + 1);
        }
        const int g_begin = sub - slot_sub;
        decode_substeps(slot_records, slot_sub, shift_at(slot_sub), g_begin,
                        shared_tile ? g_begin + 1 : layout::substeps);
        __syncwarp();  // every lane is done with the slot before it is refilled
        if (ahead == stages && i + stages < ncopies) {
            issue(step_sub(i + stages), slot);
            issue_records(step_sub(i + stages), slot);
            close_slot(slot);
        }
        if (!shared_tile && ++slot == stages) {
            slot = 0;
            parity ^= 1u;
        }
    }
    if constexpr (shared_tile) __syncthreads();  // no warp still reads a slot that the sums below reuse

    // The sums of this warp's (last) share: at the start of its ring, or past the rings; then the
    // fixed-order sum over the shares of the CTA.
    const bool apart = shares_per_warp > 1;
    store_sums(apart ? share_sums + share * NCols * mmvq_tile_rows : reinterpret_cast<float*>(ring));
    __syncthreads();
    if (x_ready) ptx::wait_for_prerequisite_grids();  // the previous kernel may read or write Y
    auto share_partial = [&](int s, int idx) {
        return apart ? share_sums[s * NCols * mmvq_tile_rows + idx]
                     : reinterpret_cast<const float*>(smem + s * warp_smem_bytes)[idx];
    };
    auto row_sum = [&](int idx) {
        float sum = share_partial(0, idx);
        for (int s = 1; s < shares; ++s) sum = __fadd_rn(sum, share_partial(s, idx));
        return sum;
    };
    for (int idx = warp * 32 + lane; idx < NCols * mmvq_tile_rows; idx += 32 * split) {
        const int c = idx / mmvq_tile_rows, r = idx % mmvq_tile_rows;
        if (row0 + r >= p.rows) continue;
        float v = row_sum(idx);
        if (p.bias) v = __fadd_rn(v, p.bias[int64_t(w2) * p.rows + row0 + r]);  // add_id's bits
        y[c * p.y_col_stride + row0 + r] = v;
    }
    if (p.epilogue.kind == mmvq_finish::swiglu_round) finish_swiglu<NCols>(p.epilogue, row0, warp, lane, split);
    if (p.epilogue.kind == mmvq_finish::norm_tail)
        finish_norm<NCols>(p.epilogue, p.y, p.y_col_stride, warp, lane, split, reinterpret_cast<double*>(smem));
    if (p.epilogue.kind == mmvq_finish::weighted_sum)
        finish_weighted_sum(p.epilogue, p.y + int64_t(blockIdx.z) * p.y_stride3, p.y_stride2, p.rows, row0, warp, lane,
                            split, reinterpret_cast<double*>(smem));
    if (p.epilogue.kind == mmvq_finish::swiglu_slots)
        finish_swiglu_slots(p.epilogue, p.y + int64_t(blockIdx.z) * p.y_stride3, p.y_stride2, row0, warp, lane);
}

namespace detail {

// Warps per CTA (the k-split): from W's type and shape alone, never from NCols, so that every
// NCols adds the same partial sums. Few row tiles (4096 rows: 256) get up to 8 warps each, so
// that the decoding of the small types has warps enough to hide its latency; types whose row
// step is 192 bytes or more (q6_K, q8_0) stop at 4, which measured faster for them on the H100,
// except where 8 make every warp's range a single wide step (Q6_K at k = 4096: see
// mmvq_split<B>). Every warp gets at least one unit.
inline int mmvq_split(int64_t tiles, int64_t nunits, int max_split, int64_t target_warps) {
    int split = 1;
    while (split < max_split && 2 * split <= nunits && tiles * split < target_warps) split *= 2;
    return split;
}
// The widest split whose rings (two slots per warp) fit a CTA at every NCols: the split may not
// depend on NCols. Types of 192 bytes or more per substep without wide steps (Q8_0) are never
// split wider than mmvq_wide_step_max_split, so no wider kernel is compiled for them.
template <class B>
constexpr int mmvq_type_max_split() {
    int split = mmvq_layout<B, 1>::substep_bytes < 192 || mmvq_wide_step_units<B>() > 1 ||
                        mmvq_max_split < mmvq_wide_step_max_split
                    ? mmvq_max_split
                    : mmvq_wide_step_max_split;
    constexpr int64_t widest_slot = std::max<int64_t>(mmvq_layout<B, mmvq_max_cols>::stage_bytes,
                                                      mmvq_layout<B, mmvq_group_max_cols<B>()>::stage_bytes);
    while (split > 1 && int64_t(split) * 2 * widest_slot > mmvq_max_cta_smem) split /= 2;
    return split;
}
// Substeps and k-split units of a row of k elements.
template <class B>
void set_mmvq_steps(mmvq_params& p, int64_t k) {
    constexpr int64_t unit = int64_t(mmvq_unit_substeps<B>()) * mmvq_substep_elements;
    p.nsubsteps = int32_t((k + mmvq_substep_elements - 1) / mmvq_substep_elements);
    p.nunits = int32_t((k + unit - 1) / unit);
}
template <class B>
int mmvq_split(int64_t tiles, int64_t nunits) {
    // Units of four substeps (Q2_K, Q3_K) measured faster with a third fewer warps: at 4096×14336
    // on the H100, 1 column, Q2_K 11.3 -> 9.7 µs and Q3_K 15.1 -> 12.9 µs (with twice the warps
    // again, on the kernel of 2026-11-23: 9.06 -> 11.35 µs). Q8_0, whose substep is 256 bytes or
    // more, the least decoding per byte, with 7/12 of them: at 14336×4096 one warp per CTA instead
    // of two, 22.79 -> 22.32 µs at 1 column, 25.00 -> 23.06 µs at 4, 24.41 -> 23.79 µs at 8 (other
    // shapes keep their split; Q6_K, at 210 bytes, lost 8 points with one warp there).
    constexpr int64_t target = mmvq_unit_substeps<B>() >= 4            ? mmvq_target_warps * 2 / 3
                               : mmvq_substep_bytes<B>() >= 256 ? mmvq_target_warps * 7 / 12
                                                                : mmvq_target_warps;
    // Types of 192 bytes or more per substep stop at mmvq_wide_step_max_split warps, except where
    // the widest split makes every warp's range one wide step: Q6_K at k = 4096, 8 warps of two
    // substeps, whose one-step rings leave room for the next launch (mmvq_one_step_warps). On the
    // H100, 4096×4096: 1 column 6.43 -> 5.98 µs (69.2 -> 74.3%), 4 columns 8.79 -> 8.32 µs; where
    // the wider split leaves warps of several steps, it lost (4096×14336, 8 columns: 20.8 -> 24.2 µs).
    int max_split = mmvq_type_max_split<B>();
    if (mmvq_substep_bytes<B>() >= 192 && max_split > mmvq_wide_step_max_split &&
        nunits != int64_t(max_split) * mmvq_wide_step_units<B>())
        max_split = mmvq_wide_step_max_split;
    return mmvq_split(tiles, nunits, max_split, target);
}

// Calls f(std::integral_constant<int, n>) for the runtime n in 1..8.
template <int N = 1, class F>
void with_ncols(int64_t n, F&& f) {
    if (n == N) {
        f(std::integral_constant<int, N>{});
    } else if constexpr (N < mmvq_max_cols) {
        with_ncols<N + 1>(n, std::forward<F>(f));
    } else {
        throw error(errc::invalid_argument, "mmvq: " + std::to_string(n) + " columns; 1..8 supported");
    }
}

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

namespace detail {

// What the ring depth is sized from: the device's SMs and shared memory.
struct device_limits {
    int sms = 132;
    int64_t smem_per_sm = 228 * 1024;
    int64_t smem_reserved_per_cta = 1024;
    int64_t smem_per_cta_optin = 227 * 1024;  // the most one CTA may ask for, static and dynamic
    int64_t warps_per_sm = mmvq_warps_per_sm;   // what a launch's rings are sized for (mmvq_sized_warps_per_sm)
};

// Refuses devices below sm_90; returns what the ring depth is sized from.
inline device_limits check_device_supports_mmvq() {
    int device = 0, major = 0, sms = 0, smem = 0, reserved = 0, optin = 0;
    LLMRT_CUDA_CHECK(cudaGetDevice(&device));
    LLMRT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    check(major >= 9, errc::missing_feature, [&] {
        return "cuda::mmvq needs compute capability 9.0 or newer (bulk copies, mbarrier transactions); device " +
               std::to_string(device) + " has " + std::to_string(major) + ".x";
    });
    LLMRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    LLMRT_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    LLMRT_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
    LLMRT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    device_limits limits;
    limits.sms = sms;
    limits.smem_per_sm = smem;
    limits.smem_reserved_per_cta = reserved;
    limits.smem_per_cta_optin = optin;
    return limits;
}

// W's layout as the kernel needs it: rows aligned for the type's device codec.
template <class B>
void check_weights(const qmatrix_view& w, const char* operation, const std::string& shapes) {
    check(w.rows >= 0 && w.k >= 0 && w.k % B::block_size == 0, errc::shape_mismatch, [&] {
        return std::string(operation) + ": " + shapes + ": W's k must be a multiple of " + B::name +
               "'s block size " + std::to_string(B::block_size);
    });
    check(w.rows <= 0x7fffffff - 16 && w.k / 32 <= 0x7fffffff, errc::shape_mismatch,
          [&] { return std::string(operation) + ": " + shapes + ": W is too large for 32-bit row and block counts"; });
    const int64_t row_bytes = w.row_bytes();
    check(w.rows <= 1 || w.row_stride == 0 || w.row_stride >= row_bytes, errc::shape_mismatch, [&] {
        return std::string(operation) + ": " + shapes + ": W's row stride " + std::to_string(w.row_stride) +
               " bytes is shorter than a row (" + std::to_string(row_bytes) + " bytes)";
    });
    constexpr int align = device_codec<B>::align;
    const bool aligned = reinterpret_cast<uintptr_t>(w.data) % align == 0 && w.row_stride_or_dense() % align == 0 &&
                         w.stride2_or_dense() % align == 0 && w.stride3_or_dense() % align == 0;
    check(aligned, errc::invalid_argument, [&] {
        return std::string(operation) + ": " + shapes + ": W's address and strides must be multiples of " +
               std::to_string(align) + " bytes for " + B::name;
    });
}

// CTAs per SM where the whole grid of `ctas` CTAs (`split` warps each) is resident at once, or 0
// where it takes several waves.
inline int64_t mmvq_one_wave_ctas_per_sm(int64_t ctas, int split, const device_limits& device) {
    const int64_t per_sm = (ctas + device.sms - 1) / std::max(device.sms, 1);
    return per_sm * split > 2 * device.warps_per_sm ? 0 : per_sm;
}

// How far an L2 miss of W's tensor-map loads is widened. A one-wave grid asks for nearly all of W
// at once; for the types whose k-split units are several substeps (Q2_K, Q3_K, MXFP4: boxes of 16
// rows of 136-440 bytes) widening to 256 bytes then costs more than it saves. Measured on the H100,
// 1 column, 256 B -> none: Q2_K 14336×4096 66.8 -> 74.4% of 3.1 TB/s, Q3_K 67.3 -> 70.7%, MXFP4
// 4096×14336 66.2 -> 70.8%; but Q2_K 128256×4096 (many waves) 88.2 -> 86.6%, and Q4_K and Q8_0 lost
// 1-4 points on the one-wave shapes too (Q8_0 4096×14336 90.0 -> 86.2%). Where every warp takes a
// single step (`one_step`, mmvq_one_step_warps: the whole grid's W is asked for at once), 128
// bytes, for every type: on the H100, 4096×4096 at 1 column, Q4_K 4.22 -> 4.05 µs, Q5_K 4.90 ->
// 4.57 µs, Q6_K 6.05 -> 5.88 µs, MXFP4 4.80 -> 4.73 µs, the others within 1%; 128 bytes elsewhere
// lost up to 1.5 points (Q8_0 14336×4096 89.6 -> 88.2%). And 128 bytes for those several-substep
// types' one-wave grids at 1 column with a shared X where a warp takes three steps or more: on the
// H100, 14336×4096 Q3_K 9.38 -> 9.23 µs, Q2_K 7.14 -> 7.03 µs, MXFP4 11.47 -> 11.18 µs; 4096×14336
// Q3_K 9.41 -> 9.27 µs, Q2_K 7.17 -> 7.08 µs, MXFP4 11.60 -> 11.42 µs; every other launch at 1 and
// 2 columns within ±1%. With two steps per warp (MXFP4 4096×4096: 3.60 -> 3.71 µs), after the
// previous kernel (Q2_K 14336×4096 8.23 -> 8.71 µs) and at 2 and 8 columns (within ±1%, MXFP4
// 4096×4096 8 columns after previous 6.46 -> 6.79 µs) it did not pay. Copies only: never changes a
// result.
template <class B, int NCols>
CUtensorMapL2promotion mmvq_l2_promotion(const mmvq_params& p, int64_t ctas, int split, const device_limits& device,
                                         bool one_step, int64_t steps_per_warp) {
    if (one_step) return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    if (mmvq_unit_substeps<B>() < 2 || mmvq_one_wave_ctas_per_sm(ctas, split, device) == 0)
        return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    const bool shared = p.activations == int(activation_order::shared);
    return NCols == 1 && shared && steps_per_warp >= 3 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                                       : CU_TENSOR_MAP_L2_PROMOTION_NONE;
}

// cuTensorMapEncodeTiled, reached through the runtime so that nothing links libcuda directly.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static const PFN_cuTensorMapEncodeTiled_v12000 encoder = [] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
                cudaSuccess ||
            found != cudaDriverEntryPointSuccess)
            return PFN_cuTensorMapEncodeTiled_v12000(nullptr);
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }();
    return encoder;
}

// W as the kernel reads it: bytes of each row, rows, and two batch dimensions.
struct weight_geometry {
    const void* data;
    int64_t row_bytes, rows, batch2, batch3;
    int64_t row_stride, stride2, stride3;  // bytes
};

// A 4-d tensor map over W's bytes (row bytes, rows, W batch 2, W batch 3) whose box is the 16 rows
// of one step. False where TMA cannot describe W (address or a stride not a multiple of 16
// bytes): the kernel then copies row by row.
template <class Layout>
bool make_weight_tensor_map(CUtensorMap& map, const weight_geometry& w, CUtensorMapL2promotion promotion) {
    constexpr int element = Layout::box_element_bytes;
    const bool describable = reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && w.row_stride % 16 == 0 &&
                             w.stride2 % 16 == 0 && w.stride3 % 16 == 0 && w.row_bytes % element == 0 &&
                             w.stride3 < (int64_t(1) << 40) && w.rows < (int64_t(1) << 31);
    PFN_cuTensorMapEncodeTiled_v12000 encode = describable ? tensor_map_encoder() : nullptr;
    if (encode == nullptr) return false;
    const cuuint64_t dims[4] = {cuuint64_t(w.row_bytes / element), cuuint64_t(w.rows), cuuint64_t(w.batch2),
                                cuuint64_t(w.batch3)};
    const cuuint64_t strides[3] = {cuuint64_t(w.row_stride), cuuint64_t(w.stride2), cuuint64_t(w.stride3)};
    const cuuint32_t box[4] = {cuuint32_t(Layout::box_bytes / element), cuuint32_t(mmvq_tile_rows), 1, 1};
    const cuuint32_t element_strides[4] = {1, 1, 1, 1};
    constexpr CUtensorMapDataType element_type = element == 1   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                                 : element == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                                 : element == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32
                                                                : CU_TENSOR_MAP_DATA_TYPE_UINT64;
    return encode(&map, element_type, 4, const_cast<void*>(w.data), dims, strides, box, element_strides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, promotion,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Shared memory for one CTA's rings: the SM's share for each CTA it holds at once, where the whole
// grid fits the SMs in one wave (no CTA waits for another to finish), plus `room` CTAs more, else
// for device.warps_per_sm warps per SM.
inline int64_t mmvq_cta_ring_budget(int64_t ctas, int split, const device_limits& device, int room = 0) {
    int64_t ctas_per_sm = mmvq_one_wave_ctas_per_sm(ctas, split, device);
    if (ctas_per_sm == 0) ctas_per_sm = std::max<int64_t>(1, device.warps_per_sm / split);
    else ctas_per_sm += room;
    return std::min<int64_t>(mmvq_max_cta_smem,
                             (device.smem_per_sm - 512) / ctas_per_sm - device.smem_reserved_per_cta - 256);
}
// Whether a launch is a one-wave grid whose warps each take a single step (4096×4096 at 1 and 2
// columns for most types). Such a warp never refills its ring: it gets one slot, and the CTA's
// shared memory is sized so that an SM holds exactly one CTA more than the grid puts there, which
// is the next launch's: it starts its weight copies beside this one (programmatic dependent
// launch). Measured on the H100, 4096×4096 (with the registers of mmvq_min_ctas_per_sm): no room
// for it (two slots, or shared memory padded to the SM's share) was slower, Q3_K 4.27 -> 4.83 µs,
// Q6_K 6.38 -> 7.14 µs; room for two or more also, Q2_K 3.60 -> 4.50 µs, Q3_K 4.26 -> 5.55 µs,
// MXFP4 5.38 -> 5.88 µs. Copies only: never changes a result.
inline bool mmvq_one_step_warps(int64_t ctas, int split, const device_limits& device, int64_t steps_per_warp) {
    return steps_per_warp == 1 && mmvq_one_wave_ctas_per_sm(ctas, split, device) > 0;
}
// Shared memory for a CTA such that an SM holds at most `room` CTAs more than the `per_sm` of its
// grid: each CTA's share (this plus the reserved part) is just above the SM's memory over
// per_sm + room + 1.
inline std::size_t mmvq_cta_smem_leaving_room(int64_t per_sm, int64_t room, const device_limits& device) {
    return std::size_t(device.smem_per_sm / (per_sm + room + 1) - device.smem_reserved_per_cta + 256);
}
// Shared memory for a CTA of such a grid: enough that the SM holds no two CTAs more.
inline std::size_t mmvq_one_step_cta_smem(int64_t ctas, int split, const device_limits& device) {
    return mmvq_cta_smem_leaving_room(mmvq_one_wave_ctas_per_sm(ctas, split, device), 1, device);
}
// Steps of a warp's range of whole units.
template <class Layout, class B>
int64_t mmvq_steps_per_warp(const mmvq_params& p, int split) {
    return (int64_t((p.nunits + split - 1) / split) * mmvq_unit_substeps<B>() + Layout::substeps - 1) / Layout::substeps;
}
// Slots of `slot_bytes` that a warp's share of a CTA's ring budget holds.
inline int64_t mmvq_slots_that_fit(int64_t budget, int split, int64_t slot_bytes) {
    return budget / (int64_t(split) * slot_bytes);
}
// The ring depth for slots of `slot_bytes`: as deep as the budget allows, 2..8 slots, never more
// than a warp's steps. It changes only how far ahead the copies run, never the result.
inline int mmvq_stages(int64_t budget, int split, int64_t steps_per_warp, int64_t slot_bytes) {
    const int64_t fit = mmvq_slots_that_fit(budget, split, slot_bytes);
    // Never fewer than two slots, even for a warp of one step (one slot only in the grids of
    // mmvq_one_step_warps, whose CTAs' shared memory is sized for it): one slot alone lets too many
    // CTAs share an SM (Q3_K 4096×4096: 4.2 -> 5.5 µs on the H100).
    return clamp_int(int(std::min<int64_t>({fit, steps_per_warp, mmvq_max_stages})), 2, mmvq_max_stages);
}
// The ring: slots sized for either copy path, so that switching paths never changes the ring,
// except where compact tensor-map slots make a ring of two into three or more (a ring of two
// must be refilled while its other slot is read; with three the copies keep ahead), in one-wave
// grids of CTAs of one or two warps. Only there: compact slots elsewhere changed the ring depth
// or let part of the next launch in beside this one, which measured ±7 points either way; with
// CTAs of 8 warps they sped up mmvq alone but slowed the quantizer + mmvq pair (Q5_K 4096×14336,
// 4 columns: 19.4 -> 20.1 µs); on many-wave grids ±1.5%. On the H100: Q8_0 14336×4096 2 columns
// 26.3 -> 23.0 µs, Q2_K 14336×4096 8 columns 19.4 -> 16.8 µs. Never changes a result.
// `one_step`: the launch is one of mmvq_one_step_warps. Returns the CTA's dynamic shared memory:
// its warps' rings, or more in those grids.
template <class Layout>
std::size_t set_mmvq_ring(mmvq_params& p, int64_t ctas, int split, int64_t steps_per_warp, bool one_step,
                          const device_limits& device) {
    p.slot_bytes = Layout::stage_bytes;
    if (one_step) {
        p.stages = 1;
        return std::max(std::size_t(split) * p.slot_bytes, mmvq_one_step_cta_smem(ctas, split, device));
    }
    const int64_t budget = mmvq_cta_ring_budget(ctas, split, device);
    p.stages = mmvq_stages(budget, split, steps_per_warp, Layout::stage_bytes);
    // Also where two standard slots overflow the planned share and two compact ones fit: Q6_K at
    // 4096×4096 from 5 columns, 8 warps per CTA, which would otherwise put one CTA per SM.
    const bool overflows = mmvq_slots_that_fit(budget, split, Layout::stage_bytes) < 2;
    if (p.tensor_map && p.stages == 2 && (split <= 2 || overflows) &&
        mmvq_one_wave_ctas_per_sm(ctas, split, device) > 0) {
        const int compact = mmvq_stages(budget, split, steps_per_warp, Layout::compact_stage_bytes);
        if (compact > 2 || (overflows && mmvq_slots_that_fit(budget, split, Layout::compact_stage_bytes) >= 2)) {
            p.stages = compact;
            p.slot_bytes = Layout::compact_stage_bytes;
        }
    }
    return std::size_t(split) * p.stages * p.slot_bytes;
}

// Steps a warp keeps in flight while it reads one (its ring has `stages` slots). Copies in
// flight share the memory system fairly, so the more every warp asks for at once, the later each
// warp's first step lands and the more of its decoding is left for after the last byte arrives.
// Measured on the H100, 1 column: steps of four substeps (Q2_K, Q3_K), whose decoding is long,
// do best with one step ahead (Q2_K 14336×4096 10.5 -> 9.4 µs, Q3_K 13.7 -> 12.2 µs), and so do
// MXFP4's two-substep steps (4096×14336: 16.8 -> 15.3 µs; with two warps per CTA, since its
// decoding got cheaper, 14336×4096 15.35 -> 13.53 µs, 2 columns 15.75 -> 15.09 µs, where it had
// lost 3% before). Where a warp's whole range fits a ring of three or more, one
// step fewer than the ring (Q6_K 4096×4096: 7.1 -> 6.3 µs), and so from 3 columns on (more
// decoding per step) where four or more warps split k (4096×14336, 4 columns: Q4_K 15.4 -> 14.3 µs,
// MXFP4 19.1 -> 17.7 µs; with fewer warps per CTA, up to 3% slower). Otherwise the whole ring:
// Q4_K and Q5_K lost 3-10% at 1 column with less in flight. The ring keeps its size either way
// (smaller rings, which let more CTAs share an SM, measured slower). Never changes a result.
template <class B, int NCols>
int mmvq_lookahead(int stages, int split, int64_t steps_per_warp) {
    if constexpr (LLMRT_MMVQ_LOOKAHEAD_GAP != 0)  // tuning experiments: a fixed gap, or -1 for none
        return LLMRT_MMVQ_LOOKAHEAD_GAP < 0 ? stages : std::max(1, stages - LLMRT_MMVQ_LOOKAHEAD_GAP);
    constexpr int substeps = mmvq_layout<B, NCols>::substeps;  // of a narrow step: the decoding per unit
    if (substeps > 1) return 1;
    if (NCols >= 3 && split >= 4) return std::max(1, stages - 1);
    return stages >= 3 && stages >= steps_per_warp ? stages - 1 : stages;
}

// Whether a launch that reads a shared X (activation_order::shared) keeps at most two ring slots:
// for the types of four-substep units (Q2_K, Q3_K) on one-wave grids whose rings are deeper. Such a
// launch waits for nothing before it decodes, so a smaller ring, which lets the next launch be
// resident beside it sooner, gains more than the deeper prefetch. Measured on the H100, shared X:
// 8 columns Q2_K 4096×4096 5.92 -> 4.52 µs, 4096×14336 17.09 -> 12.54 µs, Q3_K 4096×4096 6.76 ->
// 4.86 µs, 4096×14336 19.96 -> 15.06 µs; 1 column 4096×14336 Q2_K 7.76 -> 7.18 µs, Q3_K 10.07 ->
// 9.58 µs; within 3% elsewhere. With X after the previous kernel, two slots lost up to 45% (Q2_K
// 4096×4096, 8 columns). Copies only: never changes a result.
template <class B>
bool mmvq_shared_ring_of_two(const mmvq_params& p, int64_t ctas, int split, const device_limits& device,
                             bool one_step) {
    return p.activations == int(activation_order::shared) && mmvq_unit_substeps<B>() >= 4 && !one_step &&
           p.stages > 2 && mmvq_one_wave_ctas_per_sm(ctas, split, device) > 0;
}

// Shared memory for a CTA of the tensor-core form in a one-wave grid (0 elsewhere): enough that an
// SM holds at most one CTA of the next launch beside this grid's where X comes after the previous
// kernel, two where it is shared. The next launch's CTAs start at once and copy their weights;
// where X comes after the previous kernel, the more copies they have in flight, the later this
// launch's wait returns (see "Where the time goes between launches" in bench/RESULTS.md). Without
// this bound registers set how many fit, and a kernel three registers leaner (Q3_K's dp2a sums)
// let one more in and lost: on the H100, 8 columns, Q3_K 14336×4096 after previous 17.3 -> 20.0
// µs, 4096×4096 shared 4.45 -> 4.74 µs; with the bound 16.8 and 4.34 µs. It also took MXFP4
// 14336×4096 after previous from 22.8 to 19.2 µs, Q4_K from 16.7 to 15.3 µs, Q5_K (7 columns)
// from 20.2 to 18.0 µs, and Q2_K 4096×4096 shared from 4.12 to 3.79 µs; elsewhere within 2%.
// Room for one where X is shared lost (Q3_K 4096×4096 5.07 µs); so did the bound at 1 column
// (Q2_K 4096×4096 shared 2.14 -> 2.98 µs). Copies only: never changes a result.
inline std::size_t mmvq_tensor_core_cta_smem(const mmvq_params& p, int64_t ctas, int split,
                                             const device_limits& device) {
    const int64_t per_sm = mmvq_one_wave_ctas_per_sm(ctas, split, device);
    if (per_sm == 0) return 0;
    const int64_t room = p.activations == int(activation_order::after_previous) ? 1 : 2;
    return mmvq_cta_smem_leaving_room(per_sm, room, device);
}

// `split`: the warps per CTA, which run the p.shares shares of the k-split.
template <class B, int NCols, int MaxSplit, bool Wide, bool SharedTile, bool SeveralShares>
void launch_mmvq_kernel(mmvq_params p, const weight_geometry& w, dim3 grid, int split, const device_limits& device,
                        cudaStream_t stream, const launch_options& options) {
    using layout = mmvq_layout<B, NCols, Wide>;
    const int64_t ctas = int64_t(grid.x) * grid.y * grid.z;
    const int64_t steps_per_warp = mmvq_steps_per_warp<layout, B>(p, split);
    const bool one_step = mmvq_one_step_warps(ctas, split, device, steps_per_warp);
    CUtensorMap map{};
    const CUtensorMapL2promotion promotion = mmvq_l2_promotion<B, NCols>(p, ctas, split, device, one_step, steps_per_warp);
    p.tensor_map = options.allow_tensor_map && make_weight_tensor_map<layout>(map, w, promotion);
    std::size_t smem = set_mmvq_ring<layout>(p, ctas, split, steps_per_warp, one_step, device);
    p.lookahead = mmvq_lookahead<B, NCols>(p.stages, split, steps_per_warp);
    if (mmvq_shared_ring_of_two<B>(p, ctas, split, device, one_step)) {
        p.stages = 2;
        p.lookahead = std::min(p.lookahead, 2);
        smem = std::size_t(split) * p.stages * p.slot_bytes;
    }
    if constexpr (layout::tensor_cores)
        if (!one_step) smem = std::max(smem, mmvq_tensor_core_cta_smem(p, ctas, split, device));
    if (p.shares > split)  // the sums of each share, past the rings
        smem += std::size_t(p.shares) * NCols * mmvq_tile_rows * sizeof(float);
    {
        // The opt-in above 48 KB (dynamic plus static) is a per-device function attribute: set
        // it once per device, to the most the device allows beside the kernel's static barriers
        // (a launch that asks for more fails with the driver's error).
        static std::atomic<uint64_t> configured_devices{0};
        int ordinal = 0;
        LLMRT_CUDA_CHECK(cudaGetDevice(&ordinal));
        const uint64_t bit = ordinal < 64 ? (uint64_t(1) << ordinal) : 0;
        if (bit == 0 || (configured_devices.load() & bit) == 0) {
            LLMRT_CUDA_CHECK(cudaFuncSetAttribute(mmvq_kernel<B, NCols, MaxSplit, Wide, SharedTile, SeveralShares>,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  int(device.smem_per_cta_optin - 1024)));
            configured_devices.fetch_or(bit);
        }
    }
    launch("cuda::mmvq", mmvq_kernel<B, NCols, MaxSplit, Wide, SharedTile, SeveralShares>, grid, dim3(32, unsigned(split)), smem,
           stream, options, p, map);
}

// Whether a launch takes wide steps (mmvq_wide_step_units): where a ring of three wide slots fits
// every warp, or a ring of two where a warp's whole range is one wide step; otherwise narrow
// ones, since fewer than three slots of a ring that must be refilled lose more than wide boxes
// gain, and wide slots that do not fit the planned CTAs per SM would split a one-wave grid. On
// the H100, 1 column: Q4_K 4096×4096 4.89 -> 4.51 µs, Q6_K 4096×14336 18.78 -> 17.65 µs (2
// columns 19.51 -> 18.32 µs); where the rule keeps narrow steps, wide ones measured slower (Q6_K
// 14336×4096 19.1 -> 21.7 µs, Q4_K 4096×14336 12.5 -> 13.3 µs). Copies only: never changes a
// result.
template <class B, int NCols>
bool mmvq_wide_steps(const mmvq_params& p, int64_t ctas, int split, const device_limits& device) {
    if constexpr (!mmvq_has_wide_steps<B, NCols>()) {
        return false;
    } else {
        using wide = mmvq_layout<B, NCols, true>;
        const int64_t steps = mmvq_steps_per_warp<wide, B>(p, split);
        if (mmvq_one_step_warps(ctas, split, device, steps))  // one slot, beside room for one more CTA
            return mmvq_slots_that_fit(mmvq_cta_ring_budget(ctas, split, device, 1), split, wide::stage_bytes) >= 1;
        const int64_t fit = mmvq_slots_that_fit(mmvq_cta_ring_budget(ctas, split, device), split, wide::stage_bytes);
        return fit >= 3 || (fit >= 2 && steps == 1);
    }
}

// Whether the warps of a CTA take units by turns (unit u to warp u mod split) rather than
// contiguous shares of k. At each step the CTA's warps then read neighbouring pieces of every row,
// which streams like one wider copy; a warp's own steps stay one unit wide, so its ring keeps its
// depth. Only for types of one-substep units (Q8_0, Q4_K, Q5_K, Q6_K), and not where the
// 1-column launch takes wide steps that it must refill (two neighbouring units of one warp: Q6_K
// at 4096×14336). Where its wide steps are one per warp (mmvq_one_step_warps: 4096×4096), the CTA
// holds the whole row tile at once, so the warps copy wide steps and decode their units by turns
// from each other's slots (a shared tile). Decided from W's type and shape alone, never from
// NCols: it decides which partial sums are added. Measured on the H100 against contiguous
// shares: 1 column Q4_K 4096×4096 4.31 -> 4.19 µs, 14336×4096 12.72 -> 12.38 µs, Q5_K 14336×4096
// 15.63 -> 15.15 µs, Q8_0 4096×14336 22.47 -> 22.05 µs; 4 columns Q4_K 4096×4096 6.04 -> 5.28 µs,
// Q6_K 8.29 -> 7.46 µs; 8 columns Q4_K 4096×14336 15.46 -> 14.44 µs. Slower in a few places: Q5_K
// 14336×4096 at 2 columns 15.9 -> 16.4 µs, Q5_K 4096×4096 at 1 column 4.83 -> 4.96 µs. For the types
// of multi-substep units (Q2_K, Q3_K, MXFP4) it was as often slower as faster.
template <class B>
bool mmvq_interleaves(const mmvq_params& p, int64_t ctas, int split, const device_limits& device) {
    if constexpr (mmvq_unit_substeps<B>() != 1) {
        return false;
    } else {
        if (split == 1) return false;  // the same units either way
        if constexpr (mmvq_has_wide_steps<B, 1>())
            if (mmvq_wide_steps<B, 1>(p, ctas, split, device))
                return mmvq_one_step_warps(ctas, split, device,
                                           mmvq_steps_per_warp<mmvq_layout<B, 1, true>, B>(p, split));
        return true;
    }
}

// Warps per CTA to run the `split` shares of the k-split. Each warp takes split / warps
// neighbouring shares and keeps their sums apart, so the results are the same for any count; only
// where shares are contiguous ranges of k (not by turns, see mmvq_interleaves), and the steps then
// stay narrow, so that no step holds parts of two shares. Copies only: never changes a result.
// launch_options::mmvq_max_warps caps it (for tuning). Otherwise one warp per share, except in
// one-wave grids of at least a CTA per SM, where fewer warps leave more room for the next launch
// and measured faster on the H100 (mmvq_max_warps sweeps, `--quick 1`):
// - with a shared X (the launch waits for nothing before it decodes), Q2_K and Q3_K take the whole
//   k of up to four units (k <= 4096) in one warp where their steps are whole units (up to 4
//   columns): 4096×4096, 1 column Q2_K 3.25 -> 2.16 µs, Q3_K 3.77 -> 2.78 µs, 4 columns Q2_K
//   4.42 -> 3.24 µs, Q3_K 4.81 -> 4.23 µs; 14336×4096, 1 column Q2_K 7.42 -> 7.16 µs, Q3_K 10.57
//   -> 9.46 µs, 2 columns Q2_K 10.37 -> 7.36 µs, Q3_K 11.01 -> 9.86 µs, but 4 columns Q3_K 13.42 ->
//   13.95 µs. At 8 columns (steps of one substep) Q3_K lost 3-6%. With X after the previous kernel,
//   one warp per share decodes later once X lands (Q2_K 4096×4096: 3.53 µs, 6.44 µs with one warp).
// - with a shared X, grids whose warps would each take a single step (mmvq_one_step_warps: MXFP4
//   at 4096×4096, 1 and 2 columns) take two steps per warp: 4.20 -> 3.60 µs, 2 columns 4.72 ->
//   4.10 µs (four steps per warp: 4.22 µs at 1 column).
// - otherwise, where two ring slots per warp overflow the CTA's share of the SM
//   (mmvq_cta_ring_budget: the grid would take two waves), fewer warps until they fit, at 1 and 2
//   columns: Q2_K and Q3_K at 14336×4096 after the previous kernel, 2 columns Q2_K 11.20 -> 9.89
//   µs, Q3_K 12.87 -> 12.51 µs. At 4 columns it was mixed (Q3_K 17.32 -> 15.46 µs, Q2_K 15.00 ->
//   16.43 µs).
template <class B, int NCols>
int mmvq_warps(const mmvq_params& p, int64_t ctas, int split, const device_limits& device,
               const launch_options& options) {
    if (p.interleaved || split == 1) return split;
    int warps = split;
    if (options.mmvq_max_warps > 0) {
        while (warps > options.mmvq_max_warps) warps /= 2;
        return warps;
    }
    if (mmvq_one_wave_ctas_per_sm(ctas, split, device) == 0 || ctas < device.sms) return split;
    using layout = mmvq_layout<B, NCols>;
    const bool shared = p.activations == int(activation_order::shared);
    if (shared && mmvq_unit_substeps<B>() >= 4 && NCols <= mmvq_group_max_cols<B>() && p.nunits <= 4) return 1;
    if (shared && mmvq_one_step_warps(ctas, split, device, mmvq_steps_per_warp<layout, B>(p, split))) return split / 2;
    if (NCols <= 2)
        while (warps > 1 && mmvq_slots_that_fit(mmvq_cta_ring_budget(ctas, warps, device), warps, layout::stage_bytes) < 2)
            warps /= 2;
    return warps;
}

// Warps per SM that the rings of grids of several waves are sized for (and beyond twice which a
// grid counts as several waves): 12, except where another count measured faster on the H100
// (`--quick 1`, 8, 12 and 16 in one run, 128256×4096, shared X; after the previous kernel alike):
// - 8 for Q6_K (210-byte substeps, the only type of 192 to 255): 1 column 154.7 -> 151.5 µs (89.9
//   -> 91.9%), 2 columns 156.3 -> 152.0 µs, 8 columns 163.4 -> 160.7 µs;
// - 16 for the types of several-substep units where their steps are single substeps (MXFP4 from 3
//   columns, Q2_K and Q3_K from 5): MXFP4 4 columns 126.4 -> 115.0 µs, 8 columns 138.0 -> 123.5 µs;
//   Q2_K 8 columns 110.6 -> 104.1 µs, Q3_K 126.4 -> 120.4 µs.
// Elsewhere either lost (MXFP4 2 columns 98.7 -> 119.5 µs with 8, Q4_K 2 columns 100.4 -> 104.5 µs
// with 16). The one-wave shapes keep their plans. Copies only: never changes a result.
template <class B, int NCols>
constexpr int64_t mmvq_sized_warps_per_sm() {
    if constexpr (LLMRT_MMVQ_WARPS_PER_SM != 12) return mmvq_warps_per_sm;  // a tuning experiment's count
    if (mmvq_substep_bytes<B>() >= 192 && mmvq_substep_bytes<B>() < 256) return 8;
    if (mmvq_unit_substeps<B>() > 1 && NCols > mmvq_group_max_cols<B>()) return 16;
    return 12;
}

// The launch with the narrowest kernel that holds its warps per CTA (mmvq_warps), in wide or
// narrow steps.
template <class B, int NCols>
void launch_mmvq(mmvq_params p, const weight_geometry& w, dim3 grid, int split, const device_limits& device_in,
                 cudaStream_t stream, const launch_options& options) {
    device_limits device = device_in;
    device.warps_per_sm = mmvq_sized_warps_per_sm<B, NCols>();
    constexpr int widest = mmvq_type_max_split<B>();
    constexpr int narrow = widest < 4 ? widest : 4;
    const int64_t ctas = int64_t(grid.x) * grid.y * grid.z;
    p.shares = split;
    p.interleaved = mmvq_interleaves<B>(p, ctas, split, device);
    const int warps = mmvq_warps<B, NCols>(p, ctas, split, device, options);
    if (warps < split)  // narrow steps, several shares per warp (warps <= split / 2 <= narrow)
        return launch_mmvq_kernel<B, NCols, narrow, false, false, true>(p, w, grid, warps, device, stream, options);
    auto with_steps = [&](auto wide, auto shared_tile) {
        constexpr bool Wide = decltype(wide)::value, SharedTile = decltype(shared_tile)::value;
        if (widest > narrow && warps > narrow)
            launch_mmvq_kernel<B, NCols, widest, Wide, SharedTile, false>(p, w, grid, warps, device, stream, options);
        else
            launch_mmvq_kernel<B, NCols, narrow, Wide, SharedTile, false>(p, w, grid, warps, device, stream, options);
    };
    if constexpr (mmvq_has_wide_steps<B, NCols>()) {
        if (mmvq_wide_steps<B, NCols>(p, ctas, split, device)) {
            if (!p.interleaved) return with_steps(std::true_type{}, std::false_type{});
            // By turns, wide steps only as a shared tile (one per warp).
            const int64_t steps = mmvq_steps_per_warp<mmvq_layout<B, NCols, true>, B>(p, split);
            if constexpr (mmvq_unit_substeps<B>() == 1)
                if (mmvq_one_step_warps(ctas, split, device, steps))
                    return with_steps(std::true_type{}, std::true_type{});
        }
    }
    with_steps(std::false_type{}, std::false_type{});
}

// Programs built with LLMRT_CUDA_MMVQ_PRECOMPILED link llmrt's mat-vec kernels compiled once (the
// CMake target llmrt_cuda_mmvq_kernels, tools/cuda_mmvq_kernels/, whose dispatch.cu defines this
// function over parts that build in parallel) and launch through it: their own translation units then compile none of mmvq's
// kernels, which are most of a CUDA program's build time (every weight type × 1..8 columns × the
// step variants). The launch, and so every result, is the same. llmrt's own tests, examples and
// benches build so; a program that includes the headers alone compiles the kernels itself.
void launch_mmvq_precompiled(qtype type, int ncols, mmvq_params p, const weight_geometry& w, dim3 grid, int split,
                             const device_limits& device, cudaStream_t stream, const launch_options& options);

// launch_mmvq<B, NCols>, or the precompiled launch of the same.
template <class B, int NCols>
void launch_mmvq_of(const mmvq_params& p, const weight_geometry& w, dim3 grid, int split, const device_limits& device,
                    cudaStream_t stream, const launch_options& options) {
#if defined(LLMRT_CUDA_MMVQ_PRECOMPILED)
    launch_mmvq_precompiled(B::id, NCols, p, w, grid, split, device, stream, options);
#else
    launch_mmvq<B, NCols>(p, w, grid, split, device, stream, options);
#endif
}

inline std::string mmvq_shapes(const qmatrix_view& w, const std::string& x, const output_columns& y) {
    return "W " + w.describe() + ", X " + x + ", Y " + y.describe();
}

}  // namespace detail

namespace detail {

// Every check of mmvq's shapes, before anything is launched.
inline void check_mmvq_shapes(const qmatrix_view& w, int64_t x_k, int64_t x_ncols, int64_t x_batch2, int64_t x_batch3,
                              const output_columns& y, const char* op, const std::string& shapes) {
    check(x_k == w.k, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": X's column length must equal W's k"; });
    check(x_ncols >= 1 && x_ncols <= mmvq_max_cols, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": X must have 1..8 columns"; });
    check(y.length == w.rows && y.ncols == x_ncols && y.batch2 == x_batch2 && y.batch3 == x_batch3,
          errc::shape_mismatch, [&] {
              return std::string(op) + ": " + shapes + ": Y must have W's rows as length and X's columns and batches";
          });
    check(w.batch2 >= 1 && w.batch3 >= 1 && x_batch2 % w.batch2 == 0 && x_batch3 % w.batch3 == 0,
          errc::shape_mismatch, [&] {
              return std::string(op) + ": " + shapes + ": W's batches must divide X's (W is broadcast across them)";
          });
    check(y.ncols == 1 || y.col_stride == 0 || y.col_stride >= y.length, errc::shape_mismatch, [&] {
        return std::string(op) + ": " + shapes + ": Y's column stride " + std::to_string(y.col_stride) +
               " is shorter than a column";
    });
    check(x_batch2 <= 65535 && x_batch3 <= 65535, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": at most 65535 batches per dimension"; });
    dispatch<weight_types>(w.type, op, [&](auto tag) { check_weights<typename decltype(tag)::type>(w, op, shapes); });
}

// The checks of a launch's pointers (after check_mmvq_shapes), where W has rows.
inline void check_mmvq_pointers(const qmatrix_view& w, const prepared_activations& x, const output_columns& y,
                                const char* op, const std::string& shapes) {
    check(w.k > 0 && w.data && x.data && y.data, errc::invalid_argument,
          [&] { return std::string(op) + ": " + shapes + ": null pointer or k = 0"; });
    check(reinterpret_cast<uintptr_t>(x.data) % 16 == 0, errc::invalid_argument,
          [&] { return std::string(op) + ": the prepared activations must be 16-byte aligned"; });
}

// The launch options mmvq reads, checked before anything is launched.
inline void check_mmvq_options(const launch_options& options, const char* op) {
    const int cap = options.mmvq_max_warps;
    check(cap == 0 || cap == 1 || cap == 2 || cap == 4 || cap == 8, errc::invalid_argument, [&] {
        return std::string(op) + ": launch_options::mmvq_max_warps is " + std::to_string(cap) +
               "; it must be 0 (mmvq chooses), 1, 2, 4 or 8";
    });
}

// Launchers that quantize X themselves cannot be told that X was complete before them.
inline void check_quantizes_own_activations(const launch_options& options, const char* op) {
    check(options.activations != activation_order::shared, errc::invalid_argument, [&] {
        return std::string(op) + ": activation_order::shared, but this launcher quantizes X itself just before "
                                 "(use quantize_activations and mmvq_prepared_many)";
    });
}

// The launch of checked shapes: W of type B, NCols columns.
template <class B, int NCols>
void mmvq_launch(const qmatrix_view& w, const prepared_activations& x, const output_columns& y, cudaStream_t stream,
                 const launch_options& options, const char* op, const std::string& shapes,
                 const mmvq_epilogue& epilogue = {}, const float* bias = nullptr) {
    if (w.rows == 0) return;
    check_mmvq_pointers(w, x, y, op, shapes);
    check_mmvq_epilogue(epilogue, w.rows, y, x.ncols, x.batch2 * x.batch3, op, shapes);
    const device_limits device = check_device_supports_mmvq();
    mmvq_params p{};
    p.w = static_cast<const uint8_t*>(w.data);
    p.w_row_stride = w.row_stride_or_dense();
    p.w_stride2 = w.stride2_or_dense();
    p.w_stride3 = w.stride3_or_dense();
    p.w_row_bytes = w.row_bytes();
    p.x = static_cast<const uint8_t*>(x.data);
    p.x_stride2 = activation_batch_bytes(x.k, x.ncols);
    p.x_stride3 = x.batch2 * p.x_stride2;
    p.y = y.data;
    p.y_col_stride = y.col_stride_or_dense();
    p.y_stride2 = y.stride2_or_dense();
    p.y_stride3 = y.stride3_or_dense();
    p.rows = int32_t(w.rows);
    p.nblocks = int32_t(w.k / B::block_size);
    p.nblocks32 = int32_t(w.k / 32);
    set_mmvq_steps<B>(p, w.k);
    p.ratio2 = int32_t(x.batch2 / w.batch2);
    p.ratio3 = int32_t(x.batch3 / w.batch3);
    p.activations = int32_t(options.activations);
    p.epilogue = epilogue;
    check(!bias || (w.batch2 == 1 && w.batch3 == 1), errc::invalid_argument,
          [&] { return std::string(op) + ": " + shapes + ": a bias needs one W"; });
    p.bias = bias;
    const int64_t tiles = (w.rows + mmvq_tile_rows - 1) / mmvq_tile_rows;
    const int split = mmvq_split<B>(tiles * x.batch2 * x.batch3, p.nunits);
    const dim3 grid(unsigned(tiles), unsigned(x.batch2), unsigned(x.batch3));
    const weight_geometry geometry{w.data,      p.w_row_bytes, w.rows,      w.batch2,
                                   w.batch3,    p.w_row_stride, p.w_stride2, p.w_stride3};
    launch_mmvq_of<B, NCols>(p, geometry, grid, split, device, stream, options);
}

}  // namespace detail

// Y = W·X for activations already quantized into mmvq's records (quantize_activations): for
// every batch (i2, i3) of X, Y[i2, i3] = W[i2 / (X.batch2 / W.batch2), i3 / (X.batch3 / W.batch3)]
// · X[i2, i3]. The typed form: W's type must be Block and X must have NCols columns.
template <class Block, int NCols>
void mmvq(const qmatrix_view& w, const prepared_activations& x, const output_columns& y, cudaStream_t stream,
          const launch_options& options = {}) {
    static_assert(list_contains_v<Block, weight_types>, "llmrt::cuda::mmvq<Block, NCols>: Block must be a weight type");
    static_assert(NCols >= 1 && NCols <= mmvq_max_cols, "llmrt::cuda::mmvq<Block, NCols>: NCols must be 1..8");
    const char* op = "cuda::mmvq";
    const std::string shapes = detail::mmvq_shapes(w, x.describe(), y);
    check(w.type == Block::id && x.ncols == NCols, errc::invalid_argument, [&] {
        return std::string(op) + "<" + Block::name + ", " + std::to_string(NCols) + ">: " + shapes +
               ": W's type or X's column count does not match the template arguments";
    });
    detail::check_mmvq_shapes(w, x.k, x.ncols, x.batch2, x.batch3, y, op, shapes);
    detail::check_mmvq_options(options, op);
    detail::mmvq_launch<Block, NCols>(w, x, y, stream, options, op, shapes);
}

// The same for a runtime type and column count (dispatched over weight_types and 1..8).
inline void mmvq_prepared(const qmatrix_view& w, const prepared_activations& x, const output_columns& y,
                          cudaStream_t stream, const launch_options& options = {}) {
    const char* op = "cuda::mmvq";
    const std::string shapes = detail::mmvq_shapes(w, x.describe(), y);
    detail::check_mmvq_shapes(w, x.k, x.ncols, x.batch2, x.batch3, y, op, shapes);
    detail::check_mmvq_options(options, op);
    dispatch<weight_types>(w.type, op, [&](auto tag) {
        using B = typename decltype(tag)::type;
        detail::with_ncols(x.ncols, [&](auto ncols) {
            detail::mmvq_launch<B, decltype(ncols)::value>(w, x, y, stream, options, op, shapes);
        });
    });
}

// One product of mmvq_prepared_many: a W, where its Y goes and what else its launch finishes
// (mmvq_epilogue.cuh).
struct mmvq_product {
    qmatrix_view w;
    output_columns y;
    mmvq_epilogue epilogue{};
    const float* bias = nullptr;  // null, or one float per row of W, added to Y (y = sum + bias)
};

// Y_i = W_i·X for every product, as back-to-back launches on `stream` that share one prepared X
// (Q, K and V of a token; gate and up; many W in turn). The first launch reads X once the previous
// kernel is complete and lets the next launch start only then; the others read X at once, with
// their weights, and wait for the previous kernel only before writing their Y
// (activation_order). Each Y has the bits that mmvq_prepared gives it. options.activations says how
// the first launch may read X: after_previous (the default: X may come from the previous kernel)
// or shared (the previous kernel is an mmvq on the same X launched first_of_shared or shared).
// Every product's shapes and pointers are checked before anything is launched; a message names
// the product by its index.
inline void mmvq_prepared_many(std::span<const mmvq_product> products, const prepared_activations& x,
                               cudaStream_t stream, const launch_options& options = {}) {
    const char* op = "cuda::mmvq_prepared_many";
    auto shapes_of = [&](std::size_t i) {
        return "product " + std::to_string(i) + ": " + detail::mmvq_shapes(products[i].w, x.describe(), products[i].y);
    };
    detail::check_mmvq_options(options, op);
    for (std::size_t i = 0; i < products.size(); ++i) {
        const mmvq_product& product = products[i];
        const std::string shapes = shapes_of(i);
        detail::check_mmvq_shapes(product.w, x.k, x.ncols, x.batch2, x.batch3, product.y, op, shapes);
        if (product.w.rows > 0) detail::check_mmvq_pointers(product.w, x, product.y, op, shapes);
    }
    // Products of no rows launch nothing: the order follows the launches.
    std::size_t launches = 0;
    for (const mmvq_product& product : products) launches += product.w.rows > 0 ? 1 : 0;
    std::size_t launched = 0;
    for (std::size_t i = 0; i < products.size(); ++i) {
        if (products[i].w.rows == 0) continue;
        launch_options o = options;
        if (launched > 0) o.activations = activation_order::shared;
        else if (launches > 1 && options.activations != activation_order::shared)
            o.activations = activation_order::first_of_shared;
        dispatch<weight_types>(products[i].w.type, op, [&](auto tag) {
            using B = typename decltype(tag)::type;
            detail::with_ncols(x.ncols, [&](auto ncols) {
                detail::mmvq_launch<B, decltype(ncols)::value>(products[i].w, x, products[i].y, stream, o, op,
                                                               shapes_of(i), products[i].epilogue, products[i].bias);
            });
        });
        ++launched;
    }
}

// The activations that quantize_activations(x, scratch, ...) leaves in scratch.
inline prepared_activations prepared_from(const input_columns& x, const void* scratch) {
    prepared_activations prepared;
    prepared.data = scratch;
    prepared.k = x.length;
    prepared.ncols = x.ncols;
    prepared.batch2 = x.batch2;
    prepared.batch3 = x.batch3;
    return prepared;
}

// Y = W·X: quantizes X into scratch (mmvq_scratch_bytes(X) bytes, 16-byte aligned), then
// mmvq_prepared: two launches on `stream`, after every check has passed.
inline void mmvq(const qmatrix_view& w, const input_columns& x, const output_columns& y, void* scratch,
                 std::size_t scratch_bytes, cudaStream_t stream, const launch_options& options = {}) {
    const char* op = "cuda::mmvq";
    const std::string shapes = detail::mmvq_shapes(w, x.describe(), y);
    detail::check_quantizes_own_activations(options, op);
    detail::check_mmvq_options(options, op);
    detail::check_mmvq_shapes(w, x.length, x.ncols, x.batch2, x.batch3, y, op, shapes);
    check(scratch_bytes >= mmvq_scratch_bytes(x), errc::invalid_argument, [&] {
        return std::string(op) + ": " + shapes + ": scratch of " + std::to_string(scratch_bytes) + " bytes, " +
               std::to_string(mmvq_scratch_bytes(x)) + " needed";
    });
    if (w.rows == 0) return;
    check(w.k > 0 && w.data && x.data && y.data && scratch, errc::invalid_argument,
          [&] { return std::string(op) + ": " + shapes + ": null pointer or k = 0"; });
    detail::check_device_supports_mmvq();
    quantize_activations(x, scratch, scratch_bytes, stream, options);
    mmvq_prepared(w, prepared_from(x, scratch), y, stream, options);
}

namespace detail {

// The shapes of an mmvq_id launch (mmvq_id_prepared says what they mean).
inline void check_mmvq_id_shapes(const qmatrix_view& experts, const prepared_activations& x, const expert_ids_view& ids,
                                 const output_columns& y, int32_t halves, const char* op, const std::string& shapes) {
    check(halves == 1 || halves == 2, errc::invalid_argument,
          [&] { return std::string(op) + ": " + shapes + ": halves must be 1 or 2, got " + std::to_string(halves); });
    check(halves == 1 || x.ncols == 1, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": two products side by side read one X column per token"; });
    check(experts.batch3 == 1 && x.batch3 == 1 && y.batch3 == 1, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": the third batch dimension must be 1"; });
    check(experts.batch2 % halves == 0, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": the experts do not split into two products"; });
    check(x.k == experts.k, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": X's column length must equal the experts' k"; });
    check(ids.n_tokens == x.batch2 && ids.n_tokens == y.batch2, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": ids, X and Y must have the same number of tokens"; });
    check(ids.n_used >= 1 && y.ncols == halves * ids.n_used && (x.ncols == 1 || x.ncols == ids.n_used),
          errc::shape_mismatch, [&] {
              return std::string(op) + ": " + shapes +
                     ": Y needs one column per used expert (and product), X one column or one per used expert";
          });
    check(y.length == experts.rows, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": Y's length must equal the experts' rows"; });
    check(y.ncols <= 65535 && ids.n_tokens <= 65535, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + shapes + ": at most 65535 tokens and used experts"; });
    check(y.ncols == 1 || y.col_stride == 0 || y.col_stride >= y.length, errc::shape_mismatch, [&] {
        return std::string(op) + ": " + shapes + ": Y's column stride is shorter than a column";
    });
}

}  // namespace detail

// The mixture-of-experts form on records quantized before (x: k = the experts' k, ncols 1 or
// n_used per token, batch2 = n_tokens; each activation column its own batch of one column, as
// mmvq_id below quantizes them), optionally over the experts of halves = 2 products side by side:
//   experts   halves · n_experts matrices (batch2), product h's expert e at batch h · n_experts + e
//   y         per token halves · n_used columns, column h · n_used + s = product h of slot s:
//               Y[token][h·n_used + s] = experts[h·n_experts + ids[token][s]] · X[token][x.ncols == 1 ? 0 : s]
//   bias      null, or a column of rows floats per batch of experts, added to its products
//             (y = sum + bias: graph::op::add_id's bits)
// An id outside [0, n_experts) gives a column of NaN (ids live on the device: they cannot be
// checked on the host without waiting for them).
//   epilogue  store, or weighted_sum (halves 1; mmvq_epilogue.cuh): e.slots = n_used, the
//             weights and out of every token, gridDim.x · n_tokens counters at zero (and
//             n_tokens more with the norm after it chained: e.length = rows, c0 = 0); or
//             swiglu_slots (halves 2, rows a multiple of 32): e.half = rows, e.slots = n_used,
//             n_tokens · n_used · rows / 32 counters at zero, h and/or records
inline void mmvq_id_prepared(const qmatrix_view& experts, const prepared_activations& x, const expert_ids_view& ids,
                             const output_columns& y, cudaStream_t stream, const launch_options& options = {},
                             int32_t halves = 1, const float* bias = nullptr, const mmvq_epilogue& epilogue = {}) {
    const char* op = "cuda::mmvq_id";
    const std::string shapes = detail::mmvq_shapes(experts, x.describe(), y) + ", ids " + ids.describe();
    detail::check_mmvq_options(options, op);
    detail::check_mmvq_id_shapes(experts, x, ids, y, halves, op, shapes);
    check(epilogue.kind == mmvq_finish::store ||
              (epilogue.kind == mmvq_finish::weighted_sum && halves == 1 && epilogue.slots == ids.n_used &&
               epilogue.weights && epilogue.out && epilogue.counters && epilogue.out_stride >= experts.rows &&
               (epilogue.length == 0 ||
                (epilogue.length == experts.rows && experts.rows % 32 == 0 && experts.rows <= mmvq_norm_tail_max_length &&
                 epilogue.addend && epilogue.sum && epilogue.c0 == 0 && epilogue.cols >= ids.n_tokens))) ||
              (epilogue.kind == mmvq_finish::swiglu_slots && halves == 2 && epilogue.slots == ids.n_used &&
               epilogue.half == experts.rows && experts.rows % 32 == 0 && epilogue.counters &&
               (epilogue.h || epilogue.records) && (!epilogue.h || epilogue.out_stride >= ids.n_used * experts.rows)),
          errc::invalid_argument, [&] {
              return std::string(op) + ": " + shapes +
                     ": the epilogue must store, add the weighted slots of one product (weights, out, counters), or "
                     "finish the swiglu of gate and up side by side (rows a multiple of 32, counters, h or records)";
          });
    dispatch<weight_types>(experts.type, op, [&](auto tag) {
        using B = typename decltype(tag)::type;
        detail::check_weights<B>(experts, op, shapes);
        if (experts.rows == 0 || ids.n_tokens == 0) return;
        check(experts.k > 0 && experts.data && ids.data && y.data && x.data, errc::invalid_argument,
              [&] { return std::string(op) + ": " + shapes + ": null pointer or k = 0"; });
        check(experts.batch2 <= 0x7fffffff, errc::shape_mismatch, "cuda::mmvq_id: too many experts");
        const detail::device_limits device = detail::check_device_supports_mmvq();
        const int64_t column_bytes = activation_batch_bytes(x.k, 1);
        detail::mmvq_params p{};
        p.w = static_cast<const uint8_t*>(experts.data);
        p.w_row_stride = experts.row_stride_or_dense();
        p.w_stride2 = experts.stride2_or_dense();
        p.w_stride3 = 0;
        p.w_row_bytes = experts.row_bytes();
        p.x = static_cast<const uint8_t*>(x.data);
        p.x_stride2 = x.ncols == 1 ? 0 : column_bytes;
        p.x_stride3 = x.ncols * column_bytes;
        p.y = y.data;
        p.y_col_stride = y.col_stride_or_dense();
        p.y_stride2 = y.col_stride_or_dense();
        p.y_stride3 = y.stride2_or_dense();
        p.ids = ids.data;
        p.ids_token_stride = ids.token_stride_or_dense();
        p.n_experts = int32_t(experts.batch2 / halves);
        p.id_slots = int32_t(ids.n_used);
        p.bias = bias;
        p.epilogue = epilogue;
        p.rows = int32_t(experts.rows);
        p.nblocks = int32_t(experts.k / B::block_size);
        p.nblocks32 = int32_t(experts.k / 32);
        detail::set_mmvq_steps<B>(p, experts.k);
        p.ratio2 = p.ratio3 = 1;
        p.activations = int32_t(options.activations);
        const int64_t tiles = (experts.rows + detail::mmvq_tile_rows - 1) / detail::mmvq_tile_rows;
        const int split = detail::mmvq_split<B>(tiles * y.ncols * ids.n_tokens, p.nunits);
        const dim3 grid(unsigned(tiles), unsigned(y.ncols), unsigned(ids.n_tokens));
        const detail::weight_geometry geometry{experts.data,    p.w_row_bytes, experts.rows, experts.batch2, 1,
                                               p.w_row_stride, p.w_stride2,  experts.batch2 * p.w_stride2};
        detail::launch_mmvq_of<B, 1>(p, geometry, grid, split, device, stream, options);
    });
}

// x's records as mmvq_id_prepared reads them (x: per token, batch2 = n_tokens, ncols columns;
// batch3 = 1): every activation column a batch of one column. Scratch: mmvq_id_scratch_bytes(x).
inline prepared_activations quantize_id_activations(const input_columns& x, void* scratch, std::size_t scratch_bytes,
                                                    cudaStream_t stream, const launch_options& options = {}) {
    const char* op = "cuda::quantize_id_activations";
    check(x.batch3 == 1, errc::shape_mismatch,
          [&] { return std::string(op) + ": " + x.describe() + ": the third batch dimension must be 1"; });
    check(scratch_bytes >= mmvq_id_scratch_bytes(x), errc::invalid_argument, [&] {
        return std::string(op) + ": " + x.describe() + ": scratch of " + std::to_string(scratch_bytes) + " bytes, " +
               std::to_string(mmvq_id_scratch_bytes(x)) + " needed";
    });
    input_columns columns = x;  // (token, column) -> batch
    columns.ncols = 1;
    columns.col_stride = 0;
    columns.batch2 = x.ncols;
    columns.stride2 = x.col_stride_or_dense();
    columns.batch3 = x.batch2;
    columns.stride3 = x.stride2_or_dense();
    if (x.length > 0 && x.ncols > 0 && x.batch2 > 0) quantize_activations(columns, scratch, scratch_bytes, stream, options);
    return prepared_activations{scratch, x.length, x.ncols, x.batch2, 1};
}

// The same on float activations (x.batch3 = 1), quantized into the scratch first (halves 1, no
// bias). Scratch: mmvq_id_scratch_bytes(x).
inline void mmvq_id(const qmatrix_view& experts, const input_columns& x, const expert_ids_view& ids,
                    const output_columns& y, void* scratch, std::size_t scratch_bytes, cudaStream_t stream,
                    const launch_options& options = {}) {
    const char* op = "cuda::mmvq_id";
    detail::check_quantizes_own_activations(options, op);
    detail::check_mmvq_id_shapes(experts, prepared_activations{scratch, x.length, x.ncols, x.batch2, x.batch3}, ids, y, 1,
                                 op, detail::mmvq_shapes(experts, x.describe(), y) + ", ids " + ids.describe());
    if (experts.rows == 0 || ids.n_tokens == 0) return;
    mmvq_id_prepared(experts, quantize_id_activations(x, scratch, scratch_bytes, stream, options), ids, y, stream, options);
}

}  // namespace llmrt::cuda
