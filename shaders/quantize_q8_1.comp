#version 460
// f32 -> Q8_1 activations in llmrt's GPU layout (llmrt/q8_1_activations.glsl), byte for byte the
// values of llmrt::quantize_row(const float*, q8_1*, n), through llmrt/q8_1_round.glsl.
//
// One invocation per Q8_1 block: x = block (0 .. k/32 − 1), y = activation column.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require

#include "llmrt/buffers.glsl"
#include "llmrt/q8_1_round.glsl"

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

void main() {
    const uint block = gl_GlobalInvocationID.x, column = gl_GlobalInvocationID.y;
    if (block >= p.k / 32u || column >= p.columns) return;
    const uint64_t x_at = p.x + 4ul * (uint64_t(column / p.ncols) * p.x_batch_stride +
                                       uint64_t(column % p.ncols) * p.x_col_stride + uint64_t(32u * block));
    llmrt_ro_f32 x = llmrt_ro_f32(x_at);

    float values[32];
    for (uint i = 0u; i < 32u; ++i) values[i] = x.v[i];
    const llmrt_q8_1_column c = llmrt_q8_1_column_at(p.qs, p.records, p.k, column);
    llmrt_q8_1_round_block(values, c.qs, c.records, block);
}
