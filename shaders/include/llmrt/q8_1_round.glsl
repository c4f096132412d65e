// One Q8_1 block of llmrt's GPU layout (llmrt/q8_1_activations.glsl) from 32 floats, byte for
// byte the values of llmrt::quantize_row(const float*, q8_1*, n):
//   d = amax/127 and 1/d rounded once to fp32, q = round(x·(1/d)) with ties away from zero,
//   s = fp16(d·Σq), d stored as fp16, plus the exact Σq of each 16 values.
// Vulkan lets an fp32 division be off by 2.5 ulp, so both quotients are taken in fp64 and rounded
// to fp32 once: a/127 and 1/d are never within 2^-32 (relative) of a midpoint between floats,
// far beyond fp64's error, so the rounding is the correct one. GLSL's round() leaves ties to the
// implementation, so ties away from zero are spelled out.
//
// Every shader that writes Q8_1 activations (quantize_q8_1.comp and the fused graph steps of
// shaders/ops/) rounds through llmrt_q8_1_round_block, so they all write the same bytes.
#ifndef LLMRT_Q8_1_ROUND_GLSL
#define LLMRT_Q8_1_ROUND_GLSL

#include "llmrt/buffers.glsl"
#include "llmrt/half.glsl"
#include "llmrt/q8_1_activations.glsl"

float llmrt_round_half_away(float v) {
    const float t = trunc(v);
    return abs(v - t) >= 0.5 ? t + sign(v) : t;  // v − t is exact
}

// Block `block` of a column whose quants start at column_qs and records at column_records.
void llmrt_q8_1_round_block(const float x[32], uint64_t column_qs, uint64_t column_records, uint block) {
    float amax = 0.0;
    for (uint i = 0u; i < 32u; ++i) {
        const float a = abs(x[i]);
        amax = amax > a ? amax : a;
    }
    const float d = float(double(amax) / 127.0lf);
    const float id = d != 0.0 ? float(1.0lf / double(d)) : 0.0;

    uint words[8];
    int half_sums[2] = int[2](0, 0);
    for (uint i = 0u; i < 32u; ++i) {
        precise const float scaled = x[i] * id;  // rounded once, never fused into what follows
        const int q = int(llmrt_round_half_away(scaled));
        half_sums[i >> 4u] += q;
        const uint byte = uint(q) & 0xffu;
        if ((i & 3u) == 0u) words[i >> 2u] = byte;
        else words[i >> 2u] |= byte << (8u * (i & 3u));
    }
    const int sum = half_sums[0] + half_sums[1];

    llmrt_wo_u128 qs = llmrt_wo_u128(column_qs);
    qs.v[2u * block] = uvec4(words[0], words[1], words[2], words[3]);
    qs.v[2u * block + 1u] = uvec4(words[4], words[5], words[6], words[7]);
    llmrt_wo_u64(column_records).v[block] = uvec2(llmrt_fp16_bits(d) | (llmrt_fp16_bits(float(sum) * d) << 16u),
                                                  (uint(half_sums[0]) & 0xffffu) | (uint(half_sums[1]) << 16u));
}

// Block `block` of column `column` of a target in two regions, as the fused steps write for a
// matvec step (vulkan/ops/mul_mat.hpp, q8_1_target): columns below `split` in region A, the
// others in region B from its column 0; k values per column.
void llmrt_q8_1_round_into(const float x[32], uint64_t qs_a, uint64_t records_a, uint64_t qs_b, uint64_t records_b,
                           uint split, uint k, uint column, uint block) {
    const bool in_a = column < split;
    const llmrt_q8_1_column c = llmrt_q8_1_column_at(in_a ? qs_a : qs_b, in_a ? records_a : records_b, k,
                                                     in_a ? column : column - split);
    llmrt_q8_1_round_block(x, c.qs, c.records, block);
}

#endif
