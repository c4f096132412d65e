// top_k over columns longer than a warp's registers hold (cuda/ops/top_k_wide.cuh: a vocabulary's
// logits) against the CPU reference: fresh random columns with many ties, signed zeros,
// infinities and NaN where cpu::top_k's scans have their quirks (NaN at index 0 followed by a
// value ranked anywhere, NaN elsewhere, fewer numbers than k); the picks, and the expert_weights
// the op fills with every expert_norm, against the CPU's and (bit for bit) the device's own
// expert_weights kernel; with scratch, without it, and through a graph on both backends. Every
// output is poisoned first. Every case skips, passing with a message, on a machine without a
// CUDA device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <llmrt/cpu/ops.hpp>
#include <llmrt/cuda/ops/moe.cuh>
#include <llmrt/testing/cuda.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/poison.hpp>

#include "../graph/top_k_fixtures.hpp"
#include "cuda_pair.cuh"

using namespace llmrt;

using testing::gaussian;
using test::carrying_steps;
using test::exact_ops;
using test::pair_of_executors;

namespace {

using testing::device_vector;
using namespace test::top_k_columns;

// Equal, or both NaN; softmax weights (the CPU's std::exp, the device's expf) within 1e-6.
bool close(float got, float want, graph::expert_norm norm) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
    if (norm != graph::expert_norm::softmax) return got == want;
    return std::fabs(got - want) <= 1e-6f * std::fmax(1.0f, std::fabs(want));
}

const graph::expert_norm all_norms[] = {graph::expert_norm::none, graph::expert_norm::sum, graph::expert_norm::softmax};

}  // namespace

TEST_CASE("top_k over a vocabulary-sized column on CUDA equals the CPU's picks, and its weights the expert_weights kernel's") {
    LLMRT_NEEDS_CUDA_DEVICE();
    // k = 1024: the wide path's largest (rounds of merging where the column is split); 1025: past
    // it, one warp per column.
    for (int64_t n : {int64_t(257), int64_t(4097), int64_t(128256), int64_t(150001)})
        for (int64_t k : {int64_t(1), int64_t(40), int64_t(64), int64_t(256), int64_t(1024), int64_t(1025)})
            for (int64_t cols : {int64_t(1), int64_t(3), int64_t(17)}) {
                if (k > n) continue;
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(cols);
                const std::vector<float> x = columns(n, k, cols, uint64_t(n * 131 + k * 7 + cols));
                std::vector<int32_t> want(std::size_t(k * cols));
                cpu::top_k(x.data(), want.data(), n, k, cols);
                device_vector<float> x_d(x), w(std::size_t(k * cols)), w_ref(std::size_t(k * cols));
                device_vector<int32_t> ids(std::size_t(k * cols));
                const std::size_t scratch_bytes = cuda::ops::top_k_scratch_bytes(n, k, cols);
                CHECK((scratch_bytes > 0) == (n > 4096 && k <= cuda::ops::top_k_wide_max_k));
                device_vector<std::byte> scratch(scratch_bytes);
                // The picks alone, then with weights of every norm.
                for (int weighed = 0; weighed <= 3; ++weighed) {
                    const graph::expert_norm norm = all_norms[weighed == 0 ? 0 : weighed - 1];
                    CAPTURE(weighed);
                    ids.fill_bytes(0xff);  // -1
                    testing::poison_device(w.ptr, k * cols);
                    cuda::ops::top_k(x_d.ptr, ids.ptr, n, k, cols, nullptr, {}, weighed ? w.ptr : nullptr, norm, nullptr,
                                     scratch_bytes ? scratch.ptr : nullptr, scratch_bytes);
                    const std::vector<int32_t> got = ids.download();
                    check_picks(got, want, k, cols);
                    if (!weighed) continue;
                    const std::vector<float> weights = w.download();
                    const std::vector<int64_t> unwritten = testing::unwritten(weights.data(), k * cols);
                    CHECK_MESSAGE(unwritten.empty(), testing::describe_unwritten(unwritten));
                    // The same ids through expert_weights' own kernel (weigh_experts): the same bits.
                    testing::poison_device(w_ref.ptr, k * cols);
                    cuda::ops::expert_weights(x_d.ptr, ids.ptr, w_ref.ptr, n, k, cols, norm, nullptr);
                    const std::vector<float> ref = w_ref.download();
                    CHECK(std::memcmp(weights.data(), ref.data(), weights.size() * sizeof(float)) == 0);
                    // And the CPU's.
                    std::vector<float> cpu_w(std::size_t(k * cols));
                    cpu::expert_weights(x.data(), want.data(), cpu_w.data(), n, k, cols, norm);
                    std::size_t apart = 0;
                    for (std::size_t i = 0; i < cpu_w.size(); ++i) apart += !close(weights[i], cpu_w[i], norm);
                    CHECK(apart == 0);
                }
            }
}

