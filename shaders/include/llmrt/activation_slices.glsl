// Activation slices shared by several block types: runs of 16 Q8_1 values 32 apart, with their
// block scales and exact sums, loaded once per column and reused for every row of a team.
#ifndef LLMRT_ACTIVATION_SLICES_GLSL
#define LLMRT_ACTIVATION_SLICES_GLSL

#include "llmrt/q8_1_activations.glsl"

// Values pos + 32j + (0..15), j = 0..1: the two 16-value halves a Q4_K/Q5_K slice touches.
// (Named fields rather than arrays: the loads stay in registers on every compiler.)
struct llmrt_act_2x16 {
    uvec4 q0, q1;
    vec2 d;
    ivec2 sum;
};

llmrt_act_2x16 llmrt_load_act_2x16(llmrt_q8_1_column col, uint pos) {
    llmrt_act_2x16 a;
    a.q0 = llmrt_q8_1_quants16(col, pos);
    a.q1 = llmrt_q8_1_quants16(col, pos + 32u);
    const uvec2 r0 = llmrt_q8_1_record(col, pos), r1 = llmrt_q8_1_record(col, pos + 32u);
    a.d = vec2(llmrt_q8_1_record_d(r0), llmrt_q8_1_record_d(r1));
    a.sum = ivec2(llmrt_q8_1_record_sum16(r0, pos), llmrt_q8_1_record_sum16(r1, pos));
    return a;
}

// Values pos + 32j + (0..15), j = 0..3: the four 16-value groups a Q2_K/Q3_K/Q6_K slice touches.
struct llmrt_act_4x16 {
    uvec4 q0, q1, q2, q3;
    vec4 d;
    ivec4 sum;
};

llmrt_act_4x16 llmrt_load_act_4x16(llmrt_q8_1_column col, uint pos) {
    llmrt_act_4x16 a;
    a.q0 = llmrt_q8_1_quants16(col, pos);
    a.q1 = llmrt_q8_1_quants16(col, pos + 32u);
    a.q2 = llmrt_q8_1_quants16(col, pos + 64u);
    a.q3 = llmrt_q8_1_quants16(col, pos + 96u);
    const uvec2 r0 = llmrt_q8_1_record(col, pos), r1 = llmrt_q8_1_record(col, pos + 32u);
    const uvec2 r2 = llmrt_q8_1_record(col, pos + 64u), r3 = llmrt_q8_1_record(col, pos + 96u);
    a.d = vec4(llmrt_q8_1_record_d(r0), llmrt_q8_1_record_d(r1), llmrt_q8_1_record_d(r2), llmrt_q8_1_record_d(r3));
    a.sum = ivec4(llmrt_q8_1_record_sum16(r0, pos), llmrt_q8_1_record_sum16(r1, pos), llmrt_q8_1_record_sum16(r2, pos),
                  llmrt_q8_1_record_sum16(r3, pos));
    return a;
}

// Values pos .. pos + 31: one whole Q8_1 block (Q8_0, MXFP4).
struct llmrt_act_32 {
    uvec4 q0, q1;
    float d;
};

llmrt_act_32 llmrt_load_act_32(llmrt_q8_1_column col, uint pos) {
    llmrt_act_32 a;
    a.q0 = llmrt_q8_1_quants16(col, pos);
    a.q1 = llmrt_q8_1_quants16(col, pos + 16u);
    a.d = llmrt_q8_1_record_d(llmrt_q8_1_record(col, pos));
    return a;
}

#endif
