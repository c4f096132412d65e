// cuda::lsa_all_reduce: the all-reduce of a decode step's small sums (a column of n_embd floats
// per token) as one kernel over NCCL's device API (NCCL 2.28 or newer with nccl_device.h), in
// place of ncclAllReduce. Each rank keeps a slot in a window registered with every rank of the
// group (ncclMemAlloc + ncclCommWindowRegister, symmetric); block b of the kernel
//   1. meets block b of every other rank at an LSA barrier (every rank has finished the previous
//      all-reduce, so its reads of this rank's slot are done),
//   2. copies slice b of x into this rank's slot,
//   3. meets them again (the slices are written and visible),
//   4. adds slice b of every rank's slot, read through the peers' mapped memory, in rank order,
// so every rank gets the same bits, whatever the rank that computes them. The peers are on the
// same host (NVLink or PCIe peer access: the LSA team).
//
// It is a cuda::device_all_reduce: make_lsa_all_reduce is the factory cuda::backend_options takes.
// Including this header brings nccl_device.h, whose top-level namespace `cuda` makes `cuda::`
// ambiguous after `using namespace llmrt;`: say llmrt::cuda:: in such a file.
//
// Why: ncclAllReduce of 32 KB in a captured decode step costs 8.7 µs on 2 H100s and 11 µs on 4
// (bench/RESULTS.md, Several GPUs), 161 times a token for a 70B-shaped model.
//
// On 4 H200s (NCCL 2.28.3) it gives ncclAllReduce's bits and takes 0.42 ms off a 70B-shaped
// model's token on 2 GPUs and 0.67 ms on 4 (bench/RESULTS.md, Several GPUs).
#pragma once

#include "llmrt/core/cxx20.hpp"

#if defined(LLMRT_HAVE_NCCL) && __has_include(<nccl_device.h>)
#define LLMRT_HAVE_NCCL_DEVICE_API 1

#include <cuda_runtime.h>
#include <nccl.h>
// NCCL 2.28.9's device headers have unused parameters (gin__funcs.h): not this project's warnings.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <nccl_device.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/device_all_reduce.cuh"
#include "llmrt/cuda/nccl.cuh"
#include "llmrt/cuda/ptx.cuh"