TEST_CASE("top_k of long columns without scratch takes a block per column and picks the same") {
    LLMRT_NEEDS_CUDA_DEVICE();
    // 150001 values: 10 rounds of 16384 for k = 1024, 1 and more for k = 40.
    for (int64_t k : {int64_t(40), int64_t(256), int64_t(1024)}) {
        CAPTURE(k);
        const int64_t n = 150001, cols = 7;
        const std::vector<float> x = columns(n, k, cols, 90 + uint64_t(k));
        std::vector<int32_t> want(std::size_t(k * cols));
        cpu::top_k(x.data(), want.data(), n, k, cols);
        device_vector<float> x_d(x);
        device_vector<int32_t> ids(std::size_t(k * cols));
        ids.fill_bytes(0xff);
        cuda::ops::top_k(x_d.ptr, ids.ptr, n, k, cols, nullptr);
        check_picks(ids.download(), want, k, cols);
    }
}

TEST_CASE("top_k refuses a wide path's k past its limit and scratch too small for the split, naming them") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t n = 150001, cols = 2;
    device_vector<float> x(std::size_t(n * cols));
    device_vector<int32_t> ids(std::size_t(1025 * cols));
    CHECK_THROWS_WITH_AS(cuda::ops::top_k_wide(x.ptr, ids.ptr, n, 1025, cols, nullptr, 0, nullptr),
                         doctest::Contains("1 <= k <= min(n, 1024)"), llmrt::error);
    const std::size_t need = cuda::ops::top_k_scratch_bytes(n, 40, cols);
    REQUIRE(need > 8);
    device_vector<std::byte> scratch(need);
    const std::string needed = std::to_string(need) + " bytes, 8-byte aligned, needed";
    CHECK_THROWS_WITH_AS(cuda::ops::top_k(x.ptr, ids.ptr, n, 40, cols, nullptr, {}, nullptr, graph::expert_norm::none, nullptr,
                                          scratch.ptr, need - 8),
                         doctest::Contains(needed.c_str()), llmrt::error);
}

TEST_CASE("a graph's top_k of vocabulary-long columns carrying expert_weights agrees with the CPU backend for every expert_norm") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (int64_t n : {int64_t(4097), int64_t(128256)})
        for (int64_t k : {int64_t(40), int64_t(256)})
            for (graph::expert_norm norm : all_norms) {
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(int(norm));
                graph::graph g(3);
                const auto x = g.input("x", qtype::f32, n);
                const auto ids = g.top_k(x, k);
                const auto w = g.expert_weights(x, ids, norm);
                g.mark_output(ids);
                g.mark_output(w);
                pair_of_executors ex(g);
                CHECK(carrying_steps(ex.gpu.get_plan()) == 1);  // top_k's launches write w
                for (int64_t tokens : {int64_t(1), int64_t(3)}) {
                    CAPTURE(tokens);
                    const std::vector<std::byte> poison(std::size_t(k * 3 * 4), std::byte{0xff});  // NaN, id -1
                    ex.gpu.write_bytes(ids, 0, poison.data(), poison.size());
                    ex.gpu.write_bytes(w, 0, poison.data(), poison.size());
                    // Numbers only (the nodes are compared by their error), ties and signed zeros.
                    ex.write(x, tied(n * 3, 7 + uint64_t(n + k + tokens)));
                    ex.run(tokens);
                    ex.check_nodes(tokens, exact_ops);
                    if (norm == graph::expert_norm::softmax) continue;  // the CPU's std::exp against expf
                    std::vector<float> a(std::size_t(k * tokens)), b(std::size_t(k * tokens));
                    ex.gpu.read(w, std::span<float>(a));
                    ex.cpu.read(w, std::span<float>(b));
                    CHECK(test::same_bits(a, b));
                }
            }
}
