// launch_mmvq_precompiled (include/llmrt/cuda/mmvq.cuh) over the parts of mmvq_kernels.cu: the
// part that holds the type launches it. This file instantiates no kernel.
#include "mmvq_kernels.hpp"

#include <utility>

namespace llmrt::cuda::detail {

namespace {
template <int... Part>
bool launch_in_parts(std::integer_sequence<int, Part...>, qtype type, int ncols, const mmvq_params& p,
                     const weight_geometry& w, dim3 grid, int split, const device_limits& device, cudaStream_t stream,
                     const launch_options& options) {
    return (mmvq_kernel_part<Part>::launch(type, ncols, p, w, grid, split, device, stream, options) || ...);
}
}  // namespace

void launch_mmvq_precompiled(qtype type, int ncols, mmvq_params p, const weight_geometry& w, dim3 grid, int split,
                             const device_limits& device, cudaStream_t stream, const launch_options& options) {
    const bool launched = launch_in_parts(std::make_integer_sequence<int, LLMRT_MMVQ_KERNEL_PARTS>{}, type, ncols, p,
                                          w, grid, split, device, stream, options);
    // Only weight types reach here (mmvq dispatches over them first); a miss is a bug in the parts.
    check(launched, errc::unsupported_type,
          [&] { return "cuda::mmvq: no precompiled kernel part holds " + std::string(name(type)); });
}

}  // namespace llmrt::cuda::detail
