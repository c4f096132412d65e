// What the multi-GPU tests need to know about the machine: how many CUDA devices it has, and a
// skip (a message, not a failure) where it has too few; CI has none.
#pragma once

#include <cuda_runtime.h>

#include <doctest/doctest.h>

namespace llmrt::test {

inline int device_count() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    cudaGetLastError();
    return count;
}

}  // namespace llmrt::test

#define LLMRT_NEEDS_GPUS(n)                                                                                            \
    do {                                                                                                               \
        if (llmrt::test::device_count() < (n)) {                                                                       \
            MESSAGE("skipped: needs " << (n) << " CUDA devices, cudaGetDeviceCount says " << llmrt::test::device_count()); \
            return;                                                                                                    \
        }                                                                                                              \
    } while (0)
