// One part of llmrt's precompiled mat-vec kernels (see mmvq_kernels.hpp): the weight types whose
// index in llmrt::weight_types is LLMRT_MMVQ_KERNEL_PART modulo LLMRT_MMVQ_KERNEL_PARTS.
#include "mmvq_kernels.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

#if !defined(LLMRT_MMVQ_KERNEL_PART) || LLMRT_MMVQ_KERNEL_PART < 0 || LLMRT_MMVQ_KERNEL_PART >= LLMRT_MMVQ_KERNEL_PARTS
#error "mmvq_kernels.cu: LLMRT_MMVQ_KERNEL_PART (set by CMake) must be in 0 .. LLMRT_MMVQ_KERNEL_PARTS - 1"
#endif

namespace llmrt::cuda::detail {

namespace {
// f(type_tag<T>{}, integral_constant<index of T>{}) for every T of the list.
template <class... Ts, std::size_t... I, class F>
void for_each_indexed(type_list<Ts...>, std::index_sequence<I...>, F&& f) {
    (f(type_tag<Ts>{}, std::integral_constant<std::size_t, I>{}), ...);
}
}  // namespace

template <int Part>
bool mmvq_kernel_part<Part>::launch(qtype type, int ncols, const mmvq_params& p, const weight_geometry& w, dim3 grid,
                                    int split, const device_limits& device, cudaStream_t stream,
                                    const launch_options& options) {
    bool launched = false;
    for_each_indexed(weight_types{}, std::make_index_sequence<weight_types::size>{}, [&](auto tag, auto index) {
        using B = typename decltype(tag)::type;
        // The other parts' types are never instantiated here.
        if constexpr (decltype(index)::value % LLMRT_MMVQ_KERNEL_PARTS == std::size_t(Part)) {
            if (type != B::id) return;
            launched = true;
            with_ncols(ncols,
                       [&](auto n) { launch_mmvq<B, decltype(n)::value>(p, w, grid, split, device, stream, options); });
        }
    });
    return launched;
}

template struct mmvq_kernel_part<LLMRT_MMVQ_KERNEL_PART>;

}  // namespace llmrt::cuda::detail
