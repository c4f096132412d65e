#version 460
// mmvq: Y[:, c] = W · X[:, c] for c < NCOLS, W quantized (the block type of llmrt_block.glsl,
// which the build puts first on the include path), X as Q8_1 activations (q8_1_activations.glsl).
// With LLMRT_MMVQ_ID defined, the mixture-of-experts variant: each activation column multiplies
// the W slice its int32 expert id names.
//
// Work decomposition (constants in ggml-vulkan's tiers: block type by include, shape by
// specialization constants, sizes by push constants):
//   * the subgroups of a work-group form teams of K_SPLIT; a team computes ROWS rows for all
//     NCOLS columns of one batch (mmvq_id: one column), its members splitting k;
//   * a member takes chunks of CHUNK_BLOCKS consecutive blocks of its rows, chunk m, m + K_SPLIT,
//     ...: its lanes copy the chunk's bytes into the subgroup's own region of shared memory with
//     aligned 16-byte loads (blocks of 34, 110, 210 or 17 bytes are not aligned, so reading them
//     in place would split every load), fetching the next chunk into registers while they compute
//     on this one (STAGED = 0: lanes read 4-byte aligned blocks in place instead);
//   * each lane then takes slices (SLICE_VALUES weights of one block) of the chunk, unpacks them
//     once per row and dots them with every column; unstaged, a lane walks the same slices in the
//     same order but loads UNROLL of them (each for all its rows) before it dots any, so that many
//     loads are in flight where a team walks a long row alone;
//   * lanes reduce with subgroupAdd, team members through shared memory in member order.
// A row's sum therefore depends on SUBGROUP_SIZE, SLICES_PER_LANE and K_SPLIT alone, never on
// ROWS or NCOLS: column c is bit-identical whatever the number of columns beside it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require

#include "llmrt/buffers.glsl"
#include "llmrt/int_dot.glsl"
#include "llmrt/q8_1_activations.glsl"

layout(constant_id = 0) const uint WG_SIZE = 128;         // a multiple of SUBGROUP_SIZE · K_SPLIT
layout(constant_id = 1) const uint SUBGROUP_SIZE = 32;    // the pipeline's required subgroup size
layout(constant_id = 2) const uint ROWS = 1;              // rows per team
layout(constant_id = 3) const uint NCOLS = 1;             // activation columns (mmvq_id: 1)
layout(constant_id = 4) const uint SLICES_PER_LANE = 1;   // slices per lane and chunk
// 0: lanes read their slices straight from W (only for 4-byte aligned blocks and strides, which
// the host checks); the chunks, and so every sum, stay exactly as when staged.
layout(constant_id = 5) const uint STAGED = 1;
layout(constant_id = 6) const uint K_SPLIT = 4;           // subgroups per team, splitting k
layout(constant_id = 7) const uint UNROLL = 1;            // unstaged: slices a lane loads before it dots them
// A block include may pick its integer arithmetic by the number of columns (a decode done once per
// row against a cheaper one done per column); the sums, and so the results, do not change.
#define LLMRT_MMVQ_COLUMNS NCOLS
#include "llmrt_block.glsl"
// Facts of the block include for the host, which reads these defaults from the SPIR-V (never set).
layout(constant_id = 100) const uint REPORTED_SLICE_VALUES = SLICE_VALUES;
layout(constant_id = 101) const uint REPORTED_BLOCK_BYTES = BLOCK_BYTES;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform llmrt_mmvq_params {
    uint64_t w;               // W, weight batch (mmvq_id: expert) 0, row 0; 16-byte aligned
    uint64_t w_batch_stride;  // bytes between weight batches (experts)
    uint64_t act_qs;          // activation regions, column 0 (q8_1_activations.glsl)
    uint64_t act_records;
    uint64_t y;               // Y, batch 0, column 0, row 0 (f32)
    uint64_t ids;             // mmvq_id: int32 expert ids
    uint rows;
    uint k;                   // values per row, a multiple of BLOCK_VALUES
    uint w_row_stride;        // bytes between rows of W
    uint row_groups;          // ceil(rows / (ROWS · teams per work-group))
    uint y_col_stride;        // floats between columns of Y
    uint y_batch_stride;      // floats between batches of Y (mmvq_id: between tokens)
    uint batch_ratio;         // mmvq: activation batches per weight batch; mmvq_id: id slots per token
    uint n_experts;           // mmvq_id: W slices; an id outside [0, n_experts) gives a NaN column
    uint x_per_token;         // mmvq_id: activation columns per token (1, or one per slot)
    uint ids_stride;          // mmvq_id: int32 between the ids of consecutive tokens
} p;

