#version 460
// f32 -> Q8_1 activations in llmrt's GPU layout (llmrt/q8_1_activations.glsl), byte for byte the
// values of llmrt::quantize_row(const float*, q8_1*, n):
//   d = amax/127 and 1/d rounded once to fp32, q = round(x·(1/d)) with ties away from zero,
//   s = fp16(d·Σq), d stored as fp16, plus the exact Σq of each 16 values.
// Vulkan lets an fp32 division be off by 2.5 ulp, so both quotients are taken in fp64 and rounded
// to fp32 once: a/127 and 1/d are never within 2^-32 (relative) of a midpoint between floats,
// far beyond fp64's error, so the rounding is the correct one. GLSL's round() leaves ties to the
// implementation, so ties away from zero are spelled out.
//
// One invocation per Q8_1 block: x = block (0 .. k/32 − 1), y = activation column.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require

#include "llmrt/buffers.glsl"
#include "llmrt/half.glsl"

layout(constant_id = 0) const uint WG_SIZE = 64;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform llmrt_quantize_params {
    uint64_t x;         // f32 activations
    uint64_t qs;        // the two regions of the output, column 0
    uint64_t records;
    uint k;             // values per column, a multiple of 32
    uint columns;       // columns in all
    uint ncols;         // columns per batch of x
    uint x_col_stride;  // floats between columns of a batch
    uint x_batch_stride;  // floats between batches
} p;

float round_half_away(float v) {
    const float t = trunc(v);
    return abs(v - t) >= 0.5 ? t + sign(v) : t;  // v − t is exact
}

void main() {
    const uint block = gl_GlobalInvocationID.x, column = gl_GlobalInvocationID.y;
    if (block >= p.k / 32u || column >= p.columns) return;
    const uint64_t x_at = p.x + 4ul * (uint64_t(column / p.ncols) * p.x_batch_stride +
                                       uint64_t(column % p.ncols) * p.x_col_stride + uint64_t(32u * block));
    llmrt_ro_f32 x = llmrt_ro_f32(x_at);

    float amax = 0.0;
    for (uint i = 0u; i < 32u; ++i) {
        const float a = abs(x.v[i]);
        amax = amax > a ? amax : a;
    }
    const float d = float(double(amax) / 127.0lf);
    const float id = d != 0.0 ? float(1.0lf / double(d)) : 0.0;

    uint words[8];
    int half_sums[2] = int[2](0, 0);
    for (uint i = 0u; i < 32u; ++i) {
        precise const float scaled = x.v[i] * id;  // rounded once, never fused into what follows
        const int q = int(round_half_away(scaled));
        half_sums[i >> 4u] += q;
        const uint byte = uint(q) & 0xffu;
        if ((i & 3u) == 0u) words[i >> 2u] = byte;
        else words[i >> 2u] |= byte << (8u * (i & 3u));
    }
    const int sum = half_sums[0] + half_sums[1];

    const uint64_t column_qs = p.qs + uint64_t(column) * p.k;
    llmrt_wo_u128 qs = llmrt_wo_u128(column_qs);
    qs.v[2u * block] = uvec4(words[0], words[1], words[2], words[3]);
    qs.v[2u * block + 1u] = uvec4(words[4], words[5], words[6], words[7]);
    const uint64_t column_records = p.records + 8ul * uint64_t(column) * (p.k / 32u);
    llmrt_wo_u64(column_records).v[block] = uvec2(llmrt_fp16_bits(d) | (llmrt_fp16_bits(float(sum) * d) << 16u),
                                                  (uint(half_sums[0]) & 0xffffu) | (uint(half_sums[1]) << 16u));
}
