// Activation slices shared by several block types: runs of 16 Q8_1 values 32 apart, with their
// block scales and exact sums, loaded once per column and reused for every row of a work-group.
#ifndef LLMRT_ACTIVATION_SLICES_GLSL
#define LLMRT_ACTIVATION_SLICES_GLSL

#include "llmrt/q8_1_activations.glsl"

// Values pos + 32j + (0..15), j = 0..1: the two 16-value halves a Q4_K/Q5_K slice touches.
struct llmrt_act_2x16 {
    uvec4 q[2];
    float d[2];
    int sum[2];
};

llmrt_act_2x16 llmrt_load_act_2x16(llmrt_q8_1_column col, uint pos) {
    llmrt_act_2x16 a;
    for (uint j = 0u; j < 2u; ++j) {
        a.q[j] = llmrt_q8_1_quants16(col, pos + 32u * j);
        a.d[j] = llmrt_q8_1_d(col, pos + 32u * j);
        a.sum[j] = llmrt_q8_1_sum16(col, pos + 32u * j);
    }
    return a;
}

// Values pos + 32j + (0..15), j = 0..3: the four 16-value groups a Q2_K/Q3_K/Q6_K slice touches.
struct llmrt_act_4x16 {
    uvec4 q[4];
    float d[4];
    int sum[4];
};

llmrt_act_4x16 llmrt_load_act_4x16(llmrt_q8_1_column col, uint pos) {
    llmrt_act_4x16 a;
    for (uint j = 0u; j < 4u; ++j) {
        a.q[j] = llmrt_q8_1_quants16(col, pos + 32u * j);
        a.d[j] = llmrt_q8_1_d(col, pos + 32u * j);
        a.sum[j] = llmrt_q8_1_sum16(col, pos + 32u * j);
    }
    return a;
}

// Values pos .. pos + 31: one whole Q8_1 block (Q8_0, MXFP4).
struct llmrt_act_32 {
    uvec4 q[2];
    float d;
};

llmrt_act_32 llmrt_load_act_32(llmrt_q8_1_column col, uint pos) {
    llmrt_act_32 a;
    a.q[0] = llmrt_q8_1_quants16(col, pos);
    a.q[1] = llmrt_q8_1_quants16(col, pos + 16u);
    a.d = llmrt_q8_1_d(col, pos);
    return a;
}

#endif
