#version 460
// rope: rotary position embedding, one invocation per element of a column of n_head heads of
// head_dim values. Pair i (< n_rot/2) of a head is (2i, 2i+1) in normal order, (i, i + n_rot/2) in
// NeoX order; it turns by θ = (pos · theta_scale^i / factor_i) · freq_scale, theta_scale =
// base^(−2/n_rot) (computed on the host as the CPU reference does), mixed with the extrapolated
// angle and scaled with YaRN, through llmrt_rope_rotate (ops_common.glsl). Elements past n_rot
// pass through.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_rope_params {
    uint64_t x;
    uint64_t y;
    uint64_t positions;  // int32 per token
    uint ne0;            // n_head · head_dim
    uint head_dim;
    uint n_rot;
    uint neox;           // 0: normal pair order, 1: NeoX
    float theta_scale;
    float freq_scale;
    uint64_t factors;    // n_rot/2 floats, or 0: every factor 1
    float ext_factor;    // YaRN's terms (llmrt_rope_yarn)
    float mscale;
    float corr_low;
    float corr_span;
} p;

void main() {
    const uint e = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (e >= p.ne0) return;
    const uint at = t * p.ne0 + e;
    llmrt_op_f32 x = llmrt_op_f32(p.x);
    const uint r = e % p.head_dim;
    if (r >= p.n_rot) {
        llmrt_op_f32(p.y).v[at] = x.v[at];
        return;
    }
    uint pair;
    bool first;
    const uvec2 ab = (e - r) + llmrt_rope_pair(r, p.n_rot, p.neox, pair, first);
    const float x0 = x.v[t * p.ne0 + ab.x], x1 = x.v[t * p.ne0 + ab.y];
    const float factor = p.factors != 0ul ? llmrt_op_f32(p.factors).v[pair] : 1.0;
    llmrt_op_f32(p.y).v[at] = llmrt_rope_rotate(x0, x1, first, llmrt_op_i32(p.positions).v[t], pair, p.theta_scale, factor,
                                                p.freq_scale, llmrt_rope_yarn(p.ext_factor, p.mscale, p.corr_low, p.corr_span));
}
