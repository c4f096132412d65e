// How mmvq launches (include/llmrt/cuda/mmvq.cuh is the entry point): the policy that picks, from
// W's type and shape and the device, the k-split, the ring depth, wide steps, the tensor map or
// row copies, and the kernel instance (mmvq/kernel.cuh); or the precompiled launch of the same.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda.h>  // CUtensorMap (a header-only use: the encoder is reached through the runtime)
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/check.cuh"
#include "llmrt/cuda/mmvq/kernel.cuh"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::cuda {

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

}  // namespace llmrt::cuda
