// llmrt's GPU layout of Q8_1 activations, written by quantize_q8_1.comp and read by mmvq.
//
// For `columns` columns of k values (k a multiple of 32), three regions, each 16-byte aligned:
//
// | region | per column               | column c at          | meaning                                 |
// |--------|--------------------------|----------------------|-----------------------------------------|
// | qs     | k int8                   | c·k bytes            | the quants, in order (16-byte loads)    |
// | ds     | k/32 words               | c·k/8 bytes          | Q8_1 block b: fp16 d (low), fp16 s (high)|
// | sums   | k/32 words               | c·k/8 bytes          | Σq of values 0..15 (low int16) and      |
// |        |                          |                      | 16..31 (high int16) of block b          |
//
// Block b of column c is exactly llmrt::q8_1 {d, s, qs[32]} (d = amax/127, q = round(x/d) with
// ties away from zero, s = fp16(d·Σq)) spread over the regions; the exact per-16 sums let the
// k-quant dots fold in their minimum terms without rounding.
#ifndef LLMRT_Q8_1_ACTIVATIONS_GLSL
#define LLMRT_Q8_1_ACTIVATIONS_GLSL

#include "llmrt/buffers.glsl"

struct llmrt_q8_1_column {
    uint64_t qs;
    uint64_t ds;
    uint64_t sums;
};

llmrt_q8_1_column llmrt_q8_1_column_at(uint64_t qs_region, uint64_t ds_region, uint64_t sums_region, uint k,
                                       uint column) {
    llmrt_q8_1_column c;
    c.qs = qs_region + uint64_t(column) * uint64_t(k);
    c.ds = ds_region + uint64_t(column) * uint64_t(k / 8u);
    c.sums = sums_region + uint64_t(column) * uint64_t(k / 8u);
    return c;
}

// The 16 quants at value pos (a multiple of 16).
uvec4 llmrt_q8_1_quants16(llmrt_q8_1_column c, uint pos) { return llmrt_ro_u128(c.qs).v[pos >> 4u]; }

// d of the Q8_1 block holding value pos.
float llmrt_q8_1_d(llmrt_q8_1_column c, uint pos) { return unpackHalf2x16(llmrt_ro_u32(c.ds).v[pos >> 5u]).x; }

// Σq of the 16 values at pos (a multiple of 16).
int llmrt_q8_1_sum16(llmrt_q8_1_column c, uint pos) {
    return bitfieldExtract(int(llmrt_ro_u32(c.sums).v[pos >> 5u]), int(pos & 16u), 16);
}

#endif
