#version 460
// set_rows: cache column pos[t] = src[:, t], converted to the cache's type (f32, or f16 rounded to
// nearest even by llmrt/half.glsl, the bits of llmrt::fp32_to_fp16). One invocation per element.
// When two tokens name one position the later token's column is written, as the CPU reference's
// in-order loop leaves it; a position outside the cache writes nothing (the host checks positions
// it can see before a run).
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_set_rows_params {
    uint64_t cache;
    uint64_t src;
    uint64_t positions;  // int32 per token
    uint ne0;
    uint n_ctx;
    uint tokens;         // live columns of src
    uint f16;
} p;

void main() {
    const uint i = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (i >= p.ne0) return;
    llmrt_op_i32 positions = llmrt_op_i32(p.positions);
    if (!llmrt_writes_cache_column(positions, t, p.tokens, p.n_ctx)) return;
    llmrt_store_cache(p.cache, p.f16 != 0u, uint64_t(positions.v[t]) * p.ne0 + i, llmrt_op_f32(p.src).v[t * p.ne0 + i]);
}
