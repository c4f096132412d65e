// The mixture-of-experts ops on the CPU backend (top_k, expert_weights, mul_mat_id,
// weighted_sum) against straightforward scalar formulas, outputs poisoned first; and the graph
// builder and executor refusing what they cannot run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/testing/generate.hpp>

#include "moe_fixtures.hpp"

using namespace llmrt;

namespace {

constexpr float poison = std::numeric_limits<float>::quiet_NaN();

// The k largest of a column by sorting (value descending, index ascending): the definition.
std::vector<int32_t> sorted_top_k(const float* x, int64_t n, int64_t k) {
    std::vector<int32_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
    order.resize(std::size_t(k));
    return order;
}

std::vector<int32_t> cpu_top_k(const std::vector<float>& x, int64_t n, int64_t k) {
    const int64_t cols = int64_t(x.size()) / n;
    std::vector<int32_t> y(std::size_t(k * cols), -7);
    cpu::top_k(x.data(), y.data(), n, k, cols);
    return y;
}

// What top_k is defined by: k scans, pick j the first index of the largest value among those
// after pick j - 1 in (value descending, index ascending) order; a scan that finds nothing picks j.
std::vector<int32_t> scanned_top_k(const float* x, int64_t n, int64_t k) {
    std::vector<int32_t> y;
    int64_t prev = -1;
    for (int64_t j = 0; j < k; ++j) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; ++i) {
            if (prev >= 0 && !(x[i] < x[prev] || (x[i] == x[prev] && i > prev))) continue;
            if (best < 0 || x[i] > x[best]) best = i;
        }
        if (best < 0) best = j;
        y.push_back(int32_t(best));
        prev = best;
    }
    return y;
}

}  // namespace

TEST_CASE("top_k picks what k scans of the column find, over long columns with ties, signed zeros, -inf and NaN") {
    const int64_t n = 5003, cols = 6;
    auto x = testing::gaussian(n * cols, 41);
    for (float& v : x) v = std::round(v * 4.0f) / 4.0f;  // many equal values
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; i += 97) x[std::size_t(i)] = (i / 97) % 2 ? 0.0f : -0.0f;  // column 0: signed zeros
    x[std::size_t(n + 5)] = inf;                                                          // column 1: +inf
    for (int64_t i = 0; i < n; i += 3) x[std::size_t(n + i + 1)] = -inf;
    x[std::size_t(2 * n)] = poison;                                                       // column 2: NaN at index 0
    for (int64_t i = 1; i < n; i += 5) x[std::size_t(3 * n + i)] = poison;                // column 3: NaN elsewhere
    for (int64_t i = 0; i < n; ++i)                                                       // column 4: 3 values, the rest NaN
        x[std::size_t(4 * n + i)] = i == 7 || i == 900 || i == 4000 ? float(i % 5) : poison;
    for (int64_t k : {int64_t(1), int64_t(40), int64_t(64), int64_t(300)}) {
        CAPTURE(k);
        const auto y = cpu_top_k(x, n, k);
        for (int64_t c = 0; c < cols; ++c) {
            CAPTURE(c);
            CHECK(std::vector<int32_t>(y.begin() + c * k, y.begin() + (c + 1) * k) == scanned_top_k(x.data() + c * n, n, k));
        }
    }
}

TEST_CASE("top_k gives the indices of the k largest values, largest first, for k = 1, k = n and between") {
    const int64_t n = 37, cols = 3;
    const auto x = testing::gaussian(n * cols, 5);
    for (int64_t k : {int64_t(1), int64_t(2), int64_t(8), n}) {
        CAPTURE(k);
        const auto y = cpu_top_k(x, n, k);
        for (int64_t c = 0; c < cols; ++c)
            CHECK(std::vector<int32_t>(y.begin() + c * k, y.begin() + (c + 1) * k) == sorted_top_k(x.data() + c * n, n, k));
    }
}

TEST_CASE("top_k takes equal values in index order") {
    const std::vector<float> x{0.5f, 2.0f, 1.0f, 2.0f, 0.5f, 2.0f, 1.0f, -3.0f};
    CHECK(cpu_top_k(x, 8, 8) == std::vector<int32_t>{1, 3, 5, 2, 6, 0, 4, 7});
    CHECK(cpu_top_k(x, 8, 2) == std::vector<int32_t>{1, 3});
    const std::vector<float> same(6, 0.25f);
    CHECK(cpu_top_k(same, 6, 4) == std::vector<int32_t>{0, 1, 2, 3});
}

TEST_CASE("top_k of a column with NaN still gives indices inside the column") {
    const std::vector<float> x{poison, 1.0f, poison, 3.0f, 2.0f};
    for (int32_t id : cpu_top_k(x, 5, 5)) CHECK((id >= 0 && id < 5));
}

