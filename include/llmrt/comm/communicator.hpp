// comm::communicator: the collectives a tensor-parallel group of ranks runs over host floats, what
// the CPU backend's all_reduce and all_gather nodes call (cpu::backend_options::communicator).
//
// Every rank calls the same collectives in the same order (each rank's graph holds the same
// collective nodes, and the planner orders structurally equal graphs alike). A collective returns
// on a rank once every rank has taken part; a failed one (counts that disagree between ranks, a
// group aborted because one rank failed elsewhere) raises llmrt::error on every rank it reaches,
// never a hang or a partial result.
//
//   all_reduce(data, count)    data (count floats) becomes Σ over the ranks of their data, added
//                              in rank order ((x₀ + x₁) + x₂) + ...: the same bits on every rank,
//                              whatever the timing. Every rank passes the same count.
//   all_gather(send, count, recv, recv_count)
//                              recv becomes the ranks' send buffers one after another in rank
//                              order (rank r's `count` floats after those of ranks 0..r−1); counts
//                              may differ between ranks, recv_count is their sum on every rank.
//
// comm/local.hpp implements it for N ranks on N threads of one process. The CUDA backend does
// not take this interface (it is host memory): cuda::backend_options::nccl takes an NCCL
// communicator (cuda/nccl.cuh: one ncclComm_t per GPU, from ncclCommInitAll or ncclCommInitRank)
// and runs the same graph nodes as NCCL calls on the backend's stream, captured into the
// forward's CUDA graph like any kernel:
//   all_reduce  ncclAllReduce(x, y, count, ncclFloat, ncclSum, comm, stream); NCCL's ring and tree
//               orders are fixed for a given communicator and size, so every run gives the same
//               bits, though not the bits of this interface's rank order (the tests compare TP
//               against one GPU within an NMSE, not bit for bit)
//   all_gather  ncclAllGather of every rank's slice padded to ceil(total / ranks) floats per
//               column into scratch, then one kernel (cuda/ops/gather.cuh) that drops the padding
//               and interleaves the columns (y[:, t] = x₀[:, t] ‖ x₁[:, t] ‖ ...), as the CPU
//               backend does on the host
// The nodes' `ranks` is checked against the communicator's size when the graph is prepared.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>

namespace llmrt::comm {

class communicator {
public:
    virtual ~communicator() = default;

    virtual int32_t rank() const noexcept = 0;  // 0 .. size() − 1
    virtual int32_t size() const noexcept = 0;  // ranks in the group

    virtual void all_reduce(float* data, std::size_t count) = 0;
    virtual void all_gather(const float* send, std::size_t count, float* recv, std::size_t recv_count) = 0;

protected:
    communicator() = default;
    communicator(const communicator&) = default;
    communicator& operator=(const communicator&) = default;
};

}  // namespace llmrt::comm
