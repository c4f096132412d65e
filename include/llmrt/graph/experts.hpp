// Per-column formulas of the mixture-of-experts ops (node.hpp) that the CPU ops and the CUDA
// kernels share, one source for both:
//   expert_sum_divisor   expert_norm::sum's divisor
//   shard_ids, shard_weights (expert parallelism): a rank holds experts [first, first + count) of
//   the model's; a slot of another rank's expert is parked on the column's first held slot
//   (expert 0 of the rank where it holds none) and weighed 0.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>

#include "llmrt/core/config.hpp"

namespace llmrt::graph {

// expert_norm::sum divides by Σ_j y_j, added in double and rounded to float, clamped below at
// 2⁻¹⁴ (f16's smallest normal, as llama.cpp does, so that a sum of 0 divides by something).
LLMRT_HOST_DEVICE float expert_sum_divisor(double sum) {
    const float total = float(sum);
    return total < 0x1p-14f ? 0x1p-14f : total;
}

// Whether the rank holds expert `id`.
LLMRT_HOST_DEVICE bool held_expert(int32_t id, int64_t first, int64_t count) { return id >= first && id - first < count; }

// The k slots of one column: ids (the model's indices) -> y (the rank's).
LLMRT_HOST_DEVICE void shard_ids_column(const int32_t* ids, int32_t* y, int64_t k, int64_t first, int64_t count) {
    int32_t parked = 0;
    for (int64_t s = 0; s < k; ++s)
        if (held_expert(ids[s], first, count)) {
            parked = int32_t(ids[s] - first);
            break;
        }
    for (int64_t s = 0; s < k; ++s) y[s] = held_expert(ids[s], first, count) ? int32_t(ids[s] - first) : parked;
}

// One slot's weight: w where the rank holds the slot's expert, else 0.
LLMRT_HOST_DEVICE float shard_weight(float w, int32_t id, int64_t first, int64_t count) {
    return held_expert(id, first, count) ? w : 0.0f;
}

}  // namespace llmrt::graph
