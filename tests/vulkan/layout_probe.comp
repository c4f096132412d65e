#version 460
// Compiled once per weight type over that type's block include (llmrt_block.glsl): it uses the
// block's buffer-reference struct and states BLOCK_BYTES and BLOCK_VALUES as specialization
// constant defaults, so the SPIR-V carries the GLSL layout for test_vulkan_shaders to read.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require

#include "llmrt_block.glsl"

layout(constant_id = 0) const uint block_bytes = BLOCK_BYTES;
layout(constant_id = 1) const uint block_values = BLOCK_VALUES;
layout(local_size_x = 1) in;

layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer probe_output { uint v[]; };
layout(push_constant) uniform probe_params {
    LLMRT_BLOCK block;
    uint64_t output_address;
} p;

// The block include reads weights through these; the probe never calls them.
uint llmrt_w32(uint byte_offset) { return byte_offset; }
uvec4 llmrt_w128(uint byte_offset) { return uvec4(byte_offset); }

void main() { probe_output(p.output_address).v[0] = block_bytes + block_values + uint(uint64_t(p.block) & 1ul); }
