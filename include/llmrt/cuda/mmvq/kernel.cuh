// mmvq's kernel (include/llmrt/cuda/mmvq.cuh is the entry point; mmvq/launch.cuh chooses its
// template arguments and launch shape): mechanism only.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda.h>  // CUtensorMap (a header-only use: the encoder is reached through the runtime)
#include <cuda_runtime.h>

#include <cstdint>

#include "llmrt/cuda/mmvq/layout.cuh"
#include "llmrt/cuda/ptx.cuh"

namespace llmrt::cuda {

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

}  // namespace llmrt::cuda
