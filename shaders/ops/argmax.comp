#version 460
// argmax: y[t] = the first index of the largest element of column t, one work-group per column.
// Candidates are compared as the CPU reference's scan `x[i] > x[best]` ranks them: a NaN at index 0
// beats everything (nothing compares greater than it), a NaN elsewhere loses to everything, and
// ties go to the lower index; each invocation scans its elements, then a tree in a fixed order.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_argmax_params {
    uint64_t x;
    uint64_t y;  // int32 per token
    uint ne0;
    uint unused;       // pads the block to the C++ struct's size
} p;

shared float best_value[LLMRT_OPS_WG];
shared uint best_index[LLMRT_OPS_WG];

// Whether candidate (v, i) ranks above (w, j).
bool beats(float v, uint i, float w, uint j) {
    const bool v_top = isnan(v) && i == 0u, w_top = isnan(w) && j == 0u;
    if (v_top || w_top) return v_top;
    if (isnan(v) || isnan(w)) return isnan(w) && !isnan(v) || (isnan(v) && isnan(w) && i < j);
    return v > w || (v == w && i < j);
}

void main() {
    const uint t = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x;
    llmrt_op_f32 x = llmrt_op_f32(p.x + uint64_t(t) * p.ne0 * 4u);
    float value = 0.0;
    uint index = 0xffffffffu;  // none yet
    for (uint i = lane; i < p.ne0; i += LLMRT_OPS_WG) {
        const float v = x.v[i];
        if (index == 0xffffffffu || beats(v, i, value, index)) {
            value = v;
            index = i;
        }
    }
    best_value[lane] = value;
    best_index[lane] = index;
    barrier();
    for (uint half_size = LLMRT_OPS_WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) {
            const uint other = lane + half_size;
            if (best_index[other] != 0xffffffffu &&
                (best_index[lane] == 0xffffffffu ||
                 beats(best_value[other], best_index[other], best_value[lane], best_index[lane]))) {
                best_value[lane] = best_value[other];
                best_index[lane] = best_index[other];
            }
        }
        barrier();
    }
    if (lane == 0u) llmrt_op_i32(p.y).v[t] = int(best_index[0]);
}
