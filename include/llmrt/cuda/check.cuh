// LLMRT_CUDA_CHECK: a failed CUDA runtime call as llmrt::error (errc::device_error), naming the
// expression, its file and line. Host code only; device code never throws.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <string>

#include "llmrt/core/error.hpp"

namespace llmrt::cuda::detail {

inline void check_cuda_status(cudaError_t status, const char* expression, const char* file, int line) {
    if (status == cudaSuccess) return;
    throw error(errc::device_error, std::string(expression) + " failed at " + file + ":" + std::to_string(line) +
                                        ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace llmrt::cuda::detail

#define LLMRT_CUDA_CHECK(expression) \
    ::llmrt::cuda::detail::check_cuda_status((expression), #expression, __FILE__, __LINE__)
