// What every graph-op shader shares: views of device memory by address, the work-group size the
// host dispatches with, and the reads of f32 / f16 caches.
//
// The views are not `restrict`: softmax runs in place on attention scores. 8- and 16-bit values
// are only loaded and stored (StorageBuffer8/16BitAccess), never computed on, so no shader needs
// shaderInt8 or shaderInt16: convert to uint / int first.
#ifndef LLMRT_OPS_COMMON_GLSL
#define LLMRT_OPS_COMMON_GLSL

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer llmrt_op_f32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer llmrt_op_i32 { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer llmrt_op_u32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer llmrt_op_u16 { uint16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer llmrt_op_u8 { uint8_t v[]; };

// Every op shader runs work-groups of this many invocations (include/llmrt/vulkan/ops/kernels.hpp
// dispatches with the same number).
#define LLMRT_OPS_WG 128u

#define LLMRT_NAN uintBitsToFloat(0x7fc00000u)

// Element i of a column of f32 (f16 == 0) or f16 values starting at `column`; fp16 -> fp32 is
// exact, so unpackHalf2x16 gives the bits of llmrt::fp16_to_fp32.
float llmrt_cache_at(uint64_t column, uint i, uint f16) {
    if (f16 != 0u) return unpackHalf2x16(uint(llmrt_op_u16(column).v[i])).x;
    return llmrt_op_f32(column).v[i];
}

// The linear index of this work-group in a grid of x · z groups (x is capped by the device's
// limit, so long dimensions spill into z).
uint llmrt_group_index() { return gl_WorkGroupID.z * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

#endif
