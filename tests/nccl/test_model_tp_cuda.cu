// The tensor-parallel llama on several GPUs of one host (model/tensor_parallel_llama.hpp over
// cuda::nccl_local_group): its logits and greedy ids against the single GPU's, at 2 GPUs and at
// 4 where the machine has them, and what a failed rank does to the caller. Cases that need more
// GPUs than the machine has skip, passing with a message.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <llmrt/comm/rank_threads.hpp>
#include <llmrt/cuda/backend.cuh>
#include <llmrt/cuda/nccl.cuh>
#include <llmrt/graph/executor.hpp>
#include <llmrt/model/model.hpp>
#include <llmrt/model/tensor_parallel_llama.hpp>
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

// The group sizes to try: 2, and 4 where the machine has 4 GPUs.
std::vector<int32_t> gpu_counts() {
    std::vector<int32_t> v{2};
    if (device_count() >= 4) v.push_back(4);
    return v;
}

using test::tp_case;
using test::tp_cases;
using test::tp_shape;

constexpr model::llama_options base_options{.n_ctx = 32, .max_batch = 8};

// A group over devices 0 .. ranks − 1 and the model on it; the group outlives the model.
struct on_gpus {
    std::vector<cuda::nccl_communicator> group;
    model::tensor_parallel_llama<cuda::backend> m;

    on_gpus(int32_t ranks, const std::shared_ptr<const gguf::file>& file)
        : group(cuda::nccl_local_group(ranks)),
          m(
              ranks,
              [this](int32_t r) {
                  cuda::backend_options o;
                  o.device = group[std::size_t(r)].device();
                  o.nccl = &group[std::size_t(r)];
                  return std::make_unique<cuda::backend>(o);
              },
              file, base_options, [this] { cuda::cancel_nccl_group(group); }) {}
};

using test::prompt_then_tokens;

double nmse(std::span<const float> out, std::span<const float> ref) {
    return testing::nmse(out.data(), ref.data(), int64_t(ref.size()));
}

}  // namespace

// NCCL's ring adds the ranks' partial sums in an order of its own, and mmvq rounds the
// activations through Q8_1 on each rank's slice as on the whole: the logits agree with one GPU's
// within rounding (the CPU test, in float activations and rank order, holds 1e-10; here 1e-6).
TEST_CASE("the tensor-parallel llama on 2 and 4 GPUs gives the single GPU's logits within NMSE 1e-6, the same bits on every rank") {
    LLMRT_NEEDS_GPUS(2);
    for (const tp_case& c : tp_cases()) {
        CAPTURE(c.label);
        const auto file = test::model_file(c.shape, qtype::q8_0, 7);
        std::vector<float> expected;
        {
            cuda::backend single_backend;
            model::llama_model<cuda::backend> single(single_backend, file, base_options);
            expected = prompt_then_tokens(single);
        }
        for (int32_t ranks : gpu_counts()) {
            CAPTURE(ranks);
            on_gpus tp(ranks, file);
            const auto got = prompt_then_tokens(tp.m);
            REQUIRE(got.size() == expected.size());
            for (int32_t r = 1; r < ranks; ++r) CHECK(test::same_bits(tp.m.logits(r), tp.m.logits(0)));
            const double e = nmse(got, expected);
            MESSAGE(c.label << ", " << ranks << " GPUs: logits NMSE " << e);
            CHECK(e < 1e-6);
        }
    }
}

TEST_CASE("greedy ids of 16 tokens are the same on 1, 2 and 4 GPUs") {
    LLMRT_NEEDS_GPUS(2);
    for (const tp_case& c : tp_cases()) {
        CAPTURE(c.label);
        const auto file = test::model_file(c.shape, qtype::q8_0, 11);
        std::vector<int32_t> expected;
        {
            cuda::backend single_backend;
            model::llama_model<cuda::backend> single(single_backend, file, base_options);
            expected = model::generate_greedy(single, std::span<const int32_t>(test::model_prompt), 16);
        }
        for (int32_t ranks : gpu_counts()) {
            CAPTURE(ranks);
            on_gpus tp(ranks, file);
            CHECK(model::generate_greedy(tp.m, std::span<const int32_t>(test::model_prompt), 16) == expected);
            tp.m.truncate(0);  // and again from the start: the replayed graphs give the same ids
            CHECK(model::generate_greedy(tp.m, std::span<const int32_t>(test::model_prompt), 16) == expected);
        }
    }
}

