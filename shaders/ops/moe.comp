#version 460
// The mixture-of-experts ops of the graph (include/llmrt/vulkan/ops/moe.hpp), with the CPU
// reference's formulas and orders (include/llmrt/cpu/ops.hpp):
//   OP_TOP_K    one invocation per column of n values a: y (int32, k per column) the indices of
//               the k largest, largest first, ties in index order; pick j is the first index of
//               the largest value among those after pick j − 1 in that order
//   OP_WEIGHTS  one invocation per column: y_j = a[b_j] (b: k int32 ids per column of n
//               probabilities a); norm 1: y_j / max(float(Σ y in double), 2⁻¹⁴), divided in double
//               and rounded to float; norm 2: the softmax of the k values as the softmax op takes
//               it (max, exp(y − max) in float, Σ in double, times float(1/Σ))
//   OP_WSUM     one invocation per element i of a column (work-group y: the column):
//               y_i = ((b₀·a[i] + b₁·a[n + i]) + ...) over the k slots, each product rounded
//   OP_ADD_ID   one invocation per element of a column of k slots of n values (work-group y: the
//               column): y[s·n + i] = a[s·n + i] + b[c[s]·n + i] (b: n_expert columns of n, c: k
//               int32 ids per column); an id outside [0, n_expert) gives NaN
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : require
#include "ops_common.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

#define OP_TOP_K 0u
#define OP_WEIGHTS 1u
#define OP_WSUM 2u
#define OP_ADD_ID 3u

layout(push_constant) uniform llmrt_moe_params {
    uint64_t a;
    uint64_t b;
    uint64_t y;
    uint64_t c;       // OP_ADD_ID: the ids
    uint n;           // values per column of a (per slot for OP_WSUM and OP_ADD_ID)
    uint k;           // slots per column
    uint op;
    uint cols;        // columns (OP_TOP_K, OP_WEIGHTS)
    uint norm;        // OP_WEIGHTS: 1 divides by the sum, 2 takes the softmax
    uint n_expert;    // OP_ADD_ID: b's columns
} p;

void top_k(uint c) {
    llmrt_op_f32 x = llmrt_op_f32(p.a + uint64_t(c) * p.n * 4u);
    llmrt_op_i32 y = llmrt_op_i32(p.y + uint64_t(c) * p.k * 4u);
    int prev = -1;
    for (uint j = 0u; j < p.k; ++j) {
        int best = -1;
        for (uint i = 0u; i < p.n; ++i) {
            const float v = x.v[i];
            if (prev >= 0 && !(v < x.v[prev] || (v == x.v[prev] && int(i) > prev))) continue;
            if (best < 0 || v > x.v[best]) best = int(i);
        }
        if (best < 0) best = int(j);  // only NaNs remain: any valid index
        y.v[j] = best;
        prev = best;
    }
}

void weights(uint c) {
    llmrt_op_f32 probs = llmrt_op_f32(p.a + uint64_t(c) * p.n * 4u);
    llmrt_op_i32 ids = llmrt_op_i32(p.b + uint64_t(c) * p.k * 4u);
    llmrt_op_f32 y = llmrt_op_f32(p.y + uint64_t(c) * p.k * 4u);
    double sum = 0.0LF;
    for (uint j = 0u; j < p.k; ++j) {
        const int id = ids.v[j];
        const float v = id >= 0 && uint(id) < p.n ? probs.v[id] : LLMRT_NAN;
        y.v[j] = v;
        sum += double(v);
    }
    if (p.norm == 0u) return;
    if (p.norm == 2u) {
        // A max that skips NaN, as cpu::softmax_column's std::fmax does (GLSL's max leaves NaN open).
        float m = uintBitsToFloat(0xff800000u);  // -inf
        for (uint j = 0u; j < p.k; ++j) m = isnan(y.v[j]) ? m : max(m, y.v[j]);
        double total = 0.0LF;
        for (uint j = 0u; j < p.k; ++j) {
            const float e = exp(y.v[j] - m);
            y.v[j] = e;
            total += double(e);
        }
        const float inv = float(1.0LF / total);
        for (uint j = 0u; j < p.k; ++j) y.v[j] *= inv;
        return;
    }
    float total = float(sum);
    total = total < 6.103515625e-5 ? 6.103515625e-5 : total;
    for (uint j = 0u; j < p.k; ++j) y.v[j] = float(double(y.v[j]) / double(total));
}

void main() {
    if (p.op == OP_WSUM) {
        const uint i = gl_GlobalInvocationID.x, c = gl_WorkGroupID.y;
        if (i >= p.n) return;
        llmrt_op_f32 x = llmrt_op_f32(p.a + uint64_t(c) * p.n * p.k * 4u);
        llmrt_op_f32 w = llmrt_op_f32(p.b + uint64_t(c) * p.k * 4u);
        precise float acc = w.v[0] * x.v[i];
        for (uint s = 1u; s < p.k; ++s) {
            precise float product = w.v[s] * x.v[s * p.n + i];
            acc = acc + product;
        }
        llmrt_op_f32(p.y + uint64_t(c) * p.n * 4u).v[i] = acc;
        return;
    }
    if (p.op == OP_ADD_ID) {
        const uint e = gl_GlobalInvocationID.x, c = gl_WorkGroupID.y;
        if (e >= p.n * p.k) return;
        const uint s = e / p.n, i = e % p.n;
        const int id = llmrt_op_i32(p.c).v[c * p.k + s];
        const uint at = c * p.n * p.k + e;
        const float bias = id >= 0 && uint(id) < p.n_expert ? llmrt_op_f32(p.b).v[uint(id) * p.n + i] : LLMRT_NAN;
        llmrt_op_f32(p.y).v[at] = llmrt_op_f32(p.a).v[at] + bias;
        return;
    }
    const uint c = gl_GlobalInvocationID.x;
    if (c >= p.cols) return;
    if (p.op == OP_TOP_K) top_k(c);
    else weights(c);
}
