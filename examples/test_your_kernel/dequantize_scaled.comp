#version 460
// dequantize_scaled: y[r·k + i] = scales[r] · W[r][i], where W is a matrix of Q4_K rows.
//
// A user's shader on llmrt's GLSL: CMake's llmrt_add_shader(... QUANT_TYPE q4_K) puts llmrt's Q4_K
// block include on the include path as "llmrt_block.glsl", and this shader decodes blocks with
// its load_weight_slice. One invocation decodes one slice (SLICE_VALUES = 32 weights) of one row.
// Operands travel as buffer device addresses in push constants (llmrt/buffers.glsl), as in
// llmrt's own shaders, so the host needs no descriptor sets.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require

#include "llmrt/buffers.glsl"
#include "llmrt_block.glsl"

#ifndef LLMRT_BLOCK_Q4_K_GLSL
#error "dequantize_scaled.comp maps Q4_K slices to weights: build it with llmrt_add_shader(... QUANT_TYPE q4_K)"
#endif

layout(local_size_x = 64) in;

// Matches dequantize_scaled_push in dequantize_scaled_vulkan.hpp.
layout(push_constant) uniform dequantize_scaled_params {
    uint64_t w;         // row 0 of W
    uint64_t scales;    // `rows` floats
    uint64_t y;         // rows·k floats
    uint rows;
    uint k;             // weights per row, a multiple of BLOCK_VALUES
    uint w_row_stride;  // bytes between rows of W
} p;

// The block load_weight_slice is reading: it passes offsets relative to the block.
uint64_t block_address;

// llmrt's block includes read weight bytes through these two (llmrt/weights.glsl). An offset may
// have any alignment (Q8_0, Q3_K and Q6_K blocks are not multiples of 4 bytes), so each read
// joins the two aligned words around it.
uint llmrt_w32(uint byte_offset) {
    const uint64_t at = block_address + byte_offset;
    llmrt_ro_u32 words = llmrt_ro_u32(at & ~3ul);
    const uint shift = 8u * uint(at & 3ul);
    return shift == 0u ? words.v[0] : (words.v[0] >> shift) | (words.v[1] << (32u - shift));
}

uvec4 llmrt_w128(uint byte_offset) {
    return uvec4(llmrt_w32(byte_offset), llmrt_w32(byte_offset + 4u), llmrt_w32(byte_offset + 8u),
                 llmrt_w32(byte_offset + 12u));
}

void main() {
    const uint slices_per_block = BLOCK_VALUES / SLICE_VALUES;
    const uint slices_per_row = p.k / SLICE_VALUES;
    const uint id = gl_GlobalInvocationID.x;  // the host keeps rows·slices_per_row within 32 bits
    if (id >= p.rows * slices_per_row) return;
    const uint row = id / slices_per_row;
    const uint block = (id % slices_per_row) / slices_per_block, slice = id % slices_per_block;

    block_address = p.w + uint64_t(row) * p.w_row_stride + uint64_t(block) * BLOCK_BYTES;
    const weight_slice w = load_weight_slice(0u, slice);
    const float row_scale = llmrt_ro_f32(p.scales).v[row];

    // Q4_K slice 2c + h holds weights 64c + 16h + (0..15) in q[0] and 64c + 32 + 16h + (0..15) in
    // q[1], one 4-bit level per byte; weight = scale·level − min (llmrt/blocks/q4_K.glsl).
    const uint c = slice >> 1u, h = slice & 1u;
    const uint64_t first = uint64_t(row) * p.k + block * BLOCK_VALUES + 64u * c + 16u * h;
    llmrt_wo_f32 y = llmrt_wo_f32(p.y + 4ul * first);
    for (uint j = 0u; j < 2u; ++j) {
        for (uint i = 0u; i < 16u; ++i) {
            const uint level = llmrt_byte(w.q[j][i >> 2u], i & 3u);
            // `precise`: no fused multiply-add, so each weight rounds as llmrt::dequantize_block's.
            precise float weight = w.scale[j] * float(level) - w.min[j];
            y.v[32u * j + i] = row_scale * weight;
        }
    }
}
