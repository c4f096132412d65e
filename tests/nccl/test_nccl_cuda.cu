// The CUDA backend's collectives over NCCL (cuda/nccl.cuh): all_reduce and all_gather graphs on N
// GPUs, one thread per rank, against the CPU backend's in-process group (the tensor-parallel
// llama on several GPUs: test_model_tp_cuda.cu). Cases that need more GPUs than the machine has
// skip, passing with a message.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <span>
#include <vector>

#include <llmrt/comm/local.hpp>
#include <llmrt/comm/rank_threads.hpp>
#include <llmrt/cpu/backend.hpp>
#include <llmrt/cuda/backend.cuh>
#include <llmrt/cuda/nccl.cuh>
#include <llmrt/cuda/nccl_lsa.cuh>  // brings CUDA's namespace ::cuda: this file says llmrt::cuda::
#include <llmrt/graph/executor.hpp>
#include <llmrt/model/model.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/measures.hpp>

#include "../graph/collective_fixtures.hpp"
#include "../model/model_fixtures.hpp"
#include "gpus.hpp"

#ifndef LLMRT_HAVE_NCCL
#error "tests/nccl builds only with llmrt::nccl"
#endif

using namespace llmrt;

namespace {

using test::device_count;

// fn(rank's communicator) on one thread per GPU of a group over devices 0 .. ranks − 1
// (comm/rank_threads.hpp); a rank that fails aborts the group, and its error is rethrown once
// every thread's call has ended.
void on_gpus(int32_t ranks, const std::function<void(const llmrt::cuda::nccl_communicator&)>& fn) {
    std::vector<llmrt::cuda::nccl_communicator> group = llmrt::cuda::nccl_local_group(ranks);
    comm::rank_threads threads(ranks, [&] { llmrt::cuda::cancel_nccl_group(group); });
    threads.run([&](int32_t r) { fn(group[std::size_t(r)]); });
}

llmrt::cuda::backend_options rank_options(const llmrt::cuda::nccl_communicator& c) {
    llmrt::cuda::backend_options o;
    o.device = c.device();
    o.nccl = &c;
    return o;
}

std::vector<float> rank_values(int32_t r, int64_t n) { return testing::gaussian(n, 100 + uint64_t(r)); }

double nmse(std::span<const float> out, std::span<const float> ref) {
    return testing::nmse(out.data(), ref.data(), int64_t(ref.size()));
}

using test::gather_net;
using test::reduce_net;

// Every rank's y after running the net make(rank) makes, with that rank's values as x, on the
// CPU backend's in-process group of `ranks`.
template <class Make>
std::vector<std::vector<float>> on_cpu(int32_t ranks, int64_t n, Make&& make) {
    std::vector<std::vector<float>> got(static_cast<std::size_t>(ranks));
    comm::local_group group(ranks);
    comm::run_ranks(group, [&](comm::communicator& c) {
        auto net = make(c.rank());
        cpu::backend b({.communicator = &c});
        graph::executor ex(b, net.g);
        const auto x = rank_values(c.rank(), net.g[net.x].ne0 * n);
        ex.write(net.x, std::span<const float>(x));
        ex.run(n);
        std::vector<float> y(std::size_t(net.g[net.y].ne0 * n));
        ex.read(net.y, std::span<float>(y));
        got[std::size_t(c.rank())] = y;
    });
    return got;
}

// The same on the GPUs, graphs captured (use_graphs) or launched op by op; device_all_reduce as
// llmrt::cuda::backend_options has it.
template <class Make>
std::vector<std::vector<float>> on_cuda(int32_t ranks, int64_t n, bool use_graphs, Make&& make,
                                        llmrt::cuda::device_all_reduce_factory device_all_reduce = nullptr) {
    std::vector<std::vector<float>> got(static_cast<std::size_t>(ranks));
    on_gpus(ranks, [&](const llmrt::cuda::nccl_communicator& c) {
        auto net = make(c.rank());
        llmrt::cuda::backend_options o = rank_options(c);
        o.use_graphs = use_graphs;
        o.device_all_reduce = device_all_reduce;
        llmrt::cuda::backend b(o);
        graph::executor ex(b, net.g);
        const auto x = rank_values(c.rank(), net.g[net.x].ne0 * n);
        std::vector<float> y(std::size_t(net.g[net.y].ne0 * n));
        for (int repeat = 0; repeat < 2; ++repeat) {  // a replay of the same graph gives the same result
            ex.write(net.x, std::span<const float>(x));
            ex.run(n);
            ex.read(net.y, std::span<float>(y));
        }
        got[std::size_t(c.rank())] = y;
    });
    return got;
}

int32_t max_ranks() { return device_count() < 4 ? device_count() : 4; }

}  // namespace

