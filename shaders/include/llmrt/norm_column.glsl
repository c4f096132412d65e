// The norm step of the lowering (graph/lower.hpp) for one column, finished by one work-group:
//   s = a + b  (or s = a)       n = s · 1/sqrt(Σs²/ne0 + eps)       p = n ⊙ w  (w: one column)
// writing each of s, n and p that is kept (address not 0) and, when asked, the Q8_1 rounding of
// the last one (p, or n without a product). Every value has the bits of the add, rms_norm and mul
// shaders run one by one: the sum of squares is taken in double in rms_norm.comp's order (its
// LLMRT_NORM_ORDER_LANES invocations each over i ≡ its index, then the same tree), whatever the
// number of invocations that run it here, and the rounding goes through llmrt/q8_1_round.glsl.
//
// What finishes a whole column in one work-group (shaders/mmvq.comp with LLMRT_MMVQ_NORM) keeps
// a column's s in shared memory: it defines LLMRT_NORM_CAPACITY (floats, at least ne0) before
// the include. Loading s first, many loads in flight per invocation, and summing from shared
// memory keeps one work-group's latency low where a loop of dependent loads would not.
#ifndef LLMRT_NORM_COLUMN_GLSL
#define LLMRT_NORM_COLUMN_GLSL

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_control_flow_attributes : require

#include "llmrt/q8_1_round.glsl"

// The operands of a norm step (vulkan/norm_args.hpp, member for member). Columns below `split`
// of the Q8_1 target go to region A, the others to region B (vulkan/ops/mul_mat.hpp).
struct llmrt_norm_args {
    uint64_t a;
    uint64_t b;            // 0: no residual add
    uint64_t sum_out;      // 0: s is not kept
    uint64_t norm_out;     // 0: n is not kept
    uint64_t w;            // 0: no product
    uint64_t product_out;  // 0: p is not kept
    uint64_t qs_a;         // 0: no rounding
    uint64_t records_a;
    uint64_t qs_b;
    uint64_t records_b;
    uint ne0;
    float eps;
    uint split;
    uint first_column;     // the column the first one a dispatch finishes is (mmvq: of its region)
};

// Operands other work-groups wrote (the mat-vec's rows) are read through coherent views.
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer llmrt_norm_f32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer llmrt_norm_u32 { uint v[]; };

// rms_norm.comp's work-group size: the order of its sum of squares.
#define LLMRT_NORM_ORDER_LANES 128u

// s_i of the column at byte offset `column` (a + b: the addition's order does not change its bits).
float llmrt_norm_sum_at(llmrt_norm_args n, uint64_t column, uint i) {
    const float a = llmrt_norm_f32(n.a + column).v[i];
    return n.b != 0ul ? a + llmrt_norm_f32(n.b + column).v[i] : a;
}

#ifdef LLMRT_NORM_CAPACITY
shared double llmrt_norm_partial[LLMRT_NORM_ORDER_LANES];
shared float llmrt_norm_values[LLMRT_NORM_CAPACITY];

// Column t (ne0 ≤ LLMRT_NORM_CAPACITY), all of it, by the `lanes` invocations of a work-group
// (`lane` is this one's index); every invocation calls it, in uniform control flow.
void llmrt_norm_column(llmrt_norm_args n, uint t, uint lane, uint lanes) {
    const uint64_t column = uint64_t(t) * n.ne0 * 4u;
    // s into shared memory, 8 values (16 loads) in flight per invocation.
    for (uint i0 = 0u; i0 < n.ne0; i0 += 8u * lanes) {
        float s[8];
        [[unroll]] for (uint u = 0u; u < 8u; ++u) {
            const uint i = i0 + u * lanes + lane;
            s[u] = i < n.ne0 ? llmrt_norm_sum_at(n, column, i) : 0.0;
        }
        [[unroll]] for (uint u = 0u; u < 8u; ++u) {
            const uint i = i0 + u * lanes + lane;
            if (i < n.ne0) llmrt_norm_values[i] = s[u];
        }
    }
    barrier();
    for (uint v = lane; v < LLMRT_NORM_ORDER_LANES; v += lanes) {
        double sum = 0.0;
        for (uint j = v; j < n.ne0; j += LLMRT_NORM_ORDER_LANES) {
            const float s = llmrt_norm_values[j];
            sum += double(s) * double(s);
        }
        llmrt_norm_partial[v] = sum;
    }
    barrier();
    for (uint half_size = LLMRT_NORM_ORDER_LANES / 2u; half_size > 0u; half_size >>= 1u) {
        for (uint v = lane; v < half_size; v += lanes) llmrt_norm_partial[v] += llmrt_norm_partial[v + half_size];
        barrier();
    }
    const float mean = float(llmrt_norm_partial[0] / double(n.ne0));
    const float scale = 1.0 / sqrt(mean + n.eps);
    for (uint i = lane; i < n.ne0; i += lanes) {
        const float s = llmrt_norm_values[i];
        if (n.sum_out != 0ul) llmrt_norm_f32(n.sum_out + column).v[i] = s;
        const float normed = s * scale;
        if (n.norm_out != 0ul) llmrt_norm_f32(n.norm_out + column).v[i] = normed;
        float v = normed;
        if (n.w != 0ul) {
            v = normed * llmrt_norm_f32(n.w).v[i];
            if (n.product_out != 0ul) llmrt_norm_f32(n.product_out + column).v[i] = v;
        }
        llmrt_norm_values[i] = v;  // each invocation rewrites only the values it read
    }
    barrier();
    if (n.qs_a != 0ul) {
        for (uint block = lane; block < n.ne0 / 32u; block += lanes) {
            float values[32];
            for (uint j = 0u; j < 32u; ++j) values[j] = llmrt_norm_values[32u * block + j];
            llmrt_q8_1_round_into(values, n.qs_a, n.records_a, n.qs_b, n.records_b, n.split, n.ne0, t, block);
        }
    }
    barrier();  // the next column may overwrite llmrt_norm_values
}

shared bool llmrt_norm_is_last;

// The norm step's operands where a dispatch keeps them in device memory (16-byte aligned).
layout(buffer_reference, std430, buffer_reference_align = 16) restrict readonly buffer llmrt_norm_args_at {
    llmrt_norm_args v;
};

// Called by every invocation of every work-group of a dispatch of `groups` work-groups, after
// each wrote its part of a or b: the last to arrive (counted on `counter`, zero between
// dispatches, and left zero) finishes `columns` columns from args.first_column + first_column.
void llmrt_norm_after_last_group(uint64_t args, uint64_t counter, uint groups, uint first_column, uint columns, uint lane,
                                 uint lanes) {
    memoryBarrierBuffer();
    barrier();
    if (lane == 0u) llmrt_norm_is_last = atomicAdd(llmrt_norm_u32(counter).v[0], 1u) == groups - 1u;
    barrier();
    if (!llmrt_norm_is_last) return;
    memoryBarrierBuffer();
    if (lane == 0u) llmrt_norm_u32(counter).v[0] = 0u;
    const llmrt_norm_args n = llmrt_norm_args_at(args).v;
    for (uint c = 0u; c < columns; ++c) llmrt_norm_column(n, n.first_column + first_column + c, lane, lanes);
}
#endif

#endif
