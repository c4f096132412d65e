// cuda::nccl_communicator: one rank of an NCCL group (an ncclComm_t: its rank, the group's size,
// its device), what cuda::backend_options::nccl takes so that the CUDA backend runs the graph's
// all_reduce and all_gather nodes as NCCL calls on its stream (comm/communicator.hpp tells the
// design; cuda/steps.cuh the launches).
//
//   auto group = cuda::nccl_local_group(2);        // ncclCommInitAll over devices 0 and 1
//   // on thread r:  cuda::backend b({.device = group[r].device(), .nccl = &group[r]});
//
// It owns its ncclComm_t (nccl_local_group, adopt: ncclCommDestroy when it goes) or borrows one
// (borrow: the caller destroys it). It must outlive every program prepared with it: a CUDA graph
// that captured an NCCL call holds a reference NCCL waits for when the communicator is destroyed.
// Every failed NCCL or CUDA call raises llmrt::error (errc::device_error) naming the call and
// NCCL's own words for what went wrong.
//
// Compiled only where CMake found NCCL (llmrt::nccl defines LLMRT_HAVE_NCCL); elsewhere the
// header declares the class alone, so that the backend's option exists in every build, and a
// backend without it refuses the collectives as before.
#pragma once

#include "llmrt/core/cxx20.hpp"

namespace llmrt::cuda {

class nccl_communicator;

}  // namespace llmrt::cuda

#if defined(LLMRT_HAVE_NCCL)

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/cuda/check.cuh"

