// cuda::device_all_reduce: an all-reduce (sum) that a kernel runs in place of ncclAllReduce, for
// the small sums of a decode step, and the factory through which cuda::backend_options asks for
// one. The interface keeps the implementation's headers out of the backend: cuda/nccl_lsa.cuh's,
// over NCCL's device API, brings nccl_device.h and with it CUDA's own top-level namespace `cuda`,
// which would make `cuda::` ambiguous in every file that says `using namespace llmrt;`. A program
// that wants it includes that header and sets the option (examples/generate/backend_choice.hpp).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/nccl.cuh"

namespace llmrt::cuda {

class device_all_reduce {
public:
    virtual ~device_all_reduce() = default;

    // The most floats one call takes.
    virtual std::size_t max_floats() const noexcept = 0;

    // y = Σ over the ranks of x (count ≤ max_floats() floats; y may be x), queued on stream, the
    // same bits on every rank. Every rank calls it with the same count, in the same order as its
    // other collectives.
    virtual void run(const float* x, float* y, std::size_t count, cudaStream_t stream, const launch_options& o) const = 0;
};

// Makes a rank's device_all_reduce for up to max_floats floats a call: a collective call, every
// rank of the group makes one, outside a stream capture. Null, with why in `reason`, where the
// group cannot; the backend then keeps ncclAllReduce.
using device_all_reduce_factory = std::unique_ptr<device_all_reduce> (*)(const nccl_communicator& c,
                                                                          std::size_t max_floats, std::string& reason);

}  // namespace llmrt::cuda
