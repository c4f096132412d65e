// The executor on the CPU backend: wiring, batches, state and errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/compare.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/llmrt.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/reference.hpp>

using namespace llmrt;

namespace {

using testing::gaussian;
using testing::quantize_matrix;

// x -> rms_norm -> ⊙ norm -> W·() -> softmax, and the argmax of W·().
struct small_net {
    static constexpr int64_t k = 64, rows = 32;
    std::vector<float> norm = gaussian(k, 1);
    std::vector<uint8_t> w = quantize_matrix(qtype::q8_0, gaussian(std::size_t(k * rows), 2), k);
    graph::graph g{4};
    graph::tensor x, y, probs, best;

    small_net() {
        x = g.input("x", qtype::f32, k);
        auto h = g.mul(g.rms_norm(x, 1e-6f), g.weight("norm", qtype::f32, k, 1, norm.data()));
        y = g.mul_mat(g.weight("w", qtype::q8_0, k, rows, w.data()), h);
        probs = g.softmax(y);
        best = g.argmax(y);
        g.mark_output(y);
        g.mark_output(probs);
        g.mark_output(best);
    }
};

}  // namespace

TEST_CASE("a graph run on the CPU backend gives the bits of its ops called one by one") {
    small_net net;
    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, net.g);
    const int64_t n = 3;
    const auto x = gaussian(std::size_t(small_net::k * n), 3);
    ex.write(net.x, std::span<const float>(x));
    ex.run(n);
    std::vector<float> y(std::size_t(small_net::rows * n)), probs(y.size());
    std::vector<int32_t> best(static_cast<std::size_t>(n));
    ex.read(net.y, std::span<float>(y));
    ex.read(net.probs, std::span<float>(probs));
    ex.read(net.best, std::span<int32_t>(best));

    std::vector<float> h(x.size()), ref_y(y.size()), ref_probs(y.size());
    std::vector<int32_t> ref_best(static_cast<std::size_t>(n));
    cpu::rms_norm(x.data(), h.data(), small_net::k, n, 1e-6f);
    cpu::mul(h.data(), net.norm.data(), h.data(), small_net::k, n, true);
    cpu::matvec(qtype::q8_0, net.w.data(), h.data(), ref_y.data(), {small_net::rows, small_net::k, n},
                cpu::activation_format::q8_1);
    cpu::softmax(ref_y.data(), ref_probs.data(), small_net::rows, n);
    cpu::argmax(ref_y.data(), ref_best.data(), small_net::rows, n);
    CHECK(std::memcmp(y.data(), ref_y.data(), y.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(probs.data(), ref_probs.data(), y.size() * sizeof(float)) == 0);
    CHECK(best == ref_best);
}