const uint SUBGROUPS = WG_SIZE / SUBGROUP_SIZE;
const uint TEAMS = SUBGROUPS / K_SPLIT;
const uint SLICES_PER_BLOCK = BLOCK_VALUES / SLICE_VALUES;
const uint LANE_SLICES = SUBGROUP_SIZE * SLICES_PER_LANE;
const uint CHUNK_BLOCKS = LANE_SLICES >= SLICES_PER_BLOCK ? LANE_SLICES / SLICES_PER_BLOCK : 1u;
const uint STEPS_PER_CHUNK = (CHUNK_BLOCKS * SLICES_PER_BLOCK + SUBGROUP_SIZE - 1u) / SUBGROUP_SIZE;  // slices per lane
// The chunk's bytes start anywhere in a 16-byte unit: one more unit covers the misalignment.
const uint WINDOW_UNITS = (CHUNK_BLOCKS * BLOCK_BYTES + 15u) / 16u + 1u;
const uint LOADS_PER_LANE = (WINDOW_UNITS + SUBGROUP_SIZE - 1u) / SUBGROUP_SIZE;
// One spare unit: a read of w words at the window's end looks one word past it.
const uint REGION_WORDS = 4u * (WINDOW_UNITS + 1u);
const uint PARTIALS = NCOLS * ROWS;

// Kept as 16-byte units: lanes store whole units without bank conflicts (a word array stored
// unit by unit puts four lanes in each bank; staging words instead, lane by lane, measured
// slower on the H100 for MXFP4 and no faster elsewhere).
shared uvec4 tile[STAGED != 0u ? SUBGROUPS * ROWS * REGION_WORDS / 4u : 1u];

uint tile_word(uint i) { return tile[i >> 2u][i & 3u]; }

// A subgroup's lanes meet, and its shared-memory writes become visible to them; unlike
// subgroupBarrier() it orders no global memory, so the next chunk's loads stay in flight.
void subgroup_shared_barrier() {
    controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease);
}

shared float partial_sums[K_SPLIT > 1u ? SUBGROUPS * PARTIALS : 1u];

// Unstaged: the address of the block being read (4-byte aligned); offsets are relative to it.
uint64_t direct_block;

// Word i of the bytes being read: the tile (staged) or the block in place.
uint llmrt_word(uint i) {
    if (STAGED == 0u) return llmrt_ro_u32(direct_block).v[i];
    return tile_word(i);
}

uint llmrt_w32(uint byte_offset) {
    if (STAGED == 0u) return llmrt_ro_u32(direct_block + byte_offset).v[0];
    const uint i = byte_offset >> 2u;
    return llmrt_funnel(tile_word(i), tile_word(i + 1u), 8u * (byte_offset & 3u));
}

// Five aligned words and one funnel shift per word, whatever the alignment: no branch, and
// the same words (so the same loads) for every read that starts in the same word.
uvec4 llmrt_w128_bits(uint byte_offset, uint bit_shift) {
    const uint i = byte_offset >> 2u, shift = 8u * (byte_offset & 3u) + bit_shift;
    const uint w0 = llmrt_word(i), w1 = llmrt_word(i + 1u), w2 = llmrt_word(i + 2u), w3 = llmrt_word(i + 3u),
               w4 = llmrt_word(i + 4u);
    return uvec4(llmrt_funnel(w0, w1, shift), llmrt_funnel(w1, w2, shift), llmrt_funnel(w2, w3, shift),
                 llmrt_funnel(w3, w4, shift));
}

