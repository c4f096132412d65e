#version 460
// mmvq: Y[:, c] = W · X[:, c] for c < NCOLS, W quantized (the block type of llmrt_block.glsl,
// which the build puts first on the include path), X as Q8_1 activations (q8_1_activations.glsl).
// With LLMRT_MMVQ_ID defined, the mixture-of-experts variant: each activation column multiplies
// the W slice its int32 expert id names.
//
// Work decomposition (constants tiers as ggml-vulkan: block type by include, shape by
// specialization constants, sizes by push constants):
//   * a work-group computes ROWS rows for all NCOLS columns of one batch (mmvq_id: one column);
//   * each subgroup takes chunks of CHUNK_BLOCKS consecutive blocks of the rows, chunk sg,
//     sg + SUBGROUPS, ...: its lanes copy the chunk's bytes into the subgroup's own region of
//     shared memory with aligned 16-byte loads (blocks of 34, 110, 210 or 17 bytes are not
//     aligned, so reading them in place would split every load), fetching the next chunk into
//     registers while they compute on this one;
//   * each lane then takes slices (SLICE_VALUES weights of one block) of the staged chunk,
//     unpacks them once per row and dots them with every column;
//   * lanes reduce with subgroupAdd, subgroups through shared memory in subgroup order.
// A row's sum therefore depends only on WG_SIZE, SUBGROUP_SIZE and SLICES_PER_LANE, never on
// ROWS or NCOLS: column c is bit-identical whatever the number of columns beside it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "llmrt/buffers.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/q8_1_activations.glsl"
#include "llmrt_block.glsl"

layout(constant_id = 0) const uint WG_SIZE = 128;         // a multiple of SUBGROUP_SIZE
layout(constant_id = 1) const uint SUBGROUP_SIZE = 32;    // the pipeline's required subgroup size
layout(constant_id = 2) const uint ROWS = 1;              // rows per work-group
layout(constant_id = 3) const uint NCOLS = 1;             // activation columns (mmvq_id: 1)
layout(constant_id = 4) const uint SLICES_PER_LANE = 1;   // slices per lane and chunk
layout(local_size_x_id = 0) in;

layout(push_constant) uniform llmrt_mmvq_params {
    uint64_t w;               // W, weight batch (mmvq_id: expert) 0, row 0; 16-byte aligned
    uint64_t w_batch_stride;  // bytes between weight batches (experts)
    uint64_t act_qs;          // activation regions, column 0 (q8_1_activations.glsl)
    uint64_t act_ds;
    uint64_t act_sums;
    uint64_t y;               // Y, batch 0, column 0, row 0 (f32)
    uint64_t ids;             // mmvq_id: int32 expert ids
    uint rows;
    uint k;                   // values per row, a multiple of BLOCK_VALUES
    uint w_row_stride;        // bytes between rows of W
    uint row_groups;          // ceil(rows / ROWS)
    uint y_col_stride;        // floats between columns of Y
    uint y_batch_stride;      // floats between batches of Y (mmvq_id: between tokens)
    uint batch_ratio;         // mmvq: activation batches per weight batch; mmvq_id: id slots per token
    uint n_experts;           // mmvq_id: W slices; an id outside [0, n_experts) gives a NaN column
    uint x_per_token;         // mmvq_id: activation columns per token (1, or one per slot)
    uint ids_stride;          // mmvq_id: int32 between the ids of consecutive tokens
} p;

const uint SUBGROUPS = WG_SIZE / SUBGROUP_SIZE;
const uint SLICES_PER_BLOCK = BLOCK_VALUES / SLICE_VALUES;
const uint LANE_SLICES = SUBGROUP_SIZE * SLICES_PER_LANE;
const uint CHUNK_BLOCKS = LANE_SLICES >= SLICES_PER_BLOCK ? LANE_SLICES / SLICES_PER_BLOCK : 1u;
// The chunk's bytes start anywhere in a 16-byte unit: one more unit covers the misalignment.
const uint WINDOW_UNITS = (CHUNK_BLOCKS * BLOCK_BYTES + 15u) / 16u + 1u;
const uint LOADS_PER_LANE = (WINDOW_UNITS + SUBGROUP_SIZE - 1u) / SUBGROUP_SIZE;
// One spare unit: a read of w words at the window's end looks one word past it.
const uint REGION_WORDS = 4u * (WINDOW_UNITS + 1u);
const uint PARTIALS = NCOLS * ROWS;

shared uint tile[SUBGROUPS * ROWS * REGION_WORDS];
shared float partial_sums[SUBGROUPS * PARTIALS];

uint llmrt_w32(uint byte_offset) {
    const uint i = byte_offset >> 2u, shift = 8u * (byte_offset & 3u);
    const uint lo = tile[i], hi = tile[i + 1u];
    return shift == 0u ? lo : (lo >> shift) | (hi << (32u - shift));
}

uvec4 llmrt_w128(uint byte_offset) {
    const uint i = byte_offset >> 2u, shift = 8u * (byte_offset & 3u);
    const uvec4 lo = uvec4(tile[i], tile[i + 1u], tile[i + 2u], tile[i + 3u]);
    const uvec4 hi = uvec4(lo.yzw, tile[i + 4u]);
    return shift == 0u ? lo : (lo >> shift) | (hi << (32u - shift));
}

