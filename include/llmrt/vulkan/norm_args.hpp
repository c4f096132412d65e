// The operands of a norm step on the device (struct llmrt_norm_args of
// shaders/include/llmrt/norm_column.glsl, member for member): what the norm step's own dispatch
// (vulkan/ops/fused.hpp) and the mat-vec that finishes it (vulkan::mmvq::record_mmvq_norm) push.
//   s = a + b (b = 0: s = a)   n = s · 1/sqrt(Σs²/ne0 + eps)   p = n ⊙ w (w = 0: none)
// An output address of 0 is a result not written; qs_a = 0: no Q8_1 rounding.
#pragma once

#include <cstdint>

namespace llmrt::vulkan {

struct norm_args {
    uint64_t a = 0, b = 0, sum_out = 0, norm_out = 0, w = 0, product_out = 0;
    uint64_t qs_a = 0, records_a = 0, qs_b = 0, records_b = 0;  // the Q8_1 target: columns below split in A
    uint32_t ne0 = 0;
    float eps = 0.0f;
    uint32_t split = 0;
    uint32_t first_column = 0;  // the column a dispatch's first one is (the mat-vec's region)
};
static_assert(sizeof(norm_args) == 96, "norm_args must match struct llmrt_norm_args of shaders/include/llmrt/norm_column.glsl");

// The longest column the mat-vec finishes a norm of: the column stays in shared memory (4 bytes a
// value) beside the mat-vec's own, and more of it would cost the mat-vec work-groups per SM.
inline constexpr int64_t mmvq_norm_max_values = 8192;

}  // namespace llmrt::vulkan