uvec4 llmrt_w128(uint byte_offset) {
    if (STAGED == 0u) {
        const uint64_t at = direct_block + byte_offset;
        if (BLOCK_BYTES % 16u == 0u) return llmrt_ro_u128(at).v[0];  // blocks and strides 16-byte aligned
        llmrt_ro_u32 words = llmrt_ro_u32(at);
        return uvec4(words.v[0], words.v[1], words.v[2], words.v[3]);
    }
    if (BLOCK_BYTES % 16u == 0u && (byte_offset & 15u) == 0u) return tile[byte_offset >> 4u];  // one 16-byte load
    return llmrt_w128_bits(byte_offset, 0u);
}

void main() {
    const uint group = gl_WorkGroupID.z * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (group >= p.row_groups) return;  // the whole work-group leaves together
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint team = sg / K_SPLIT, member = sg % K_SPLIT;
    const uint row0 = (group * TEAMS + team) * ROWS;
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

    // Rows past the end (the last team) read the last row and write nothing.
    uint64_t row_address[ROWS];
    for (uint r = 0u; r < ROWS; ++r) row_address[r] = w_base + uint64_t(min(row0 + r, p.rows - 1u)) * p.w_row_stride;

    precise float acc[PARTIALS];
    for (uint i = 0u; i < PARTIALS; ++i) acc[i] = 0.0;

    // The chunk in flight: its 16-byte units per row, where its first block starts in the first
    // unit, and how many units it spans.
    uvec4 fetched[ROWS * LOADS_PER_LANE];
    uint fetched_offset[ROWS], fetched_units[ROWS];
    for (uint r = 0u; r < ROWS; ++r) fetched_offset[r] = fetched_units[r] = 0u;
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

    if (STAGED == 0u) {
        // The lane's j-th slice: chunk member + K_SPLIT·(j / STEPS_PER_CHUNK), slice
        // lane + SUBGROUP_SIZE·(j % STEPS_PER_CHUNK) of it, the order of the staged loop below.
        const uint member_chunks = member < nchunks ? (nchunks - member + K_SPLIT - 1u) / K_SPLIT : 0u;
        const uint steps = member_chunks * STEPS_PER_CHUNK;
        for (uint j0 = 0u; j0 < steps; j0 += UNROLL) {
            weight_slice w[UNROLL * ROWS];
            uint block_pos[UNROLL], slice_of[UNROLL];
            bool live[UNROLL];
            // Every load unconditional (a slice past the row's end reads its last block and is not
            // added), so the compiler can issue them all before the first dot.
            [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
                const uint j = j0 + u;
                const uint first_block = (member + K_SPLIT * (j / STEPS_PER_CHUNK)) * CHUNK_BLOCKS;
                const uint s = lane + SUBGROUP_SIZE * (j % STEPS_PER_CHUNK);
                const uint block = first_block + s / SLICES_PER_BLOCK;
                live[u] = j < steps && s < CHUNK_BLOCKS * SLICES_PER_BLOCK && block < nblocks;
                const uint read_block = min(block, nblocks - 1u);
                slice_of[u] = s % SLICES_PER_BLOCK;
                block_pos[u] = read_block * BLOCK_VALUES;
                [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
                    direct_block = row_address[r] + uint64_t(read_block) * BLOCK_BYTES;
                    w[u * ROWS + r] = load_weight_slice(0u, slice_of[u]);
                }
            }
            [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
                [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
                    const llmrt_q8_1_column column = llmrt_q8_1_column_at(p.act_qs, p.act_records, p.k, x_column + c);
                    const activation_slice a = load_activation_slice(column, block_pos[u], slice_of[u]);
                    [[unroll]] for (uint r = 0u; r < ROWS; ++r)
                        if (live[u]) acc[c * ROWS + r] += slice_dot(w[u * ROWS + r], a);
                }
            }
        }
        nchunks = 0u;  // the staged loop below has nothing left to do
    }

    if (STAGED != 0u && member < nchunks) { LLMRT_FETCH(member) }
    for (uint chunk = member; chunk < nchunks; chunk += K_SPLIT) {
        uint offset[ROWS];
        for (uint r = 0u; r < ROWS; ++r) offset[r] = 4u * (region0 + r * REGION_WORDS) + fetched_offset[r];
        if (STAGED != 0u) {
            subgroup_shared_barrier();  // the lanes are done reading the previous chunk
            for (uint r = 0u; r < ROWS; ++r)
                for (uint j = 0u; j < LOADS_PER_LANE; ++j) {
                    const uint unit = lane + j * SUBGROUP_SIZE;
                    if (unit < fetched_units[r]) tile[(region0 + r * REGION_WORDS) / 4u + unit] = fetched[r * LOADS_PER_LANE + j];
                }
            subgroup_shared_barrier();  // the chunk is in shared memory
            if (chunk + K_SPLIT < nchunks) { LLMRT_FETCH(chunk + K_SPLIT) }
        }

        const uint first_block = chunk * CHUNK_BLOCKS;
        const uint slices = min(CHUNK_BLOCKS, nblocks - first_block) * SLICES_PER_BLOCK;
        for (uint s = lane; s < slices; s += SUBGROUP_SIZE) {
            const uint block = s / SLICES_PER_BLOCK, slice = s % SLICES_PER_BLOCK;
            weight_slice w[ROWS];
            for (uint r = 0u; r < ROWS; ++r) w[r] = load_weight_slice(offset[r] + block * BLOCK_BYTES, slice);
            const uint block_pos = (first_block + block) * BLOCK_VALUES;
            for (uint c = 0u; c < NCOLS; ++c) {
                const llmrt_q8_1_column column = llmrt_q8_1_column_at(p.act_qs, p.act_records, p.k, x_column + c);
                const activation_slice a = load_activation_slice(column, block_pos, slice);
                for (uint r = 0u; r < ROWS; ++r) acc[c * ROWS + r] += slice_dot(w[r], a);
            }
        }
    }
#undef LLMRT_FETCH

    if (K_SPLIT == 1u) {
        for (uint i = 0u; i < PARTIALS; ++i) {
            const float sum = subgroupAdd(acc[i]);
            const uint c = i / ROWS, row = row0 + i % ROWS;
            if (lane == 0u && row < p.rows)
                llmrt_wo_f32(y_base + 4ul * (uint64_t(c) * p.y_col_stride + row)).v[0] = valid ? sum : uintBitsToFloat(0x7fc00000u);
        }
        return;
    }
    for (uint i = 0u; i < PARTIALS; ++i) {
        const float sum = subgroupAdd(acc[i]);
        if (lane == 0u) partial_sums[sg * PARTIALS + i] = sum;
    }
    barrier();
    // The team's first member adds the others' sums in member order.
    if (member != 0u) return;
    for (uint i = lane; i < PARTIALS; i += SUBGROUP_SIZE) {
        precise float sum = partial_sums[sg * PARTIALS + i];
        for (uint m = 1u; m < K_SPLIT; ++m) sum += partial_sums[(sg + m) * PARTIALS + i];
        const uint c = i / ROWS, row = row0 + i % ROWS;
        if (row < p.rows)
            llmrt_wo_f32(y_base + 4ul * (uint64_t(c) * p.y_col_stride + row)).v[0] = valid ? sum : uintBitsToFloat(0x7fc00000u);
    }
}
