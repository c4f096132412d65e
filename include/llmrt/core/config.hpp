// Portability macros shared by host and device code.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <cstring>

// One codec source runs on the host and inside CUDA kernels (as CuTe does).
#if defined(__CUDACC__)
#define LLMRT_HOST_DEVICE __host__ __device__ inline
#else
#define LLMRT_HOST_DEVICE inline
#endif

namespace llmrt {

// std::bit_cast is not usable in device code under every nvcc; memcpy is, and compiles
// to a register move.
template <class To, class From>
LLMRT_HOST_DEVICE To bit_cast(const From& from) noexcept {
    static_assert(sizeof(To) == sizeof(From), "llmrt::bit_cast needs types of equal size");
    To to;
    memcpy(&to, &from, sizeof(To));
    return to;
}

namespace detail {
template <class...>
inline constexpr bool always_false = false;
}  // namespace detail

}  // namespace llmrt
