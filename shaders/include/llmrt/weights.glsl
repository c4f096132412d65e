// How a block include reads weight bytes: the including shader defines these two functions over
// wherever it keeps the bytes (mmvq.comp: a tile staged in shared memory). Offsets are in bytes
// and may have any alignment, since Q8_0, Q3_K, Q6_K and MXFP4 blocks are not 4-byte aligned.
#ifndef LLMRT_WEIGHTS_GLSL
#define LLMRT_WEIGHTS_GLSL

// The 4 bytes at byte_offset, little-endian.
uint llmrt_w32(uint byte_offset);
// The 16 bytes at byte_offset, as four little-endian words.
uvec4 llmrt_w128(uint byte_offset);
// The 128 bits that start bit_shift (0..8) bits past byte byte_offset, as four words: each word
// one funnel shift of two aligned words (it reads the word after the last byte too).
uvec4 llmrt_w128_bits(uint byte_offset, uint bit_shift);

// Bits shift .. shift + 31 (shift 0..32) of the 64 bits hi:lo: one funnel shift.
uint llmrt_funnel(uint lo, uint hi, uint shift) { return uint(packUint2x32(uvec2(lo, hi)) >> shift); }

// Byte i (0..3) of w.
uint llmrt_byte(uint w, uint i) { return bitfieldExtract(w, int(8u * i), 8); }

// Bytes h, h+2 of a and bytes h, h+2 of b (h = 0 or 1) as one word, in the order
// [a.h, b.h, a.h+2, b.h+2]: four scale bytes that sit two apart in a block, gathered at once.
uint llmrt_gather_alternate_bytes(uint a, uint b, uint h) {
    return ((a >> (8u * h)) & 0x00ff00ffu) | (((b >> (8u * h)) & 0x00ff00ffu) << 8u);
}

#endif
