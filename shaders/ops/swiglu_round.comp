#version 460
// The swiglu step of the lowering (graph/lower.hpp): y = silu(gate) ⊙ up, written when kept
// (address not 0), and its Q8_1 rounding for the matvec step that reads it. One invocation per
// block of 32 values of a column (ne0 a multiple of 32), grid y = column. y has the bits of
// elementwise.comp's swiglu (the same llmrt_silu), the rounding those of quantize_q8_1.comp
// (llmrt/q8_1_round.glsl). Gate and up columns lie gate_stride and up_stride floats apart.
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

void main() {
    const uint block = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (block >= p.ne0 / 32u) return;
    llmrt_op_f32 gate = llmrt_op_f32(p.gate + uint64_t(t) * p.gate_stride * 4u);
    llmrt_op_f32 up = llmrt_op_f32(p.up + uint64_t(t) * p.up_stride * 4u);
    float values[32];
    for (uint j = 0u; j < 32u; ++j) {
        const uint i = 32u * block + j;
        const float v = llmrt_silu(gate.v[i]) * up.v[i];
        if (p.y != 0ul) llmrt_op_f32(p.y + uint64_t(t) * p.ne0 * 4u).v[i] = v;
        values[j] = v;
    }
    const bool in_a = t < p.split;
    const uint q_column = in_a ? t : t - p.split;
    llmrt_q8_1_round_block(values, (in_a ? p.qs_a : p.qs_b) + uint64_t(q_column) * p.ne0,
                           (in_a ? p.records_a : p.records_b) + uint64_t(q_column) * (p.ne0 / 4u), block);
}
