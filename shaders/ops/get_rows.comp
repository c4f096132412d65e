#version 460
// get_rows: y[:, t] = dequantize(row ids[t] of the table), one invocation per element. The table's
// type is the one of llmrt_dequantize.glsl, a per-type include the build puts on the include path
// (dequantize/<type>.glsl). An id outside [0, n_rows) gives a column of NaN (the host checks ids
// it can see before a run; ids computed on the device are only guarded here).
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"
#include "llmrt_dequantize.glsl"

layout(local_size_x = LLMRT_OPS_WG) in;

layout(push_constant) uniform llmrt_get_rows_params {
    uint64_t table;  // row 0 of the table
    uint64_t ids;    // int32 per token
    uint64_t y;      // column 0 of the result
    uint64_t row_bytes;
    uint ne0;        // values per row
    uint n_rows;
} p;

void main() {
    const uint e = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (e >= p.ne0) return;
    const int id = llmrt_op_i32(p.ids).v[t];
    float value = LLMRT_NAN;
    if (id >= 0 && uint(id) < p.n_rows) {
        const uint64_t block = p.table + uint64_t(id) * p.row_bytes + uint64_t(e / DQ_BLOCK_VALUES) * DQ_BLOCK_BYTES;
        value = llmrt_dequantize(block, e % DQ_BLOCK_VALUES);
    }
    llmrt_op_f32(p.y).v[t * p.ne0 + e] = value;
}