TEST_CASE("a bad token given to the tensor-parallel llama is an llmrt::error on the caller that leaves the model usable") {
    LLMRT_NEEDS_GPUS(2);
    const auto file = test::model_file(tp_shape("llama"), qtype::q8_0, 11);
    on_gpus tp(2, file);
    const int32_t bad = 100000, position = 0;
    CHECK_THROWS_WITH_AS(tp.m.forward(std::span<const int32_t>(&bad, 1), std::span<const int32_t>(&position, 1)),
                         doctest::Contains("outside the vocabulary"), llmrt::error);
    CHECK(model::generate_greedy(tp.m, std::span<const int32_t>(test::model_prompt), 4).size() == 4);
}

// Rank 1 throws before its forward; rank 0's forward waits in ncclAllReduce for it until the
// failed rank aborts the group (cuda::cancel_nccl_group), and the caller gets rank 1's error.
// Skipped unless asked for (--no-skip): on 2 H200s with NCCL 2.28.3, cancel() as ncclCommAbort
// woke rank 0 but never returned itself (it waits for the CUDA graphs that captured the
// communicator, which live until the ranks are finished), so the test hung; cancel() is now
// ncclCommRevoke (NCCL >= 2.28), which has not yet run here.
TEST_CASE("a rank that fails while the other waits in NCCL gives the caller its llmrt::error, not a hang" * doctest::skip()) {
    LLMRT_NEEDS_GPUS(2);
    std::vector<cuda::nccl_communicator> group = cuda::nccl_local_group(2);
    std::atomic<bool> rank0_returned{false};
    {
        std::vector<std::unique_ptr<cuda::backend>> backends(2);
        std::vector<std::unique_ptr<graph::executor<cuda::backend>>> executors(2);
        comm::rank_threads threads(2, [&] { cuda::cancel_nccl_group(group); });
        test::reduce_net net(64, 2);
        threads.run([&](int32_t r) {
            cuda::backend_options o;
            o.device = group[std::size_t(r)].device();
            o.nccl = &group[std::size_t(r)];
            backends[std::size_t(r)] = std::make_unique<cuda::backend>(o);
            executors[std::size_t(r)] = std::make_unique<graph::executor<cuda::backend>>(*backends[std::size_t(r)], net.g);
            // One run on both ranks first: NCCL connects its peers and the graph is captured,
            // so that below rank 0 waits in a replayed kernel, where an abort reaches it.
            const std::vector<float> x(64, 1.0f);
            std::vector<float> y(64);
            executors[std::size_t(r)]->write(net.x, std::span<const float>(x));
            executors[std::size_t(r)]->run(1);
            executors[std::size_t(r)]->read(net.y, std::span<float>(y));
        });
        CHECK_THROWS_WITH_AS(threads.run([&](int32_t r) {
            if (r == 1) throw error(errc::device_error, "rank 1 lost its device");
            const std::vector<float> x(64, 1.0f);
            std::vector<float> y(64);
            auto& ex = *executors[0];
            ex.write(net.x, std::span<const float>(x));
            ex.run(1);
            try {
                ex.read(net.y, std::span<float>(y));
            } catch (const llmrt::error&) {  // the aborted collective may report a failure of its own
            }
            rank0_returned = true;
        }),
                             doctest::Contains("rank 1 lost its device"), llmrt::error);
        CHECK(rank0_returned);
        CHECK(threads.failed());
        CHECK(group[0].aborted());
        CHECK_THROWS_WITH_AS(threads.run([](int32_t) {}), doctest::Contains("the group was cancelled when rank 1 failed"),
                             llmrt::error);
        threads.finish([&](int32_t r) {
            executors[std::size_t(r)].reset();
            backends[std::size_t(r)].reset();
        });
    }
}