TEST_CASE("each column of a batched run has the bits of a one-token run") {
    small_net net;
    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, net.g);
    const auto x = gaussian(std::size_t(small_net::k * 4), 5);
    ex.write(net.x, std::span<const float>(x));
    ex.run(4);
    std::vector<float> batch(std::size_t{small_net::rows * 4}), single(std::size_t{small_net::rows});
    ex.read(net.y, std::span<float>(batch));
    for (int c = 0; c < 4; ++c) {
        ex.write(net.x, std::span<const float>(x.data() + c * small_net::k, small_net::k));
        ex.run(1);
        ex.read(net.y, std::span<float>(single));
        CHECK(std::memcmp(single.data(), batch.data() + c * small_net::rows, single.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("with float activations the CPU backend matches cpu::matvec in f32") {
    small_net net;
    cpu::backend cpu_backend({.quantized_activations = cpu::activation_format::f32});
    graph::executor ex(cpu_backend, net.g);
    const auto x = gaussian(std::size_t(small_net::k), 9);
    ex.write(net.x, std::span<const float>(x));
    ex.run(1);
    std::vector<float> y(std::size_t{small_net::rows}), h(x.size()), ref(y.size());
    ex.read(net.y, std::span<float>(y));
    cpu::rms_norm(x.data(), h.data(), small_net::k, 1, 1e-6f);
    cpu::mul(h.data(), net.norm.data(), h.data(), small_net::k, 1, true);
    cpu::matvec(qtype::q8_0, net.w.data(), h.data(), ref.data(), {small_net::rows, small_net::k, 1});
    CHECK(std::memcmp(y.data(), ref.data(), y.size() * sizeof(float)) == 0);
}

TEST_CASE("state written by set_rows persists from one run to the next") {
    graph::graph g(2);
    auto x = g.input("x", qtype::f32, 8);
    auto pos = g.input("pos", graph::i32_type, 1);
    auto cache = g.state("cache", qtype::f32, 8, 6);
    g.mark_output(g.attention(x, g.set_rows(cache, x, pos), g.set_rows(cache, x, pos), pos, {1, 1, 8, 0.5f}));
    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, std::move(g));
    const auto v = gaussian(24, 4);
    const std::vector<int32_t> p01{0, 1}, p2{2};
    ex.write(x, std::span<const float>(v.data(), 16));
    ex.write(pos, std::span<const int32_t>(p01));
    ex.run(2);
    ex.write(x, std::span<const float>(v.data() + 16, 8));
    ex.write(pos, std::span<const int32_t>(p2));
    ex.run(1);
    std::vector<float> stored(24);
    ex.read(cache, std::span<float>(stored));
    CHECK(std::memcmp(stored.data(), v.data(), 24 * sizeof(float)) == 0);
}

TEST_CASE("a run outside 1..max_batch tokens raises llmrt::error") {
    small_net net;
    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, net.g);
    CHECK_THROWS_AS(ex.run(0), llmrt::error);
    CHECK_THROWS_AS(ex.run(5), llmrt::error);
}

TEST_CASE("mismatched shapes raise llmrt::error naming the tensors") {
    graph::graph g(1);
    std::vector<float> w(32 * 4);
    auto x = g.input("activations", qtype::f32, 64);
    auto wt = g.weight("blk.0.attn_q.weight", qtype::f32, 32, 4, w.data());
    try {
        g.mul_mat(wt, x);
        FAIL("mul_mat accepted k = 32 against 64");
    } catch (const llmrt::error& e) {
        CHECK(e.code() == errc::shape_mismatch);
        CHECK(std::string(e.what()).find("blk.0.attn_q.weight") != std::string::npos);
        CHECK(std::string(e.what()).find("activations") != std::string::npos);
    }
    CHECK_THROWS_AS(g.add(x, g.input("other", qtype::f32, 32)), llmrt::error);
    CHECK_THROWS_AS(g.rope(x, x, {4, 16, 16, 10000.0f, graph::rope_order::normal}), llmrt::error);
    CHECK_THROWS_AS(g.weight("w", qtype::q8_0, 33, 1, w.data()), llmrt::error);
}

TEST_CASE("an attention over K and V caches of different types raises llmrt::error naming both") {
    graph::graph g(1);
    auto q = g.input("q", qtype::f32, 16);
    auto pos = g.input("pos", graph::i32_type, 1);
    auto kc = g.state("k_cache", qtype::f16, 16, 8);
    auto vc = g.state("v_cache", qtype::f32, 16, 8);
    CHECK_THROWS_WITH_AS(g.attention(q, kc, vc, pos, {1, 1, 16, 0.25f}),
                         doctest::Contains("the K cache 'k_cache'"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.attention(q, kc, vc, pos, {1, 1, 16, 0.25f}), doctest::Contains("v_cache"), llmrt::error);
}

TEST_CASE("reading a tensor whose memory is reused raises llmrt::error, unless the plan keeps every tensor") {
    small_net net;
    const auto hidden = net.g.nodes()[std::size_t(net.y.id)].src[1];
    cpu::backend cpu_backend;
    std::vector<float> h(small_net::k);
    graph::executor reused(cpu_backend, net.g);
    CHECK_THROWS_AS(reused.read(graph::tensor{hidden}, std::span<float>(h)), llmrt::error);
    graph::executor kept(cpu_backend, net.g, {.reuse_memory = false, .fuse = false});
    const auto x = gaussian(std::size_t(small_net::k), 3);
    kept.write(net.x, std::span<const float>(x));
    kept.run(1);
    kept.read(graph::tensor{hidden}, std::span<float>(h));
    CHECK(std::isfinite(h[0]));
}

TEST_CASE("reads and writes past a tensor's end raise llmrt::error") {
    small_net net;
    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, net.g);
    std::vector<float> too_many(std::size_t(small_net::k * 4 + 1));
    CHECK_THROWS_AS(ex.write(net.x, std::span<const float>(too_many)), llmrt::error);
    CHECK_THROWS_AS(ex.read(net.y, std::span<float>(too_many)), llmrt::error);
}

TEST_CASE("read_together gives what separate reads give, and checks each read as read does") {
    small_net net;
    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, net.g);
    const auto x = gaussian(std::size_t(small_net::k), 5);
    ex.write(net.x, std::span<const float>(x));
    ex.run(1);
    const std::size_t m = std::size_t(net.g.nodes()[std::size_t(net.y.id)].ne0);
    std::vector<float> y_one(m), x_one(x.size());
    ex.read(net.y, std::span<float>(y_one));
    ex.read(net.x, std::span<float>(x_one));
    std::vector<float> y_all(m, NAN), x_all(x.size(), NAN);
    const graph::read_request reads[] = {graph::read_request::of(net.y, std::span<float>(y_all)),
                                         graph::read_request::of(net.x, std::span<float>(x_all))};
    ex.read_together(reads);
    CHECK(std::memcmp(y_all.data(), y_one.data(), m * sizeof(float)) == 0);
    CHECK(x_all == x_one);
    std::vector<float> too_many(std::size_t(small_net::k * 4 + 1));
    const graph::read_request past_end[] = {graph::read_request::of(net.y, std::span<float>(y_all)),
                                            graph::read_request::of(net.x, std::span<float>(too_many))};
    CHECK_THROWS_AS(ex.read_together(past_end), llmrt::error);
}

TEST_CASE("compare_nodes finds no difference between equal configurations and names the first op that differs") {
    small_net net;
    cpu::backend q8(cpu::backend_options{}), f32({.quantized_activations = cpu::activation_format::f32});
    graph::executor a(q8, net.g, {.reuse_memory = false});
    graph::executor same(q8, net.g, {.reuse_memory = false});
    graph::executor b(f32, net.g, {.reuse_memory = false});
    const auto x = gaussian(std::size_t(small_net::k * 2), 13);
    for (auto* ex : {&a, &same, &b}) {
        ex->write(net.x, std::span<const float>(x));
        ex->run(2);
    }
    for (const auto& d : graph::compare_nodes(a, same, 2)) {
        CHECK(d.nmse == 0.0);
        CHECK(d.mismatch == 0.0);
    }
    const auto diffs = graph::compare_nodes(a, b, 2);
    const auto first = std::find_if(diffs.begin(), diffs.end(), [](const auto& d) { return d.nmse > 0.0; });
    REQUIRE(first != diffs.end());
    CHECK(first->op == graph::op::mul_mat);  // the Q8_1 rounding enters at the mat-mul
    CHECK(first->nmse < 1e-3);
    CHECK(first->ne1 == 2);
    graph::executor reused(q8, net.g);
    CHECK_THROWS_AS(graph::compare_nodes(a, reused, 2), llmrt::error);
}
