// llmrt's GPU layout of Q8_1 activations, written by quantize_q8_1.comp and read by mmvq.
//
// For `columns` columns of k values (k a multiple of 32), two regions, each 16-byte aligned:
//
// | region  | per column      | column c at   | meaning                                            |
// |---------|-----------------|---------------|----------------------------------------------------|
// | qs      | k int8          | c·k bytes     | the quants, in order (16-byte loads)               |
// | records | k/32 × 8 bytes  | c·k/4 bytes   | Q8_1 block b: fp16 d, fp16 s = d·Σq, then the exact |
// |         |                 |               | int16 Σq of values 0..15 and of 16..31            |
//
// Block b of column c is exactly llmrt::q8_1 {d, s, qs[32]} (d = amax/127, q = round(x/d) with
// ties away from zero, s = fp16(d·Σq)) spread over the regions, plus the per-16 sums that let the
// k-quant dots fold in their minimum and offset terms exactly. One 8-byte load brings a block's
// scale and sums.
#ifndef LLMRT_Q8_1_ACTIVATIONS_GLSL
#define LLMRT_Q8_1_ACTIVATIONS_GLSL

#include "llmrt/buffers.glsl"

struct llmrt_q8_1_column {
    uint64_t qs;
    uint64_t records;
};

llmrt_q8_1_column llmrt_q8_1_column_at(uint64_t qs_region, uint64_t records_region, uint k, uint column) {
    llmrt_q8_1_column c;
    c.qs = qs_region + uint64_t(column * k);
    c.records = records_region + uint64_t(column * (k / 4u));
    return c;
}

// The 16 quants at value pos (a multiple of 16).
uvec4 llmrt_q8_1_quants16(llmrt_q8_1_column c, uint pos) {
    return llmrt_ro_u128(c.qs).v[pos >> 4u];
}

// The record of the Q8_1 block holding value pos: .x = fp16 d | fp16 s << 16, .y = the two sums.
uvec2 llmrt_q8_1_record(llmrt_q8_1_column c, uint pos) {
    return llmrt_ro_u64(c.records).v[pos >> 5u];
}

float llmrt_q8_1_record_d(uvec2 record) { return unpackHalf2x16(record.x).x; }

// Σq of the 16 values at pos (a multiple of 16) of the record's block.
int llmrt_q8_1_record_sum16(uvec2 record, uint pos) { return bitfieldExtract(int(record.y), int(pos & 16u), 16); }

#endif
