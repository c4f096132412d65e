// top_k over long columns on Vulkan (vulkan/ops/top_k.hpp, shaders/ops/top_k_wide.comp: a
// vocabulary's logits) against cpu::top_k, id for id: fresh random columns with many ties, signed
// zeros, infinities and NaN where cpu::top_k's scans have their quirks (NaN at index 0 followed by
// a value ranked anywhere, NaN elsewhere, fewer numbers than k, no numbers at all), lengths that
// are not multiples of the work-group or the slice, k from 1 to the wide path's 1024. The ids are
// poisoned (-1) before every run. Like the other tests of tests/graph_vulkan, they run on lavapipe
// in CI, whose shader loops end after 65535 iterations: the old per-column scan could not take
// these columns at all.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

#include <llmrt/cpu/ops.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/vulkan/backend.hpp>

#include "../vulkan/vulkan_test_device.hpp"
#include "../graph/top_k_fixtures.hpp"
#include "side_by_side.hpp"

using namespace llmrt;

namespace {

using namespace test::top_k_columns;
using test::input_of;
using test::side_by_side;

// top_k(x, k) of `tokens` columns of n values on Vulkan against cpu::top_k, the ids poisoned first.
void check_top_k(vulkan::context& ctx, int64_t n, int64_t k, std::initializer_list<int64_t> runs) {
    CAPTURE(n);
    CAPTURE(k);
    int64_t max_batch = 1;
    for (int64_t tokens : runs) max_batch = std::max(max_batch, tokens);
    graph::graph g(max_batch);
    const auto in = g.input("x", qtype::f32, n);
    const auto ids = g.top_k(in, k);
    g.mark_output(ids);
    side_by_side s(ctx, g);
    for (int64_t tokens : runs) {
        CAPTURE(tokens);
        const std::vector<float> x = columns(n, k, tokens, uint64_t(n * 131 + k * 7 + tokens));
        std::vector<int32_t> want(std::size_t(k * tokens));
        cpu::top_k(x.data(), want.data(), n, k, tokens);
        s.poison(ids);
        s.run({input_of(in, x)}, tokens);
        check_picks(s.read_vk<int32_t>(ids, std::size_t(k * tokens)), want, k, tokens);
    }
}

}  // namespace

TEST_CASE("top_k of a vocabulary-long column on Vulkan picks cpu::top_k's ids, ties, signed zeros, infinities and NaN included") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    // Llama 3's vocabulary: 32 slices of 4096, the last one partial; every kind of column once.
    for (int64_t k : {int64_t(1), int64_t(40), int64_t(64), int64_t(1000)}) check_top_k(ctx, 128256, k, {kinds, 2});
}

TEST_CASE("top_k of columns just past the per-column scan's 256 values, and of one slice and a value, picks cpu::top_k's ids") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    // 257 and 300: one work-group reads the column itself; 4097: two slices, the second of one
    // value (fewer than k keys, zeros after them).
    for (int64_t n : {int64_t(257), int64_t(300), int64_t(4097)})
        for (int64_t k : {int64_t(1), int64_t(40), int64_t(64), int64_t(1000)})
            if (k <= n) check_top_k(ctx, n, k, {kinds, 1});
}

TEST_CASE("top_k on Vulkan takes k up to 1024 and k = n, with cpu::top_k's ids") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    check_top_k(ctx, 300, 300, {kinds});      // the whole column
    check_top_k(ctx, 1024, 1024, {kinds});    // the whole column at the largest k
    check_top_k(ctx, 8193, 1024, {kinds, 3});  // three slices, the last of one value
}

TEST_CASE("top_k of long columns records a slice and a merge dispatch, of one slice only the merge, of short ones the scan") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    struct shape {
        int64_t n, k;
        std::size_t dispatches;
        bool scratch;
    };
    for (const shape& sh : {shape{128256, 64, 2, true}, shape{4096, 64, 1, false}, shape{256, 8, 1, false}}) {
        CAPTURE(sh.n);
        graph::graph g(4);
        const auto x = g.input("x", qtype::f32, sh.n);
        const auto ids = g.top_k(x, sh.k);
        g.mark_output(ids);
        vulkan::backend vk_backend(ctx);
        graph::executor<vulkan::backend> ex(vk_backend, g, {.reuse_memory = false});
        CHECK((vk_backend.scratch_bytes(g, g[ids]) > 0) == sh.scratch);
        const auto planned = vk_backend.prepare(ex.get_graph(), ex.get_plan());
        CHECK(planned.stats(4).dispatches == sh.dispatches);
        CHECK(planned.stats(4).barriers == sh.dispatches - 1);
    }
}