TEST_CASE("nccl: all_reduce on N GPUs equals the CPU group's sum, the same bits on every rank") {
    LLMRT_NEEDS_GPUS(2);
    const int64_t ne0 = 300;
    for (int32_t ranks = 2; ranks <= max_ranks(); ++ranks)
        for (int64_t n : {1, 3, 4})
            for (bool use_graphs : {true, false}) {
                CAPTURE(ranks);
                CAPTURE(n);
                CAPTURE(use_graphs);
                auto make = [&](int32_t) { return reduce_net(ne0, ranks); };
                const auto expected = on_cpu(ranks, n, make);
                const auto got = on_cuda(ranks, n, use_graphs, make);
                for (std::size_t r = 0; r < got.size(); ++r) {
                    REQUIRE(got[r].size() == expected[0].size());
                    CHECK(test::same_bits(got[r], got[0]));
                    const double e = nmse(got[r], expected[0]);
                    CHECK(e < 1e-12);
                    if (ranks == 2) CHECK(test::same_bits(got[r], expected[0]));  // a + b = b + a
                }
            }
}

#if defined(LLMRT_HAVE_NCCL_DEVICE_API)
// Every rank's y from lsa_all_reduce run directly (no graph, no backend), y poisoned first.
std::vector<std::vector<float>> lsa_direct(int32_t ranks, std::size_t count) {
    std::vector<std::vector<float>> got(static_cast<std::size_t>(ranks));
    on_gpus(ranks, [&](const llmrt::cuda::nccl_communicator& c) {
        LLMRT_CUDA_CHECK(cudaSetDevice(c.device()));
        std::string why;
        const auto reduce = llmrt::cuda::make_lsa_all_reduce(c, count, why);
        check(reduce != nullptr, errc::device_error, [&] { return "make_lsa_all_reduce refused: " + why; });
        const auto x = rank_values(c.rank(), int64_t(count));
        float *dx = nullptr, *dy = nullptr;
        LLMRT_CUDA_CHECK(cudaMalloc(&dx, count * sizeof(float)));
        LLMRT_CUDA_CHECK(cudaMalloc(&dy, count * sizeof(float)));
        LLMRT_CUDA_CHECK(cudaMemcpy(dx, x.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        LLMRT_CUDA_CHECK(cudaMemset(dy, 0xff, count * sizeof(float)));  // NaN
        cudaStream_t stream = nullptr;
        LLMRT_CUDA_CHECK(cudaStreamCreate(&stream));
        for (int call = 0; call < 3; ++call) reduce->run(dx, dy, count, stream, {});  // the slots reused
        LLMRT_CUDA_CHECK(cudaStreamSynchronize(stream));
        std::vector<float> y(count);
        LLMRT_CUDA_CHECK(cudaMemcpy(y.data(), dy, count * sizeof(float), cudaMemcpyDeviceToHost));
        cudaStreamDestroy(stream);
        cudaFree(dx);
        cudaFree(dy);
        got[std::size_t(c.rank())] = y;
    });
    return got;
}
#endif

TEST_CASE("nccl: lsa_all_reduce alone sums every rank's values in rank order, the same bits on every rank") {
    LLMRT_NEEDS_GPUS(2);
#if !defined(LLMRT_HAVE_NCCL_DEVICE_API)
    MESSAGE("skipped: this build's NCCL has no nccl_device.h");
#else
    for (std::size_t count : {std::size_t(1), std::size_t(300), std::size_t(8192), std::size_t(3 * 8192 + 5)})
        for (int32_t ranks = 2; ranks <= max_ranks(); ++ranks) {
            CAPTURE(count);
            CAPTURE(ranks);
            std::vector<float> expected = rank_values(0, int64_t(count));
            for (int32_t r = 1; r < ranks; ++r) {
                const auto v = rank_values(r, int64_t(count));
                for (std::size_t i = 0; i < count; ++i) expected[i] += v[i];
            }
            const auto got = lsa_direct(ranks, count);
            for (std::size_t r = 0; r < got.size(); ++r) CHECK(test::same_bits(got[r], expected));
        }
#endif
}

TEST_CASE("nccl: all_reduce over NCCL's device API gives the CPU group's bits on every rank (both add in rank order)") {
    LLMRT_NEEDS_GPUS(2);
#if !defined(LLMRT_HAVE_NCCL_DEVICE_API)
    MESSAGE("skipped: this build's NCCL has no nccl_device.h (the backend keeps ncclAllReduce)");
#else
    for (int64_t ne0 : {int64_t(300), int64_t(8192)})
        for (int32_t ranks = 2; ranks <= max_ranks(); ++ranks)
            for (int64_t n : {1, 3})
                for (bool use_graphs : {true, false}) {
                    CAPTURE(ne0);
                    CAPTURE(ranks);
                    CAPTURE(n);
                    CAPTURE(use_graphs);
                    auto make = [&](int32_t) { return reduce_net(ne0, ranks); };
                    const auto expected = on_cpu(ranks, n, make);
                    const auto got = on_cuda(ranks, n, use_graphs, make, llmrt::cuda::make_lsa_all_reduce);
                    for (std::size_t r = 0; r < got.size(); ++r) CHECK(test::same_bits(got[r], expected[0]));
                }
#endif
}

TEST_CASE("nccl: all_gather on N GPUs equals the CPU group's, bit for bit, slices even and uneven") {
    LLMRT_NEEDS_GPUS(2);
    for (int32_t ranks = 2; ranks <= max_ranks(); ++ranks)
        for (int64_t total : {int64_t(322), int64_t(321), int64_t(7)})
            for (int64_t n : {1, 3, 4})
                for (bool use_graphs : {true, false}) {
                    CAPTURE(ranks);
                    CAPTURE(total);
                    CAPTURE(n);
                    CAPTURE(use_graphs);
                    auto make = [&](int32_t rank) { return gather_net(total, ranks, rank); };
                    const auto expected = on_cpu(ranks, n, make);
                    const auto got = on_cuda(ranks, n, use_graphs, make);
                    for (const auto& g : got) CHECK(test::same_bits(g, expected[0]));
                }
}

TEST_CASE("nccl: collectives without a communicator of their size are refused at prepare, naming both") {
    LLMRT_NEEDS_GPUS(1);
    reduce_net two(8, 2);
    llmrt::cuda::backend alone;
    CHECK_THROWS_WITH_AS(graph::executor(alone, two.g), doctest::Contains("none given"), llmrt::error);
    reduce_net one(8, 1);  // a group of one rank copies, as on the CPU
    graph::executor ex(alone, one.g);
    const auto x = rank_values(0, 8 * 2);
    std::vector<float> y(x.size());
    ex.write(one.x, std::span<const float>(x));
    ex.run(2);
    ex.read(one.y, std::span<float>(y));
    CHECK(test::same_bits(y, x));
    if (device_count() < 2) {
        MESSAGE("skipped the group-size case: needs 2 CUDA devices");
        return;
    }
    on_gpus(2, [&](const llmrt::cuda::nccl_communicator& c) {
        reduce_net three(8, 3);
        llmrt::cuda::backend b(rank_options(c));
        CHECK_THROWS_WITH_AS(graph::executor(b, three.g), doctest::Contains("runs over 3 ranks; the backend's NCCL communicator has 2"),
                             llmrt::error);
        gather_net wrong(9, 2, 1 - c.rank());  // the other rank's slice: 5 and 4 elements
        CHECK_THROWS_WITH_AS(graph::executor(b, wrong.g), doctest::Contains("elements per column from rank"), llmrt::error);
        llmrt::cuda::backend_options other = rank_options(c);
        other.device = 1 - c.device();
        llmrt::cuda::backend elsewhere(other);
        CHECK_THROWS_WITH_AS(graph::executor(elsewhere, two.g), doctest::Contains("is on device"), llmrt::error);
    });
}
