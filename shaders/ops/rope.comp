#version 460
// rope: rotary position embedding, one invocation per element of a column of n_head heads of
// head_dim values. Pair i (< n_rot/2) of a head is (2i, 2i+1) in normal order, (i, i + n_rot/2) in
// NeoX order; it turns by θ = pos · theta_scale^i, theta_scale = base^(−2/n_rot) (computed on the
// host as the CPU reference does), stepped by i float multiplications as the reference steps it,
// so θ has the reference's bits. θ is reduced to [−π, π] in double before cos and sin, whose
// accuracy Vulkan only bounds on that range. Elements past n_rot pass through.
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
    uint unused;       // pads the block to the C++ struct's size
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
    const uint half_rot = p.n_rot / 2u;
    const uint pair = p.neox != 0u ? r % half_rot : r / 2u;
    const bool first = p.neox != 0u ? r < half_rot : (r & 1u) == 0u;
    const uint head_start = e - r;
    const uint a = head_start + (p.neox != 0u ? pair : 2u * pair);
    const uint b = head_start + (p.neox != 0u ? pair + half_rot : 2u * pair + 1u);

    precise float theta = float(llmrt_op_i32(p.positions).v[t]);
    for (uint i = 0u; i < pair; ++i) theta *= p.theta_scale;
    const double two_pi = 6.283185307179586476925286766559;
    const double turns = round(double(theta) / two_pi);
    const float reduced = float(double(theta) - turns * two_pi);
    const float cs = cos(reduced), sn = sin(reduced);

    const float x0 = x.v[t * p.ne0 + a], x1 = x.v[t * p.ne0 + b];
    precise float result = first ? x0 * cs - x1 * sn : x0 * sn + x1 * cs;
    llmrt_op_f32(p.y).v[at] = result;
}
