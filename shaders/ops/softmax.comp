#version 460
// softmax: y = exp(x − max) / Σ exp(x − max) per row, one work-group per row, as the CPU reference
// computes it: the exponentials in float, their sum in double (per invocation, then a fixed tree),
// then one multiplication by float(1/Σ). Rows of the graph op are columns of ne0 values; for
// attention (positions != 0) row r is head r % rows_per_token of token r / rows_per_token and holds
// position + 1 scores at a stride of row_stride, of which a window w > 0 keeps the last w; with
// sinks, head h's sink_h is one more logit in the max and (added after the tree) the sum, with no
// output of its own. x and y may be the same memory: each invocation reads and writes only its
// own elements. top_only: y holds one float per row, the row's top probability (softmax's value at
// its largest element, exp(0) · inv), and the row itself is not written.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_softmax_params {
    uint64_t x;
    uint64_t y;
    uint64_t positions;   // 0: every row has `length` values; else int32 per token
    uint64_t sinks;       // 0: none; else one float per head (attention)
    uint row_stride;      // floats between rows
    uint row_length;
    uint rows_per_token;
    uint window;          // attention: 0, or the keys each query sees
    uint top_only;
    uint unused;
} p;

shared float partial_max[LLMRT_OPS_WG];
shared double partial_sum[LLMRT_OPS_WG];

void main() {
    const uint row = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x;
    uint n = p.row_length;
    if (p.positions != 0ul) n = min(uint(llmrt_op_i32(p.positions).v[row / p.rows_per_token]) + 1u, p.row_length);
    // The window's first key: the row's values from there on.
    const uint first = p.window != 0u && n > p.window ? n - p.window : 0u;
    n -= first;
    llmrt_op_f32 x = llmrt_op_f32(p.x + (uint64_t(row) * p.row_stride + first) * 4u);
    llmrt_op_f32 y = llmrt_op_f32(p.y + (uint64_t(row) * p.row_stride + first) * 4u);
    const bool has_sink = p.sinks != 0ul;
    const float sink = has_sink ? llmrt_op_f32(p.sinks).v[row % p.rows_per_token] : 0.0;

    float m = uintBitsToFloat(0xff800000u);  // -inf
    for (uint i = lane; i < n; i += LLMRT_OPS_WG) m = max(m, x.v[i]);
    partial_max[lane] = m;
    barrier();
    for (uint half_size = LLMRT_OPS_WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) partial_max[lane] = max(partial_max[lane], partial_max[lane + half_size]);
        barrier();
    }
    m = partial_max[0];
    if (has_sink) m = max(m, sink);

    double sum = 0.0;
    for (uint i = lane; i < n; i += LLMRT_OPS_WG) {
        const float e = exp(x.v[i] - m);
        if (p.top_only == 0u) y.v[i] = e;
        sum += double(e);
    }
    partial_sum[lane] = sum;
    barrier();
    for (uint half_size = LLMRT_OPS_WG / 2u; half_size > 0u; half_size >>= 1u) {
        if (lane < half_size) partial_sum[lane] += partial_sum[lane + half_size];
        barrier();
    }
    double total = partial_sum[0];
    if (has_sink) total += double(exp(sink - m));
    const float inv = float(1.0lf / total);
    if (p.top_only != 0u) {
        if (lane == 0u) llmrt_op_f32(p.y).v[row] = inv;
        return;
    }
    for (uint i = lane; i < n; i += LLMRT_OPS_WG) y.v[i] *= inv;
}
