#version 460
// argmax: y[t] = the first index of the largest element of column t, in two stages so that long
// columns (a vocabulary of logits) spread over many work-groups:
//   stage 0  work-group (c, t) ranks elements [c·chunk, (c+1)·chunk) of column t and writes its
//            winner to partials[t·chunks + c] (or, when the column is one chunk, the index to y[t])
//   stage 1  work-group t ranks column t's `chunks` partial winners and writes the index to y[t]
// Candidates are ranked as the CPU reference's scan `x[i] > x[best]` ranks them: a NaN at index 0
// beats everything (nothing compares greater than it), a NaN elsewhere loses to everything, and
// ties go to the lower index. That is a strict total order on (value, index), so the winner does
// not depend on how the stages split the column; each invocation scans its elements, then a
// tree in a fixed order.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(buffer_reference, std430, buffer_reference_align = 8) buffer llmrt_argmax_partials { uvec2 v[]; };

layout(push_constant) uniform llmrt_argmax_params {
    uint64_t x;
    uint64_t y;         // int32 per token
    uint64_t partials;  // (float bits, index) per chunk of each column
    uint ne0;
    uint chunk;         // elements per stage-0 work-group
    uint chunks;        // ceil(ne0 / chunk)
    uint stage;
} p;

shared float best_value[LLMRT_OPS_WG];
shared uint best_index[LLMRT_OPS_WG];

const uint none = 0xffffffffu;

// Whether candidate (v, i) ranks above (w, j).
bool beats(float v, uint i, float w, uint j) {
    const bool v_top = isnan(v) && i == 0u, w_top = isnan(w) && j == 0u;
    if (v_top || w_top) return v_top;
    if (isnan(v) || isnan(w)) return (isnan(w) && !isnan(v)) || (isnan(v) && isnan(w) && i < j);
    return v > w || (v == w && i < j);
}

// The work-group's winner among the candidates each invocation brought, in lane 0's slot.
void reduce(uint lane, float value, uint index) {
    best_value[lane] = value;
    best_index[lane] = index;
    barrier();
    for (uint half_size = LLMRT_OPS_WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) {
            const uint other = lane + half_size;
            if (best_index[other] != none &&
                (best_index[lane] == none ||
                 beats(best_value[other], best_index[other], best_value[lane], best_index[lane]))) {
                best_value[lane] = best_value[other];
                best_index[lane] = best_index[other];
            }
        }
        barrier();
    }
}

void main() {
    const uint lane = gl_LocalInvocationID.x;
    float value = 0.0;
    uint index = none;
    if (p.stage == 0u) {
        const uint c = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
        llmrt_op_f32 x = llmrt_op_f32(p.x + uint64_t(t) * p.ne0 * 4u);
        const uint end = min(p.ne0, (c + 1u) * p.chunk);
        for (uint i = c * p.chunk + lane; i < end; i += LLMRT_OPS_WG) {
            const float v = x.v[i];
            if (index == none || beats(v, i, value, index)) {
                value = v;
                index = i;
            }
        }
        reduce(lane, value, index);
        if (lane != 0u) return;
        if (p.chunks == 1u) llmrt_op_i32(p.y).v[t] = int(best_index[0]);
        else llmrt_argmax_partials(p.partials).v[t * p.chunks + c] = uvec2(floatBitsToUint(best_value[0]), best_index[0]);
    } else {
        const uint t = gl_WorkGroupID.x;
        llmrt_argmax_partials partials = llmrt_argmax_partials(p.partials + uint64_t(t) * p.chunks * 8u);
        for (uint c = lane; c < p.chunks; c += LLMRT_OPS_WG) {
            const uvec2 candidate = partials.v[c];
            const float v = uintBitsToFloat(candidate.x);
            if (index == none || beats(v, candidate.y, value, index)) {
                value = v;
                index = candidate.y;
            }
        }
        reduce(lane, value, index);
        if (lane == 0u) llmrt_op_i32(p.y).v[t] = int(best_index[0]);
    }
}
