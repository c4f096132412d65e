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

#include "llmrt/half.glsl"

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

// Whether token t of a run of `tokens` writes its position's cache column: a position inside the
// cache, and no later token at the same position (the CPU reference's in-order loop leaves the
// later token's column). A position outside the cache writes nothing: the host checks the
// positions it can see before a run.
bool llmrt_writes_cache_column(llmrt_op_i32 positions, uint t, uint tokens, uint n_ctx) {
    const int position = positions.v[t];
    if (position < 0 || uint(position) >= n_ctx) return false;
    for (uint later = t + 1u; later < tokens; ++later)
        if (positions.v[later] == position) return false;
    return true;
}

// Element `at` of a cache of f16 (the bits of llmrt::fp32_to_fp16, llmrt/half.glsl) or f32 values.
void llmrt_store_cache(uint64_t cache, bool f16, uint64_t at, float value) {
    if (f16) llmrt_op_u16(cache + at * 2u).v[0] = uint16_t(llmrt_fp16_bits(value));
    else llmrt_op_f32(cache + at * 4u).v[0] = value;
}

// silu(v) = v · σ(v), one expression for every shader that computes it (elementwise.comp and the
// fused swiglu step), so both give the same bits.
float llmrt_silu(float v) { return v / (1.0 + exp(-v)); }

// YaRN's terms of a rope (graph::rope_params, ggml's rope_yarn): ext_factor 0 leaves the angle
// interpolated; mscale is the magnitude of cos and sin (attn_factor · (1 + 0.1·ln(1/freq_scale))
// with YaRN, attn_factor without, computed on the host as the CPU reference computes it);
// corr_span = max(0.001, corr_high − corr_low), also from the host. Plain rope: (0, 1, 0, 1).
struct llmrt_rope_yarn {
    float ext_factor;
    float mscale;
    float corr_low;
    float corr_span;
};

// Rotary embedding of element `first ? a : b` of the pair (x0, x1) = (x[a], x[b]) at `position`,
// pair index `pair`: θ_extrap = position · theta_scale^pair / factor, the power stepped by `pair`
// float multiplications as the CPU reference steps it (the division, done in double and rounded
// to float, is exact when factor is 1), θ_interp = θ_extrap · freq_scale (exact when 1). Without
// YaRN θ = θ_interp; with it θ = θ_interp · (1 − ramp) + θ_extrap · ramp, ramp = (1 − min(1,
// max(0, (pair − corr_low) / corr_span))) · ext_factor. θ is reduced to [−π, π] in double before
// cos and sin, whose accuracy Vulkan only bounds on that range; both are scaled by mscale (exact
// when 1, so plain rope keeps its bits). rope.comp and the fused rope_cache step both rotate
// through it.
float llmrt_rope_rotate(float x0, float x1, bool first, int position, uint pair, float theta_scale, float factor,
                        float freq_scale, llmrt_rope_yarn yarn) {
    precise float theta_extrap = float(position);
    for (uint i = 0u; i < pair; ++i) theta_extrap *= theta_scale;
    if (factor != 1.0) theta_extrap = float(double(theta_extrap) / double(factor));
    precise float theta = freq_scale != 1.0 ? theta_extrap * freq_scale : theta_extrap;
    if (yarn.ext_factor != 0.0) {
        // The division in double rounded to float: the correctly rounded quotient, as on the CPU.
        const float y = float(double(float(pair) - yarn.corr_low) / double(yarn.corr_span));
        precise float ramp = (1.0 - min(1.0, max(0.0, y))) * yarn.ext_factor;
        precise float mixed = theta * (1.0 - ramp) + theta_extrap * ramp;
        theta = mixed;
    }
    const double two_pi = 6.283185307179586476925286766559;
    const double turns = round(double(theta) / two_pi);
    const float reduced = float(double(theta) - turns * two_pi);
    precise float cs = cos(reduced) * yarn.mscale;
    precise float sn = sin(reduced) * yarn.mscale;
    precise float result = first ? x0 * cs - x1 * sn : x0 * sn + x1 * cs;
    return result;
}

// Where the partner of element r (< n_rot) of a head lies: pair i is (2i, 2i+1) in normal order,
// (i, i + n_rot/2) in NeoX order. Returns the offsets of both elements of the pair in the head.
uvec2 llmrt_rope_pair(uint r, uint n_rot, uint neox, out uint pair, out bool first) {
    const uint half_rot = n_rot / 2u;
    pair = neox != 0u ? r % half_rot : r / 2u;
    first = neox != 0u ? r < half_rot : (r & 1u) == 0u;
    return neox != 0u ? uvec2(pair, pair + half_rot) : uvec2(2u * pair, 2u * pair + 1u);
}

// The linear index of this work-group in a grid of x · z groups (x is capped by the device's
// limit, so long dimensions spill into z).
uint llmrt_group_index() { return gl_WorkGroupID.z * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

#endif
