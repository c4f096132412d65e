// llmrt's mat-vec kernels compiled once, for llmrt's own CUDA programs (tests, examples, benches):
// they build with LLMRT_CUDA_MMVQ_PRECOMPILED and launch through launch_mmvq_precompiled (see
// include/llmrt/cuda/mmvq.cuh), so each of them skips compiling every mmvq kernel again.
#include <llmrt/cuda/mmvq.cuh>

#if defined(LLMRT_CUDA_MMVQ_PRECOMPILED)
#error "mmvq_kernels.cu defines the precompiled launch: it must be compiled without LLMRT_CUDA_MMVQ_PRECOMPILED"
#endif

namespace llmrt::cuda::detail {

void launch_mmvq_precompiled(qtype type, int ncols, mmvq_params p, const weight_geometry& w, dim3 grid, int split,
                             const device_limits& device, cudaStream_t stream, const launch_options& options) {
    dispatch<weight_types>(type, "cuda::mmvq", [&](auto tag) {
        using B = typename decltype(tag)::type;
        with_ncols(ncols, [&](auto n) { launch_mmvq<B, decltype(n)::value>(p, w, grid, split, device, stream, options); });
    });
}

}  // namespace llmrt::cuda::detail