TEST_CASE("expert_weights picks the chosen probabilities and, normalized, divides them by their sum clamped at 2^-14") {
    const int64_t n = 6, k = 3;
    const std::vector<float> p{0.1f, 0.3f, 0.05f, 0.25f, 0.2f, 0.1f, /**/ 1e-9f, 2e-9f, 0.5f, 0.5f, 0.0f, 0.0f};
    const std::vector<int32_t> ids{1, 3, 4, /**/ 0, 1, 5};
    std::vector<float> plain(6, poison), normed(6, poison);
    cpu::expert_weights(p.data(), ids.data(), plain.data(), n, k, 2, graph::expert_norm::none);
    cpu::expert_weights(p.data(), ids.data(), normed.data(), n, k, 2, graph::expert_norm::sum);
    CHECK(plain == std::vector<float>{0.3f, 0.25f, 0.2f, 1e-9f, 2e-9f, 0.0f});
    const float sum = float(double(0.3f) + double(0.25f) + double(0.2f));
    CHECK(normed[0] == 0.3f / sum);
    CHECK(normed[1] == 0.25f / sum);
    CHECK(normed[2] == 0.2f / sum);
    CHECK(normed[3] == 1e-9f / 0x1p-14f);  // the sum 3e-9 is below the clamp
    CHECK(normed[4] == 2e-9f / 0x1p-14f);
    CHECK(normed[5] == 0.0f);
}

TEST_CASE("weighted_sum adds the weighted slots in slot order, each product rounded to float") {
    const int64_t n = 5, cols = 2;
    for (int64_t k : {1, 2, 4}) {
        CAPTURE(k);
        const auto x = testing::gaussian(n * k * cols, 9);
        const auto w = testing::gaussian(k * cols, 10);
        std::vector<float> y(std::size_t(n * cols), poison);
        cpu::weighted_sum(x.data(), w.data(), y.data(), n, k, cols);
        for (int64_t c = 0; c < cols; ++c)
            for (int64_t i = 0; i < n; ++i) {
                volatile float acc = w[std::size_t(c * k)] * x[std::size_t(c * n * k + i)];
                for (int64_t s = 1; s < k; ++s) {
                    volatile float product = w[std::size_t(c * k + s)] * x[std::size_t(c * n * k + s * n + i)];
                    acc = acc + product;
                }
                CHECK(y[std::size_t(c * n + i)] == acc);
            }
    }
}

TEST_CASE("shard_ids gives the rank's experts their own indices and parks other slots on the first of them; shard_weights weighs those 0") {
    // Experts [4, 8) of 16 held; k = 3 slots per token.
    const std::vector<int32_t> ids{2, 5, 7, /**/ 9, 4, 1, /**/ 0, 15, 3, /**/ 4, 5, 6};
    const std::vector<float> w{0.5f, 0.25f, 0.125f, /**/ 1.0f, 2.0f, 3.0f, /**/ 4.0f, 5.0f, 6.0f, /**/ -1.0f, -2.0f, -3.0f};
    std::vector<int32_t> local(ids.size(), -7);
    std::vector<float> held(w.size(), poison);
    cpu::shard_ids(ids.data(), local.data(), 3, 4, 4, 4);
    cpu::shard_weights(w.data(), ids.data(), held.data(), 3, 4, 4, 4);
    CHECK(local == std::vector<int32_t>{1, 1, 3, /**/ 0, 0, 0, /**/ 0, 0, 0, /**/ 0, 1, 2});
    CHECK(held == std::vector<float>{0.0f, 0.25f, 0.125f, /**/ 0.0f, 2.0f, 0.0f, /**/ 0.0f, 0.0f, 0.0f, /**/ -1.0f, -2.0f, -3.0f});
}

