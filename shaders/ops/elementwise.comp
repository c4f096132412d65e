#version 460
// Element-wise ops over columns of ne0 values, one invocation per element:
//   OP_MUL     y = a ⊙ b      OP_ADD    y = a + b     (b: one column for all when broadcast)
//   OP_SILU    y = a / (1 + exp(−a))
//   OP_SWIGLU  y = silu(a) ⊙ b
//   OP_SWIGLU_OAI  gpt-oss's clamped SwiGLU, gate a, up b, in the CPU reference's order:
//              g = min(a, limit), u = clamp(b, −limit, limit), y = g / (1 + exp(alpha·(−g))) · (u + 1)
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

#define OP_MUL 0u
#define OP_ADD 1u
#define OP_SILU 2u
#define OP_SWIGLU 3u
#define OP_SWIGLU_OAI 4u

layout(push_constant) uniform llmrt_elementwise_params {
    uint64_t a;
    uint64_t b;  // unused by silu
    uint64_t y;
    uint ne0;
    uint op;
    uint broadcast_b;  // 1: b is one column used for every column of a
    float alpha;       // OP_SWIGLU_OAI: the sigmoid's slope
    float limit;       // OP_SWIGLU_OAI: the clamp of gate and up
    uint unused;       // pads the block to the C++ struct's size
} p;

void main() {
    const uint i = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (i >= p.ne0) return;
    const uint at = t * p.ne0 + i;
    const float a = llmrt_op_f32(p.a).v[at];
    float result;
    if (p.op == OP_SILU) {
        result = llmrt_silu(a);
    } else {
        const float b = llmrt_op_f32(p.b).v[p.broadcast_b != 0u ? i : at];
        if (p.op == OP_MUL) result = a * b;
        else if (p.op == OP_ADD) result = a + b;
        else if (p.op == OP_SWIGLU) result = llmrt_silu(a) * b;
        else {
            // std::min and std::clamp spelled out: GLSL's min and clamp leave NaN undefined.
            const float g = p.limit < a ? p.limit : a;
            const float u = b < -p.limit ? -p.limit : (p.limit < b ? p.limit : b);
            precise float y = g / (1.0 + exp(p.alpha * (-g))) * (u + 1.0);
            result = y;
        }
    }
    llmrt_op_f32(p.y).v[at] = result;
}