namespace llmrt::cuda {

namespace detail {

inline void check_nccl_status(ncclResult_t status, ncclComm_t comm, const char* expression, const char* file, int line) {
    if (status == ncclSuccess) return;
    // ncclGetLastError holds NCCL's own message (which peer, which CUDA call failed inside it).
    const char* last = ncclGetLastError(comm);
    throw error(errc::device_error, std::string(expression) + " failed at " + file + ":" + std::to_string(line) + ": " +
                                        ncclGetErrorString(status) + (last && *last ? std::string(" (") + last + ")" : ""));
}

}  // namespace detail

#define LLMRT_NCCL_CHECK(expression, comm) \
    ::llmrt::cuda::detail::check_nccl_status((expression), (comm), #expression, __FILE__, __LINE__)

class nccl_communicator {
public:
    // A communicator that uses comm and leaves it to the caller to destroy (after this object and
    // every program prepared with it).
    static nccl_communicator borrow(ncclComm_t comm) { return nccl_communicator(comm, false); }
    // A communicator that takes comm and destroys it (ncclCommDestroy) when it goes; also when
    // this call fails.
    static nccl_communicator adopt(ncclComm_t comm) { return nccl_communicator(comm, true); }

    nccl_communicator(nccl_communicator&& o) noexcept
        : comm_(std::exchange(o.comm_, nullptr)), owned_(o.owned_), aborted_(o.aborted_), rank_(o.rank_), size_(o.size_),
          device_(o.device_) {}
    nccl_communicator& operator=(nccl_communicator&& o) noexcept {
        std::swap(comm_, o.comm_);
        std::swap(owned_, o.owned_);
        std::swap(aborted_, o.aborted_);
        std::swap(rank_, o.rank_);
        std::swap(size_, o.size_);
        std::swap(device_, o.device_);
        return *this;
    }
    nccl_communicator(const nccl_communicator&) = delete;
    nccl_communicator& operator=(const nccl_communicator&) = delete;
    ~nccl_communicator() {
        if (!comm_ || !owned_) return;
        if (aborted_) ncclCommAbort(comm_);  // revoked: its peers may be gone, so no collective goodbye
        else ncclCommDestroy(comm_);
    }

    // Stops this rank's NCCL work in flight: a kernel waiting for a peer that will never come
    // returns, so the stream it holds up moves on. For a group whose rank failed (comm/rank_threads.hpp
    // calls it through cancel_nccl_group, from the failed rank's thread, while the others may wait
    // in NCCL). With NCCL 2.28 or newer it is ncclCommRevoke, which keeps the communicator's
    // resources: ncclCommAbort (and ncclCommDestroy) wait until every CUDA graph that captured
    // the communicator's calls is gone, and those belong to programs that live on, so calling
    // them here would hang (seen on 2 H200s, NCCL 2.28.3: the waiting rank woke, ncclCommAbort
    // never returned); the destructor then frees it with ncclCommAbort (a borrowed one is the
    // caller's to free). The revoke has not yet run on several GPUs (tests/nccl/test_model_tp_cuda.cu
    // keeps its case behind --no-skip until it has). Older NCCL has no revoke: cancel()
    // calls ncclCommAbort, which frees the communicator at once if no captured graph holds it,
    // and waits otherwise. After it nothing may use the communicator again, so the group's
    // backends and programs may only be destroyed. Once only; never throws.
    void cancel() noexcept {
        if (!comm_ || aborted_) return;
        aborted_ = true;
#if defined(NCCL_REVOKE_DEFAULT)  // the revoke's flag macro comes with it (2.28.3 has it, 2.28.x builds without it exist)
        ncclCommRevoke(comm_, NCCL_REVOKE_DEFAULT);
#else
        ncclCommAbort(comm_);
        owned_ = false;  // freed
#endif
    }
    bool aborted() const noexcept { return aborted_; }

    int32_t rank() const noexcept { return rank_; }  // 0 .. size() − 1
    int32_t size() const noexcept { return size_; }  // ranks in the group
    int device() const noexcept { return device_; }  // the CUDA device of this rank
    ncclComm_t get() const noexcept { return comm_; }

    // y = Σ over the ranks of x (count floats; y may be x), queued on stream (of this rank's
    // device). Every rank calls it with the same count, in the same order as its other calls.
    void all_reduce(const float* x, float* y, std::size_t count, cudaStream_t stream) const {
        LLMRT_NCCL_CHECK(ncclAllReduce(x, y, count, ncclFloat, ncclSum, comm_, stream), comm_);
    }

    // recv (size() · count floats) = every rank's send (count floats each) in rank order, queued
    // on stream. In place when send is recv + rank() · count.
    void all_gather(const float* send, float* recv, std::size_t count, cudaStream_t stream) const {
        LLMRT_NCCL_CHECK(ncclAllGather(send, recv, count, ncclFloat, comm_, stream), comm_);
    }

private:
    nccl_communicator(ncclComm_t comm, bool owned) : comm_(comm), owned_(owned) {
        try {
            check(comm != nullptr, errc::invalid_argument, "cuda::nccl_communicator: a null ncclComm_t");
            int rank = 0, size = 0;
            LLMRT_NCCL_CHECK(ncclCommUserRank(comm, &rank), comm);
            LLMRT_NCCL_CHECK(ncclCommCount(comm, &size), comm);
            LLMRT_NCCL_CHECK(ncclCommCuDevice(comm, &device_), comm);
            rank_ = rank;
            size_ = size;
        } catch (...) {
            if (comm && owned) ncclCommDestroy(comm);
            throw;
        }
    }

    ncclComm_t comm_ = nullptr;
    bool owned_ = false;
    bool aborted_ = false;
    int32_t rank_ = 0;
    int32_t size_ = 1;
    int device_ = 0;
};

// One communicator per device of `devices` (rank r on devices[r]), made by ncclCommInitAll in
// this process: a tensor-parallel group of local GPUs, each rank then driven by a thread of its
// own. Each device at most once (NCCL does not take a device twice in one group).
inline std::vector<nccl_communicator> nccl_local_group(const std::vector<int>& devices) {
    const std::string what = "cuda::nccl_local_group";
    check(!devices.empty(), errc::invalid_argument, [&] { return what + ": no devices"; });
    int count = 0;
    LLMRT_CUDA_CHECK(cudaGetDeviceCount(&count));
    for (std::size_t i = 0; i < devices.size(); ++i) {
        check(devices[i] >= 0 && devices[i] < count, errc::invalid_argument, [&] {
            return what + ": device " + std::to_string(devices[i]) + " of a machine with " + std::to_string(count) +
                   " CUDA devices";
        });
        for (std::size_t j = 0; j < i; ++j)
            check(devices[j] != devices[i], errc::invalid_argument,
                  [&] { return what + ": device " + std::to_string(devices[i]) + " given twice"; });
    }
    std::vector<ncclComm_t> comms(devices.size(), nullptr);
    LLMRT_NCCL_CHECK(ncclCommInitAll(comms.data(), int(devices.size()), devices.data()), nullptr);
    std::vector<nccl_communicator> group;
    group.reserve(devices.size());
    std::size_t taken = 0;
    try {
        for (; taken < comms.size(); ++taken) group.push_back(nccl_communicator::adopt(comms[taken]));
    } catch (...) {
        for (std::size_t i = taken + 1; i < comms.size(); ++i) ncclCommDestroy(comms[i]);  // adopt destroyed comms[taken]
        throw;
    }
    return group;
}

// Devices 0 .. ranks − 1.
inline std::vector<nccl_communicator> nccl_local_group(int ranks) {
    check(ranks >= 1, errc::invalid_argument,
          [&] { return "cuda::nccl_local_group: " + std::to_string(ranks) + " ranks; need at least 1"; });
    std::vector<int> devices(std::size_t(ranks), 0);
    for (int i = 0; i < ranks; ++i) devices[std::size_t(i)] = i;
    return nccl_local_group(devices);
}

// Cancels every communicator of a group (nccl_communicator::cancel): what a failed rank calls so
// that the others stop waiting for it (comm::rank_threads' cancel).
inline void cancel_nccl_group(std::vector<nccl_communicator>& group) noexcept {
    for (nccl_communicator& c : group) c.cancel();
}

}  // namespace llmrt::cuda

#endif  // LLMRT_HAVE_NCCL
