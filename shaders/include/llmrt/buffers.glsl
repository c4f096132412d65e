// Views of device memory through buffer device addresses (Vulkan 1.2 core): shaders take the
// addresses of their operands in push constants, so recording a dispatch needs no descriptor set.
#ifndef LLMRT_BUFFERS_GLSL
#define LLMRT_BUFFERS_GLSL

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require

layout(buffer_reference, std430, buffer_reference_align = 16) restrict readonly buffer llmrt_ro_u128 { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) restrict readonly buffer llmrt_ro_u64 { uvec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer llmrt_ro_u32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer llmrt_ro_i32 { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) restrict readonly buffer llmrt_ro_f32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) restrict writeonly buffer llmrt_wo_u128 { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) restrict writeonly buffer llmrt_wo_u64 { uvec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer llmrt_wo_u32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) restrict writeonly buffer llmrt_wo_f32 { float v[]; };

#endif
