// What the CUDA backend's steps (steps.cuh) read about the program: a plan step with its device
// addresses resolved, and the graph, plan and buffers of the program.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "llmrt/cuda/activations.cuh"
#include "llmrt/cuda/nccl.cuh"
#include "llmrt/cuda/device_all_reduce.cuh"
#include "llmrt/cuda/views.cuh"
#include "llmrt/graph/plan.hpp"

namespace llmrt::cuda::steps {

// Where a node's columns are: its address and the floats from one column to the next.
struct columns_at {
    std::byte* data = nullptr;
    int64_t stride = 0;
    float* f(int64_t c = 0) const { return reinterpret_cast<float*>(data) + c * stride; }
};

// A plan step with everything its launches need resolved.
struct resolved {
    const graph::step* st = nullptr;
    std::byte* scratch = nullptr;
    std::size_t scratch_bytes = 0;
    std::byte* rounded = nullptr;           // the records this step writes (st->rounds)
    int64_t rounded_chunk_cols = 8;         // their chunks (ops/records.cuh): 1 for an experts step
    const std::byte* rounded_in = nullptr;  // matvec, experts: the records its producer wrote
    const std::byte* concatenated = nullptr;  // matvec, experts: the products' weights as one matrix (null: apart)
    const std::byte* concatenated_bias = nullptr;  // matvec, experts: the products' biases side by side (null: none)
    const resolved* carried = nullptr;        // matvec, top_k: the step it carries (st->carries)
};

// What a step's launches read about the program: the graph, the plan and addresses.
struct context {
    const graph::graph* g;
    const graph::plan* p;
    const std::vector<std::byte*>* address;
    void* records;  // the program's own records (matvec steps and mul_mats that quantize x)
    std::size_t records_bytes;
    int32_t* counters;  // split attention's counters (zero between launches)
    std::size_t counter_bytes;
    cudaStream_t stream;
    launch_options launch;
    const nccl_communicator* nccl = nullptr;  // the collectives' group (null: one rank)
    const device_all_reduce* device_reduce = nullptr;  // all-reduces in a kernel (null: ncclAllReduce)

    const graph::node& node(int32_t id) const { return g->nodes()[std::size_t(id)]; }
    bool kept(int32_t id) const { return p->where[std::size_t(id)] != graph::storage::fused; }
    std::byte* at(int32_t id) const { return (*address)[std::size_t(id)]; }
    float* f(int32_t id) const { return reinterpret_cast<float*>(at(id)); }
    float* f_or_null(int32_t id) const { return kept(id) ? f(id) : nullptr; }
    columns_at columns(int32_t id) const { return {at(id), p->col_stride[std::size_t(id)]}; }
    int64_t cols(int32_t id, int64_t n) const { return node(id).batched ? n : node(id).ne1; }
};

}  // namespace llmrt::cuda::steps