namespace llmrt::cuda {

namespace detail {

constexpr int lsa_threads = 256;

// Block b of the grid takes elements [b·per, min((b+1)·per, count)) (per = ceil(count / grid)).
__global__ void __launch_bounds__(lsa_threads)
    lsa_all_reduce_kernel(const float* x, float* y, std::size_t count, ncclWindow_t window, ncclDevComm comm) {
    ncclLsaBarrierSession<ncclCoopCta> barrier{ncclCoopCta(), comm, ncclTeamTagLsa(), blockIdx.x};
    barrier.sync(ncclCoopCta(), ::cuda::memory_order_relaxed);  // every rank is done with the last call's slots
    const std::size_t per = (count + gridDim.x - 1) / gridDim.x;
    const std::size_t begin = blockIdx.x * per, end = begin + per < count ? begin + per : count;
    ptx::wait_for_prerequisite_grids();  // x comes from the kernel before
    float* mine = static_cast<float*>(ncclGetLocalPointer(window, 0));
    for (std::size_t i = begin + threadIdx.x; i < end; i += lsa_threads) mine[i] = x[i];
    barrier.sync(ncclCoopCta(), ::cuda::memory_order_acq_rel);  // every rank's slice is written and visible
    ptx::allow_dependent_grids();
    for (std::size_t i = begin + threadIdx.x; i < end; i += lsa_threads) {
        float sum = static_cast<const float*>(ncclGetLsaPointer(window, 0, 0))[i];
        for (int peer = 1; peer < comm.lsaSize; ++peer)
            sum = __fadd_rn(sum, static_cast<const float*>(ncclGetLsaPointer(window, 0, peer))[i]);
        y[i] = sum;
    }
}

}  // namespace detail

class lsa_all_reduce final : public device_all_reduce {
public:
    // A collective call: every rank of c's group makes one, with the same max_floats and blocks,
    // before any all-reduce through it (and outside a stream capture). Null, with why in `reason`,
    // where the group cannot (no symmetric memory: peers not load/store accessible, NCCL_P2P
    // disabled); the caller then keeps ncclAllReduce.
    static std::unique_ptr<lsa_all_reduce> make(const nccl_communicator& c, std::size_t max_floats, int blocks,
                                                std::string& reason) {
        std::unique_ptr<lsa_all_reduce> r(new lsa_all_reduce(c.get()));
        r->max_floats_ = max_floats;
        r->blocks_ = blocks;
        // The window's size: whole pages (NCCL_WIN_REQUIRED_ALIGNMENT) of floats.
        const std::size_t bytes = (max_floats * sizeof(float) + 4095) / 4096 * 4096;
        if (ncclMemAlloc(&r->buffer_, bytes) != ncclSuccess) {
            reason = std::string("ncclMemAlloc: ") + ncclGetLastError(c.get());
            return nullptr;
        }
        if (ncclCommWindowRegister(c.get(), r->buffer_, bytes, &r->window_, NCCL_WIN_COLL_SYMMETRIC) != ncclSuccess) {
            r->window_ = nullptr;
            reason = std::string("ncclCommWindowRegister: ") + ncclGetLastError(c.get());
            return nullptr;
        }
        ncclDevCommRequirements requirements;
        std::memset(&requirements, 0, sizeof(requirements));
        requirements.lsaBarrierCount = blocks;
        if (ncclDevCommCreate(c.get(), &requirements, &r->dev_) != ncclSuccess) {
            reason = std::string("ncclDevCommCreate: ") + ncclGetLastError(c.get());
            return nullptr;
        }
        r->dev_made_ = true;
        return r;
    }

    lsa_all_reduce(const lsa_all_reduce&) = delete;
    lsa_all_reduce& operator=(const lsa_all_reduce&) = delete;
    ~lsa_all_reduce() override {
        if (dev_made_) ncclDevCommDestroy(comm_, &dev_);
        if (window_) ncclCommWindowDeregister(comm_, window_);
        if (buffer_) ncclMemFree(buffer_);
    }

    std::size_t max_floats() const noexcept override { return max_floats_; }

    void run(const float* x, float* y, std::size_t count, cudaStream_t stream, const launch_options& o) const override {
        check(count <= max_floats_, errc::invalid_argument, [&] {
            return "cuda::lsa_all_reduce: " + std::to_string(count) + " floats; its window holds " +
                   std::to_string(max_floats_);
        });
        if (count == 0) return;
        detail::launch("cuda::lsa_all_reduce", detail::lsa_all_reduce_kernel, dim3(unsigned(blocks_)),
                       dim3(detail::lsa_threads), 0, stream, o, x, y, count, window_, dev_);
    }

private:
    explicit lsa_all_reduce(ncclComm_t comm) : comm_(comm) {}

    ncclComm_t comm_ = nullptr;
    void* buffer_ = nullptr;
    ncclWindow_t window_ = nullptr;
    ncclDevComm dev_{};
    bool dev_made_ = false;
    std::size_t max_floats_ = 0;
    int blocks_ = 0;
};

// The cuda::device_all_reduce_factory of lsa_all_reduce: 16 blocks (a decode step's sums are
// n_embd floats a column, 8192 for a 70B model: 512 a block).
inline std::unique_ptr<device_all_reduce> make_lsa_all_reduce(const nccl_communicator& c, std::size_t max_floats,
                                                              std::string& reason) {
    return lsa_all_reduce::make(c, max_floats, 16, reason);
}

}  // namespace llmrt::cuda

#endif  // LLMRT_HAVE_NCCL && nccl_device.h