void main() {
    const uint group = gl_WorkGroupID.z * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (group >= p.row_groups) return;  // the whole work-group leaves together
    const uint row0 = group * ROWS;
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint nblocks = p.k / BLOCK_VALUES;
    uint nchunks = (nblocks + CHUNK_BLOCKS - 1u) / CHUNK_BLOCKS;

#ifdef LLMRT_MMVQ_ID
    const uint token = gl_WorkGroupID.y / p.batch_ratio, slot = gl_WorkGroupID.y % p.batch_ratio;
    const int expert = llmrt_ro_i32(p.ids).v[token * p.ids_stride + slot];
    const bool valid = expert >= 0 && uint(expert) < p.n_experts;
    if (!valid) nchunks = 0u;  // reads nothing; the column is written as NaN
    const uint64_t w_base = p.w + uint64_t(valid ? uint(expert) : 0u) * p.w_batch_stride;
    const uint x_column = token * p.x_per_token + (p.x_per_token > 1u ? slot : 0u);
    const uint64_t y_base = p.y + 4ul * (uint64_t(token) * p.y_batch_stride + uint64_t(slot) * p.y_col_stride);
#else
    const uint batch = gl_WorkGroupID.y;
    const uint64_t w_base = p.w + uint64_t(batch / p.batch_ratio) * p.w_batch_stride;
    const uint x_column = batch * NCOLS;
    const uint64_t y_base = p.y + 4ul * uint64_t(batch) * p.y_batch_stride;
    const bool valid = true;
#endif

    uint64_t row_address[ROWS];
    for (uint r = 0u; r < ROWS; ++r) row_address[r] = w_base + uint64_t(min(row0 + r, p.rows - 1u)) * p.w_row_stride;
    llmrt_q8_1_column columns[NCOLS];
    for (uint c = 0u; c < NCOLS; ++c)
        columns[c] = llmrt_q8_1_column_at(p.act_qs, p.act_ds, p.act_sums, p.k, x_column + c);

    precise float acc[PARTIALS];
    for (uint i = 0u; i < PARTIALS; ++i) acc[i] = 0.0;

    // The chunk in flight: its 16-byte units per row, where its first block starts in the first
    // unit, and how many units it spans.
    uvec4 fetched[ROWS * LOADS_PER_LANE];
    uint fetched_offset[ROWS], fetched_units[ROWS];
    const uint region0 = sg * ROWS * REGION_WORDS;

#define LLMRT_FETCH(chunk_index)                                                                   \
    for (uint r = 0u; r < ROWS; ++r) {                                                             \
        const uint first_block = (chunk_index) * CHUNK_BLOCKS;                                     \
        const uint blocks = min(CHUNK_BLOCKS, nblocks - first_block);                              \
        const uint64_t start = row_address[r] + uint64_t(first_block) * BLOCK_BYTES;               \
        fetched_offset[r] = uint(start & 15ul);                                                    \
        fetched_units[r] = (fetched_offset[r] + blocks * BLOCK_BYTES + 15u) >> 4u;                 \
        llmrt_ro_u128 units = llmrt_ro_u128(start & ~15ul);                                        \
        for (uint j = 0u; j < LOADS_PER_LANE; ++j) {                                               \
            const uint unit = lane + j * SUBGROUP_SIZE;                                            \
            if (unit < fetched_units[r]) fetched[r * LOADS_PER_LANE + j] = units.v[unit];          \
        }                                                                                          \
    }

    if (sg < nchunks) { LLMRT_FETCH(sg) }
    for (uint chunk = sg; chunk < nchunks; chunk += SUBGROUPS) {
        uint offset[ROWS];
        subgroupBarrier();  // the lanes are done reading the previous chunk
        for (uint r = 0u; r < ROWS; ++r) {
            for (uint j = 0u; j < LOADS_PER_LANE; ++j) {
                const uint unit = lane + j * SUBGROUP_SIZE;
                if (unit < fetched_units[r]) {
                    const uint at = region0 + r * REGION_WORDS + 4u * unit;
                    const uvec4 v = fetched[r * LOADS_PER_LANE + j];
                    tile[at] = v.x;
                    tile[at + 1u] = v.y;
                    tile[at + 2u] = v.z;
                    tile[at + 3u] = v.w;
                }
            }
            offset[r] = 4u * (region0 + r * REGION_WORDS) + fetched_offset[r];
        }
        subgroupBarrier();  // the chunk is in shared memory
        if (chunk + SUBGROUPS < nchunks) { LLMRT_FETCH(chunk + SUBGROUPS) }

        const uint first_block = chunk * CHUNK_BLOCKS;
        const uint slices = min(CHUNK_BLOCKS, nblocks - first_block) * SLICES_PER_BLOCK;
        for (uint s = lane; s < slices; s += SUBGROUP_SIZE) {
            const uint block = s / SLICES_PER_BLOCK, slice = s % SLICES_PER_BLOCK;
            weight_slice w[ROWS];
            for (uint r = 0u; r < ROWS; ++r) w[r] = load_weight_slice(offset[r] + block * BLOCK_BYTES, slice);
            const uint block_pos = (first_block + block) * BLOCK_VALUES;
            for (uint c = 0u; c < NCOLS; ++c) {
                const activation_slice a = load_activation_slice(columns[c], block_pos, slice);
                for (uint r = 0u; r < ROWS; ++r) acc[c * ROWS + r] += slice_dot(w[r], a);
            }
        }
    }
#undef LLMRT_FETCH

    for (uint i = 0u; i < PARTIALS; ++i) {
        const float sum = subgroupAdd(acc[i]);
        if (lane == 0u) partial_sums[sg * PARTIALS + i] = sum;
    }
    barrier();
    for (uint i = gl_LocalInvocationIndex; i < PARTIALS; i += WG_SIZE) {
        precise float sum = partial_sums[i];
        for (uint s = 1u; s < SUBGROUPS; ++s) sum += partial_sums[s * PARTIALS + i];
        const uint c = i / ROWS, row = row0 + i % ROWS;
        if (row < p.rows)
            llmrt_wo_f32(y_base + 4ul * (uint64_t(c) * p.y_col_stride + row)).v[0] = valid ? sum : uintBitsToFloat(0x7fc00000u);
    }
}
