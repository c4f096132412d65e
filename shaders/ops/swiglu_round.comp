#version 460
// The swiglu step of the lowering (graph/lower.hpp): y = silu(gate) ⊙ up, written when kept
// (address not 0), and its Q8_1 rounding for the matvec step that reads it (ne0 a multiple of
// 32). y has the bits of elementwise.comp's swiglu (the same llmrt_silu), the rounding those of
// quantize_q8_1.comp (llmrt/q8_1_round.glsl). Gate and up columns lie gate_stride and up_stride floats apart.
// Q8_1 output regions as in norm_step.comp.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"
#include "llmrt/q8_1_round.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_swiglu_round_params {
    uint64_t gate;
    uint64_t up;
    uint64_t y;          // 0: y is not kept
    uint64_t qs_a;
    uint64_t records_a;
    uint64_t qs_b;
    uint64_t records_b;
    uint ne0;
    uint split;
    uint gate_stride;
    uint up_stride;
} p;

shared float staged[LLMRT_OPS_WG];

// Grid (⌈ne0 / WG⌉, columns): one value per invocation, staged in shared memory, where the first
// WG/32 invocations round a block each.
void main() {
    const uint lane = gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
    const uint i = gl_WorkGroupID.x * LLMRT_OPS_WG + lane;
    if (i < p.ne0) {
        const float v = llmrt_silu(llmrt_op_f32(p.gate + uint64_t(t) * p.gate_stride * 4u).v[i]) *
                        llmrt_op_f32(p.up + uint64_t(t) * p.up_stride * 4u).v[i];
        if (p.y != 0ul) llmrt_op_f32(p.y + uint64_t(t) * p.ne0 * 4u).v[i] = v;
        staged[lane] = v;
    }
    barrier();
    const uint block = (gl_WorkGroupID.x * LLMRT_OPS_WG) / 32u + lane;
    if (lane >= LLMRT_OPS_WG / 32u || block >= p.ne0 / 32u) return;
    float values[32];
    for (uint j = 0u; j < 32u; ++j) values[j] = staged[32u * lane + j];
    llmrt_q8_1_round_into(values, p.qs_a, p.records_a, p.qs_b, p.records_b, p.split, p.ne0, t, block);
}
