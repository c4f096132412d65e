// Collectives: comm::local_group on its own, and the all_reduce / all_gather graph ops on the CPU
// backend with one executor per rank, each on its own thread.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <llmrt/comm/local.hpp>
#include <llmrt/comm/rank_threads.hpp>
#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/testing/generate.hpp>

#include "collective_fixtures.hpp"

using namespace llmrt;

namespace {

// Rank r's values: n gaussians of a seed of its own.
std::vector<float> rank_values(int32_t r, int64_t n) { return testing::gaussian(n, 100 + uint64_t(r)); }

// ((x₀ + x₁) + x₂) + ..., in float.
std::vector<float> rank_order_sum(int32_t ranks, int64_t n) {
    std::vector<float> sum = rank_values(0, n);
    for (int32_t r = 1; r < ranks; ++r) {
        const auto x = rank_values(r, n);
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += x[i];
    }
    return sum;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

using test::gather_net;
using test::reduce_net;

}  // namespace

TEST_CASE("all_reduce over 1, 2, 3 and 4 ranks gives every rank the sum taken in rank order, bit for bit") {
    for (int32_t ranks = 1; ranks <= 4; ++ranks)
        for (int64_t n : {1, 7, 1000}) {
            CAPTURE(ranks);
            CAPTURE(n);
            const auto expected = rank_order_sum(ranks, n);
            std::vector<std::vector<float>> got(static_cast<std::size_t>(ranks));
            comm::local_group group(ranks);
            comm::run_ranks(group, [&](comm::communicator& c) {
                std::vector<float> x;
                for (int repeat = 0; repeat < 3; ++repeat) {  // the group is reused call after call
                    x = rank_values(c.rank(), n);
                    c.all_reduce(x.data(), x.size());
                }
                got[std::size_t(c.rank())] = x;
            });
            for (const auto& g : got) CHECK(same_bits(g, expected));
        }
}

TEST_CASE("all_gather puts the ranks' buffers one after another in rank order, counts differing") {
    for (int32_t ranks = 1; ranks <= 4; ++ranks) {
        CAPTURE(ranks);
        std::vector<float> expected;
        for (int32_t r = 0; r < ranks; ++r) {
            const auto x = rank_values(r, 3 + r);
            expected.insert(expected.end(), x.begin(), x.end());
        }
        std::vector<std::vector<float>> got(static_cast<std::size_t>(ranks), std::vector<float>(expected.size()));
        comm::local_group group(ranks);
        comm::run_ranks(group, [&](comm::communicator& c) {
            const auto x = rank_values(c.rank(), 3 + c.rank());
            c.all_gather(x.data(), x.size(), got[std::size_t(c.rank())].data(), expected.size());
        });
        for (const auto& g : got) CHECK(same_bits(g, expected));
    }
}

TEST_CASE("the all_reduce op on the CPU backend sums each rank's columns in rank order, the same bits on every rank") {
    const int64_t ne0 = 37, n = 3;
    for (int32_t ranks = 1; ranks <= 4; ++ranks) {
        CAPTURE(ranks);
        const auto expected = rank_order_sum(ranks, ne0 * n);
        std::vector<std::vector<float>> got(static_cast<std::size_t>(ranks), std::vector<float>(std::size_t(ne0 * n)));
        comm::local_group group(ranks);
        comm::run_ranks(group, [&](comm::communicator& c) {
            reduce_net net(ne0, ranks);
            cpu::backend b({.communicator = &c});
            graph::executor ex(b, net.g);
            const auto x = rank_values(c.rank(), ne0 * n);
            ex.write(net.x, std::span<const float>(x));
            ex.run(n);
            ex.read(net.y, std::span<float>(got[std::size_t(c.rank())]));
        });
        for (const auto& g : got) CHECK(same_bits(g, expected));
    }
}

TEST_CASE("all_reduce and all_gather of one rank without a communicator copy their input") {
    cpu::backend b;
    reduce_net reduce(16, 1);
    graph::executor ex(b, reduce.g);
    const auto x = rank_values(0, 32);
    ex.write(reduce.x, std::span<const float>(x));
    ex.run(2);
    std::vector<float> y(32);
    ex.read(reduce.y, std::span<float>(y));
    CHECK(same_bits(y, x));

    gather_net gather(16, 1, 0);
    graph::executor gx(b, gather.g);
    gx.write(gather.x, std::span<const float>(x));
    gx.run(2);
    gx.read(gather.y, std::span<float>(y));
    CHECK(same_bits(y, x));
}

TEST_CASE("the all_gather op puts each column together from the ranks' slices, uneven slices included") {
    const int64_t total = 10, n = 3;  // slices of 10 over 3 ranks: 4, 3, 3
    for (int32_t ranks = 1; ranks <= 4; ++ranks) {
        CAPTURE(ranks);
        // Column c of the whole: rank r's column c at [shard_begin(r), shard_begin(r + 1)).
        std::vector<float> expected(std::size_t(total * n));
        for (int32_t r = 0; r < ranks; ++r) {
            const int64_t begin = graph::shard_begin(total, ranks, r), part = graph::shard_begin(total, ranks, r + 1) - begin;
            const auto x = rank_values(r, part * n);
            for (int64_t c = 0; c < n; ++c)
                for (int64_t i = 0; i < part; ++i)
                    expected[std::size_t(c * total + begin + i)] = x[std::size_t(c * part + i)];
        }
        std::vector<std::vector<float>> got(static_cast<std::size_t>(ranks), std::vector<float>(expected.size()));
        comm::local_group group(ranks);
        comm::run_ranks(group, [&](comm::communicator& c) {
            gather_net net(total, ranks, c.rank());
            cpu::backend b({.communicator = &c});
            graph::executor ex(b, net.g);
            const auto x = rank_values(c.rank(), net.g[net.x].ne0 * n);
            ex.write(net.x, std::span<const float>(x));
            ex.run(n);
            ex.read(net.y, std::span<float>(got[std::size_t(c.rank())]));
        });
        for (const auto& g : got) CHECK(same_bits(g, expected));
    }
}

TEST_CASE("shard_begin splits a dimension into slices of floor or ceil of total / ranks, in order") {
    CHECK(graph::shard_begin(10, 3, 0) == 0);
    CHECK(graph::shard_begin(10, 3, 1) == 4);
    CHECK(graph::shard_begin(10, 3, 2) == 7);
    CHECK(graph::shard_begin(10, 3, 3) == 10);
    CHECK(graph::shard_begin(320, 4, 2) == 160);
}

TEST_CASE("collectives with bad ranks or shapes are an llmrt::error naming what was wrong") {
    graph::graph g(2);
    const auto x = g.input("x", qtype::f32, 8);
    CHECK_THROWS_WITH_AS(g.all_reduce(x, 0), doctest::Contains("ranks = 0"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.all_gather(x, 8, 0), doctest::Contains("ranks >= 1"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.all_gather(x, 3, 4), doctest::Contains("at least one element per rank"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.all_gather(x, 10, 2), doctest::Contains("no rank's slice"), llmrt::error);
    const auto ids = g.input("ids", graph::i32_type, 1);
    CHECK_THROWS_WITH_AS(g.all_reduce(ids, 2), doctest::Contains("f32 activation"), llmrt::error);
    CHECK_THROWS_WITH_AS(comm::local_group(0), doctest::Contains("size 0"), llmrt::error);
    comm::local_group two(2);
    CHECK_THROWS_WITH_AS(two.rank(2), doctest::Contains("rank 2"), llmrt::error);
}

TEST_CASE("a graph whose collectives span another number of ranks than the backend's group is refused when prepared") {
    cpu::backend alone;
    reduce_net two(8, 2);
    CHECK_THROWS_WITH_AS(graph::executor(alone, two.g), doctest::Contains("communicator has 1 (none given"), llmrt::error);
    comm::local_group three(3);
    cpu::backend b({.communicator = &three.rank(0)});
    CHECK_THROWS_WITH_AS(graph::executor(b, two.g), doctest::Contains("runs over 2 ranks"), llmrt::error);
    // Rank 1 of 2 holds elements 5..9 of 10, not 4.
    comm::local_group pair(2);
    cpu::backend second({.communicator = &pair.rank(1)});
    graph::graph g(1);
    const auto x = g.input("x", qtype::f32, 4);
    g.mark_output(g.all_gather(x, 9, 2));  // rank 0's slice of 9 is 5, rank 1's 4: right for rank 1
    CHECK_NOTHROW(graph::executor(second, g));
    graph::graph h(1);
    h.mark_output(h.all_gather(h.input("x", qtype::f32, 5), 9, 2));
    CHECK_THROWS_WITH_AS(graph::executor(second, h), doctest::Contains("from rank 1"), llmrt::error);
}

TEST_CASE("ranks that disagree on a collective's count all get an llmrt::error, not a hang") {
    comm::local_group group(3);
    std::atomic<int> errors{0};
    CHECK_THROWS_WITH_AS(comm::run_ranks(group,
                                         [&](comm::communicator& c) {
                                             std::vector<float> x(c.rank() == 2 ? 5 : 4, 1.0f);
                                             try {
                                                 c.all_reduce(x.data(), x.size());
                                             } catch (const llmrt::error&) {
                                                 ++errors;
                                                 throw;
                                             }
                                         }),
                         doctest::Contains("every rank must reduce the same count"), llmrt::error);
    CHECK(errors == 3);
    comm::local_group gather(2);
    CHECK_THROWS_WITH_AS(comm::run_ranks(gather,
                                         [&](comm::communicator& c) {
                                             std::vector<float> x(2, 1.0f), y(c.rank() == 0 ? 4 : 3);
                                             c.all_gather(x.data(), x.size(), y.data(), y.size());
                                         }),
                         doctest::Contains("the ranks send 4 in all"), llmrt::error);
}

TEST_CASE("a rank that fails before a collective aborts the group: the others stop waiting, its own error is rethrown") {
    comm::local_group group(4);
    std::atomic<int> aborted{0};
    CHECK_THROWS_WITH_AS(comm::run_ranks(group,
                                         [&](comm::communicator& c) {
                                             if (c.rank() == 2) throw error(errc::invalid_argument, "rank 2 gave up");
                                             std::vector<float> x(8, 1.0f);
                                             try {
                                                 c.all_reduce(x.data(), x.size());
                                             } catch (const llmrt::error& e) {
                                                 if (std::string(e.what()).find("aborted") != std::string::npos) ++aborted;
                                                 throw;
                                             }
                                         }),
                         doctest::Contains("rank 2 gave up"), llmrt::error);
    CHECK(aborted == 3);
    CHECK(group.aborted());
}

TEST_CASE("rank_threads: a rank that fails while the others wait in a collective cancels the group; later runs name the first error") {
    comm::local_group group(3);
    comm::rank_threads threads(3, [&] { group.cancel(); });
    CHECK_THROWS_WITH_AS(threads.run([&](int32_t r) {
        if (r == 1) throw error(errc::device_error, "rank 1 lost its device");
        std::vector<float> x(8, 1.0f);
        group.rank(r).all_reduce(x.data(), x.size());  // waits for rank 1 until the cancel
    }),
                         doctest::Contains("rank 1 lost its device"), llmrt::error);
    CHECK(threads.failed());
    CHECK_THROWS_WITH_AS(threads.run([](int32_t) {}),
                         doctest::Contains("cancelled when rank 1 failed (rank 1 lost its device)"), llmrt::error);
    int finished = 0;
    threads.finish([&](int32_t) {
        static std::mutex m;
        const std::lock_guard<std::mutex> lock(m);
        ++finished;
    });
    CHECK(finished == 3);
}

TEST_CASE("rank_threads: an exception that is not an llmrt::error reaches the caller as one, naming the rank") {
    comm::rank_threads threads(2);
    CHECK_THROWS_WITH_AS(threads.run([](int32_t r) {
        if (r == 0) throw std::runtime_error("plain failure");
    }),
                         doctest::Contains("rank 0 of a tensor-parallel group failed: plain failure"), llmrt::error);
}
