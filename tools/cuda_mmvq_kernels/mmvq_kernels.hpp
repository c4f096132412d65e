// llmrt's mat-vec kernels compiled once, in parts that build in parallel: part P
// (mmvq_kernels.cu built with LLMRT_MMVQ_KERNEL_PART=P) holds the kernels of the weight types
// whose index in llmrt::weight_types is P modulo LLMRT_MMVQ_KERNEL_PARTS, every column count;
// dispatch.cu defines launch_mmvq_precompiled (include/llmrt/cuda/mmvq.cuh) over the parts.
// Adding a weight type needs no edit here or in CMake.
#pragma once

#include <llmrt/cuda/mmvq.cuh>

// Compiled with LLMRT_CUDA_MMVQ_PRECOMPILED like the programs that link it, so that mmvq.cuh's own
// entry points launch through launch_mmvq_precompiled and instantiate no kernel here: each part
// instantiates its own types' kernels alone, by calling launch_mmvq directly.
#if !defined(LLMRT_CUDA_MMVQ_PRECOMPILED)
#error "tools/cuda_mmvq_kernels must be compiled with LLMRT_CUDA_MMVQ_PRECOMPILED (set by CMake)"
#endif
#if !defined(LLMRT_MMVQ_KERNEL_PARTS) || LLMRT_MMVQ_KERNEL_PARTS < 1
#error "tools/cuda_mmvq_kernels: LLMRT_MMVQ_KERNEL_PARTS (the number of parts, set by CMake) must be at least 1"
#endif

namespace llmrt::cuda::detail {

template <int Part>
struct mmvq_kernel_part {
    // Launches the kernel of `type` if it is one of this part's types; false where it is not.
    // Defined in mmvq_kernels.cu and explicitly instantiated there for its part alone, so that
    // dispatch.cu compiles no kernel.
    static bool launch(qtype type, int ncols, const mmvq_params& p, const weight_geometry& w, dim3 grid, int split,
                       const device_limits& device, cudaStream_t stream, const launch_options& options);
};

}  // namespace llmrt::cuda::detail