TEST_CASE("the builder refuses shard_ids of float ids, an empty expert range, or weights of another slot count") {
    graph::graph g(2);
    const auto ids = g.input("ids", graph::i32_type, 3);
    const auto f = g.input("f", qtype::f32, 3);
    const auto w4 = g.input("w4", qtype::f32, 4);
    CHECK_THROWS_WITH_AS(g.shard_ids(f, 0, 4), doctest::Contains("shard_ids: ids 'f'"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.shard_ids(ids, 4, 0), doctest::Contains("experts [4, 4)"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.shard_weights(w4, ids, 0, 4), doctest::Contains("shard_weights: weights 'w4'"), llmrt::error);
    CHECK(g[g.shard_weights(f, ids, 2, 2)].ne0 == 3);
}

TEST_CASE("mul_mat_id multiplies each slot by the expert its id names, x shared or one per slot") {
    for (qtype t : {qtype::q8_0, qtype::f32, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        const int64_t k = block_size(t) == 256 ? 256 : 64, rows = 40, n_expert = 5, n_used = 3, cols = 2;
        const auto v = testing::gaussian(rows * n_expert * k, 3, 0.3f);
        const auto w = testing::quantize_matrix(t, v.data(), rows * n_expert, k);
        const std::vector<int32_t> ids{4, 0, 4, /**/ 2, 3, 1};
        for (bool per_slot : {false, true}) {
            CAPTURE(per_slot);
            const auto x = testing::gaussian((per_slot ? n_used : 1) * k * cols, 4);
            for (auto act : {cpu::activation_format::f32, cpu::activation_format::q8_1}) {
                std::vector<std::byte> scratch(cpu::mul_mat_scratch_bytes(t, k, 1, act));
                std::vector<float> y(std::size_t(rows * n_used * cols), poison), ref(std::size_t(rows), poison);
                cpu::mul_mat_id(t, w.data(), rows, k, n_expert, x.data(), per_slot, ids.data(), n_used, y.data(), cols, act,
                                scratch.data(), scratch.size());
                for (int64_t c = 0; c < cols; ++c)
                    for (int64_t s = 0; s < n_used; ++s) {
                        const int32_t e = ids[std::size_t(c * n_used + s)];
                        const float* xs = x.data() + c * (per_slot ? n_used : 1) * k + (per_slot ? s * k : 0);
                        cpu::mul_mat(t, w.data() + std::size_t(e) * row_size(t, k) * std::size_t(rows), xs, ref.data(),
                                     {rows, k, 1, 0, 0}, act, scratch.data(), scratch.size());
                        CHECK(std::memcmp(y.data() + (c * n_used + s) * rows, ref.data(), std::size_t(rows) * 4) == 0);
                    }
            }
        }
    }
}

TEST_CASE("a mixture-of-experts block on the CPU backend gives every token the bits it gets alone, fused or not") {
    test::moe_net net(qtype::q8_0, 64, 32, 8, 2, 4);
    const auto h = testing::gaussian(64 * 4, 21);
    auto run = [&](int64_t n, const float* x, bool fuse) {
        cpu::backend b;
        graph::executor ex(b, net.g, {.fuse = fuse});
        ex.write(net.h, std::span<const float>(x, std::size_t(64 * n)));
        ex.run(n);
        std::vector<float> out(std::size_t(64 * n));
        ex.read(net.out, std::span<float>(out));
        return out;
    };
    const auto batch = run(4, h.data(), true);
    CHECK(batch == run(4, h.data(), false));
    for (int64_t t = 0; t < 4; ++t) {
        const auto one = run(1, h.data() + t * 64, true);
        CHECK(std::memcmp(one.data(), batch.data() + t * 64, 64 * 4) == 0);
    }
    for (float v : batch) CHECK(std::isfinite(v));
}

TEST_CASE("mul_mat_id and expert_weights ids from a graph input outside their range raise llmrt::error naming them") {
    graph::graph g(2);
    const auto x = g.input("x", qtype::f32, 32);
    const auto ids = g.input("ids", graph::i32_type, 2);
    std::vector<float> w(32 * 12, 0.5f);
    g.mark_output(g.mul_mat_id(g.weight("experts", qtype::f32, 32, 12, w.data()), x, ids, 4));
    cpu::backend b;
    graph::executor ex(b, std::move(g));
    const std::vector<float> xs(64, 1.0f);
    ex.write(x, std::span<const float>(xs));
    ex.write(ids, std::span<const int32_t>(std::vector<int32_t>{0, 3, 1, 2}));
    CHECK_NOTHROW(ex.run(2));
    ex.write(ids, std::span<const int32_t>(std::vector<int32_t>{0, 3, 4, 2}));
    try {
        ex.run(2);
        FAIL("no error");
    } catch (const llmrt::error& e) {
        const std::string m = e.what();
        CHECK(m.find("mul_mat_id") != std::string::npos);
        CHECK(m.find("id 4 of token 1") != std::string::npos);
    }
}

TEST_CASE("the builder refuses mixture-of-experts operands of the wrong shape or type, naming them") {
    graph::graph g(2);
    const auto x = g.input("x", qtype::f32, 32);
    const auto probs = g.input("probs", qtype::f32, 8);
    const auto ids = g.top_k(probs, 2);
    std::vector<float> w(32 * 12, 0.5f);
    const auto experts = g.weight("experts", qtype::f32, 32, 12, w.data());
    CHECK_THROWS_WITH_AS(g.top_k(probs, 0), doctest::Contains("top_k: k = 0"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.top_k(probs, 9), doctest::Contains("top_k: k = 9"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.mul_mat_id(experts, x, ids, 5), doctest::Contains("'experts'"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.mul_mat_id(experts, probs, ids, 4), doctest::Contains("mul_mat_id: x 'probs'"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.mul_mat_id(experts, x, probs, 4), doctest::Contains("mul_mat_id: ids 'probs'"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.expert_weights(probs, probs, graph::expert_norm::sum), doctest::Contains("expert_weights: ids"),
                         llmrt::error);
    const auto y = g.mul_mat_id(experts, x, ids, 4);
    CHECK(g[y].ne0 == 6);
    const auto three = g.expert_weights(probs, g.top_k(probs, 3), graph::expert_norm::sum);
    CHECK_THROWS_WITH_AS(g.weighted_sum(x, three), doctest::Contains("weighted_sum: x 'x'"), llmrt::error);  // 32 slots of 3?
}
