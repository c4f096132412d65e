// The CUDA backend of the graph executor against the CPU backend, op by op: every node of a
// graph run on both (planned without memory reuse) is compared with graph::compare_nodes.
// Exact ops must agree within 1e-10 (or bit for bit), mul_mat within mmvq's NMSE bound 5e-4.
// Every case skips, passing with a message, on a machine without a CUDA device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/cuda/backend.cuh>
#include <llmrt/graph/compare.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/reference.hpp>

#include "../graph/count_allocations.hpp"
#include "../graph/moe_fixtures.hpp"
#include "../graph/oss_fixtures.hpp"
#include "cuda_pair.cuh"

using namespace llmrt;

using testing::gaussian;
using testing::quantize_matrix;
using test::exact_ops;
using test::floats_of;
using test::mmvq_nmse_bound;
using test::mmvq_ops;
using test::pair_of_executors;
using test::same_bits;
using test::test_backend;

TEST_CASE("element-wise ops, rms_norm, softmax, argmax and top_probability agree with the CPU backend at every batch size") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t n0 = 300;  // not a multiple of any block or warp
    graph::graph g(8);
    const auto col = gaussian(n0, 1);
    auto x = g.input("x", qtype::f32, n0);
    auto b = g.input("b", qtype::f32, n0);
    auto w = g.weight("w", qtype::f32, n0, 1, col.data());
    for (graph::tensor t : {g.rms_norm(x, 1e-5f), g.mul(x, b), g.mul(x, w), g.add(x, b), g.add(x, w), g.softmax(x),
                            g.silu(x), g.swiglu(x, b), g.argmax(x), g.top_probability(x)})
        g.mark_output(t);
    pair_of_executors ex(g);
    for (int64_t n : {1, 3, 8}) {
        CAPTURE(n);
        ex.write(x, gaussian(std::size_t(n0 * n), 10 + uint32_t(n), 4.0f));
        ex.write(b, gaussian(std::size_t(n0 * n), 20 + uint32_t(n)));
        ex.run(n);
        ex.check_nodes(n, exact_ops);
    }
}

TEST_CASE("top_probability of vocabulary-long columns agrees with the CPU backend, the output poisoned first") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t n0 = 128256 + 5;  // Llama 3's vocabulary and a few: not a multiple of the block
    graph::graph g(5);
    auto x = g.input("x", qtype::f32, n0);
    const auto top = g.top_probability(x);
    g.mark_output(top);
    pair_of_executors ex(g);
    for (int64_t n : {1, 5}) {
        CAPTURE(n);
        std::vector<float> v = gaussian(std::size_t(n0 * n), 30 + uint32_t(n), 3.0f);
        v[std::size_t(n0 - 1)] = 40.0f;  // column 0: one token far ahead, a probability near 1
        ex.write(x, v);
        const std::vector<float> nan(std::size_t(n), NAN);
        ex.gpu.write(top, std::span<const float>(nan));
        ex.run(n);
        ex.check_nodes(n, exact_ops);
        const std::vector<float> got = floats_of(ex.gpu, top, std::size_t(n));
        CHECK(got[0] > 0.99f);
        for (float p : got) CHECK((p > 0.0f && p <= 1.0f));
    }
}

TEST_CASE("rope in normal and NeoX order agrees with the CPU backend, elements past n_rot passed through") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (auto order : {graph::rope_order::normal, graph::rope_order::neox}) {
        CAPTURE(int(order));
        const graph::rope_params p{3, 64, 48, 10000.0f, order};
        graph::graph g(5);
        auto x = g.input("x", qtype::f32, 3 * 64);
        auto pos = g.input("pos", graph::i32_type, 1);
        g.mark_output(g.rope(x, pos, p));
        pair_of_executors ex(g);
        ex.write(x, gaussian(3 * 64 * 5, 3, 2.0f));
        ex.write(pos, std::vector<int32_t>{0, 1, 17, 500, 4095});
        ex.run(5);
        ex.check_nodes(5, exact_ops);
    }
}

TEST_CASE("rope with linear scaling and frequency factors, a grouped rms_norm and a repeated weight agree with the CPU backend") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const std::vector<float> factors{1.0f, 1.5f, 2.0f, 4.0f, 8.0f, 32.0f, 1.0f, 3.0f, 5.0f, 7.0f, 9.0f, 11.0f,
                                     13.0f, 15.0f, 17.0f, 19.0f, 21.0f, 23.0f, 25.0f, 27.0f, 29.0f, 31.0f, 33.0f, 35.0f};
    const std::vector<float> gain = gaussian(64, 4);
    for (auto order : {graph::rope_order::normal, graph::rope_order::neox}) {
        CAPTURE(int(order));
        const graph::rope_params p{3, 64, 48, 10000.0f, order, 0.25f};
        graph::graph g(5);
        auto x = g.input("x", qtype::f32, 3 * 64);
        auto pos = g.input("pos", graph::i32_type, 1);
        const auto f = g.weight("factors", qtype::f32, 24, 1, factors.data());
        const auto w = g.weight("gain", qtype::f32, 64, 1, gain.data());
        const auto normed = g.mul(g.rms_norm(x, 1e-6f, 64), w);  // per head, as qwen3's q/k norms
        g.mark_output(g.rope(g.add(normed, w), pos, p, f));
        pair_of_executors ex(g);
        ex.write(x, gaussian(3 * 64 * 5, 5, 2.0f));
        ex.write(pos, std::vector<int32_t>{0, 1, 17, 500, 4095});
        ex.run(5);
        ex.check_nodes(5, exact_ops);
    }
}

TEST_CASE("get_rows dequantizes the rows of every table type bit for bit as the CPU does") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t ne0 = 512, n_rows = 37;
    const auto values = gaussian(std::size_t(ne0 * n_rows), 5);
    all_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        CAPTURE(std::string(B::name));
        const auto table = quantize_matrix(B::id, values, ne0);
        graph::graph g(4);
        auto ids = g.input("ids", graph::i32_type, 1);
        auto rows = g.get_rows(g.weight("table", B::id, ne0, n_rows, table.data()), ids);
        g.mark_output(rows);
        pair_of_executors ex(g);
        ex.write(ids, std::vector<int32_t>{36, 0, 36, 11});
        ex.run(4);
        std::vector<float> a(std::size_t(ne0 * 4)), b(a.size());
        ex.cpu.read(rows, std::span<float>(a));
        ex.gpu.read(rows, std::span<float>(b));
        CHECK(same_bits(a, b));
    });
}

TEST_CASE("set_rows and grouped-query causal attention over f32 and f16 caches agree with the CPU backend") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (qtype kv : {qtype::f32, qtype::f16}) {
        for (int32_t head_dim : {64, 128, 200}) {  // 64: keys split in two groups; 200: not whole warps
            CAPTURE(std::string(name(kv)));
            CAPTURE(head_dim);
            const graph::attention_params p{4, 2, head_dim, 1.0f / std::sqrt(float(head_dim))};
            const int64_t n_ctx = 300, q_ne0 = 4 * head_dim, kv_ne0 = 2 * head_dim;
            graph::graph g(6);
            auto q = g.input("q", qtype::f32, q_ne0);
            auto k = g.input("k", qtype::f32, kv_ne0);
            auto v = g.input("v", qtype::f32, kv_ne0);
            auto pos = g.input("pos", graph::i32_type, 1);
            auto kc = g.set_rows(g.state("k_cache", kv, kv_ne0, n_ctx), k, pos);
            auto vc = g.set_rows(g.state("v_cache", kv, kv_ne0, n_ctx), v, pos);
            g.mark_output(g.attention(q, kc, vc, pos, p));
            pair_of_executors ex(g);
            // Three runs: positions 0..5, then 6..8 (reading what the first wrote), then 280..283
            // (over 128 keys, most of them never written: zeros in both caches).
            const std::vector<std::vector<int32_t>> runs{{0, 1, 2, 3, 4, 5}, {6, 7, 8}, {280, 281, 282, 283}};
            uint32_t seed = 100;
            for (const auto& positions : runs) {
                const auto n = int64_t(positions.size());
                CAPTURE(positions.front());
                ex.write(q, gaussian(std::size_t(q_ne0 * n), seed++, 2.0f));
                ex.write(k, gaussian(std::size_t(kv_ne0 * n), seed++));
                ex.write(v, gaussian(std::size_t(kv_ne0 * n), seed++));
                ex.write(pos, positions);
                ex.run(n);
                ex.check_nodes(n, [](graph::op) { return 1e-9; });
            }
        }
    }
}

TEST_CASE("mul_mat with quantized weights agrees with the CPU backend from 1 to 8 columns and in chunks beyond") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (qtype t : {qtype::q8_0, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        const int64_t k = 512, rows = 257;
        const auto w1 = quantize_matrix(t, gaussian(std::size_t(k * rows), 7, 0.05f), k);
        const auto w2 = quantize_matrix(t, gaussian(std::size_t(k * rows), 8, 0.05f), k);
        const auto w3 = quantize_matrix(t, gaussian(std::size_t(k * rows), 9, 0.05f), k);
        graph::graph g(20);
        auto x = g.input("x", qtype::f32, k);
        auto x2 = g.input("x2", qtype::f32, k);
        // y1 and y2 read the same x (one quantization serves both), y3 another, y4 x again.
        auto y1 = g.mul_mat(g.weight("w1", t, k, rows, w1.data()), x);
        auto y2 = g.mul_mat(g.weight("w2", t, k, rows, w2.data()), x);
        auto y3 = g.mul_mat(g.weight("w3", t, k, rows, w3.data()), x2);
        auto y4 = g.mul_mat(g.weight("w1", t, k, rows, w1.data()), x);
        for (auto y : {y1, y2, y3, y4}) g.mark_output(y);
        pair_of_executors ex(g);
        const auto xs = gaussian(std::size_t(k * 20), 11), x2s = gaussian(std::size_t(k * 20), 12);
        ex.write(x, xs);
        ex.write(x2, x2s);
        std::vector<float> first_columns;  // y1's first column at batch 1
        for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 20}) {
            CAPTURE(n);
            ex.run(n);
            ex.check_nodes(n, mmvq_ops);
            const auto y = floats_of(ex.gpu, y1, std::size_t(rows * n));
            const auto y_again = floats_of(ex.gpu, y4, std::size_t(rows * n));
            CHECK(same_bits(y, y_again));  // the same W and x, quantized once or again: the same bits
            const std::vector<float> col0(y.begin(), y.begin() + rows);
            if (first_columns.empty()) first_columns = col0;
            CHECK(same_bits(col0, first_columns));  // a column's bits do not depend on the batch
        }
    }
}

TEST_CASE("mul_mat with f32, f16 and bf16 weights agrees with the CPU backend") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (qtype t : {qtype::f32, qtype::f16, qtype::bf16}) {
        CAPTURE(std::string(name(t)));
        const int64_t k = 300, rows = 70;
        const auto w = quantize_matrix(t, gaussian(std::size_t(k * rows), 13), k);
        graph::graph g(11);
        auto x = g.input("x", qtype::f32, k);
        g.mark_output(g.mul_mat(g.weight("w", t, k, rows, w.data()), x));
        pair_of_executors ex(g);
        ex.write(x, gaussian(std::size_t(k * 11), 14));
        for (int64_t n : {1, 11}) {
            ex.run(n);
            ex.check_nodes(n, [](graph::op) { return 1e-10; });
        }
    }
}

namespace {

// A block of a llama layer: norm, q/k/v, rope, KV cache, attention, output, SwiGLU feed-forward.
struct layer_graph {
    static constexpr int64_t d = 256, ff = 512, n_ctx = 64;
    std::vector<float> norm = gaussian(d, 30);
    std::vector<uint8_t> wq = quantize_matrix(qtype::q4_K, gaussian(std::size_t(d * d), 31, 0.06f), d),
                         wk = quantize_matrix(qtype::q4_K, gaussian(std::size_t(d * d / 2), 32, 0.06f), d),
                         wv = quantize_matrix(qtype::q8_0, gaussian(std::size_t(d * d / 2), 33, 0.06f), d),
                         wo = quantize_matrix(qtype::q8_0, gaussian(std::size_t(d * d), 34, 0.06f), d),
                         wg = quantize_matrix(qtype::q4_K, gaussian(std::size_t(d * ff), 35, 0.06f), d),
                         wu = quantize_matrix(qtype::q4_K, gaussian(std::size_t(d * ff), 36, 0.06f), d),
                         wd = quantize_matrix(qtype::q8_0, gaussian(std::size_t(ff * d), 37, 0.04f), ff);
    graph::graph g{8};
    graph::tensor x, pos, out, best;

    layer_graph() {
        x = g.input("x", qtype::f32, d);
        pos = g.input("pos", graph::i32_type, 1);
        auto h = g.mul(g.rms_norm(x, 1e-5f), g.weight("norm", qtype::f32, d, 1, norm.data()));
        const graph::rope_params rq{4, 64, 64, 10000.0f, graph::rope_order::normal};
        graph::rope_params rk = rq;
        rk.n_head = 2;
        auto q = g.rope(g.mul_mat(g.weight("wq", qtype::q4_K, d, d, wq.data()), h), pos, rq);
        auto k = g.rope(g.mul_mat(g.weight("wk", qtype::q4_K, d, d / 2, wk.data()), h), pos, rk);
        auto v = g.mul_mat(g.weight("wv", qtype::q8_0, d, d / 2, wv.data()), h);
        auto kc = g.set_rows(g.state("kc", qtype::f16, d / 2, n_ctx), k, pos);
        auto vc = g.set_rows(g.state("vc", qtype::f16, d / 2, n_ctx), v, pos);
        auto a = g.attention(q, kc, vc, pos, {4, 2, 64, 0.125f});
        auto x1 = g.add(x, g.mul_mat(g.weight("wo", qtype::q8_0, d, d, wo.data()), a));
        auto h2 = g.rms_norm(x1, 1e-5f);
        auto f = g.swiglu(g.mul_mat(g.weight("wg", qtype::q4_K, d, ff, wg.data()), h2),
                          g.mul_mat(g.weight("wu", qtype::q4_K, d, ff, wu.data()), h2));
        out = g.add(x1, g.mul_mat(g.weight("wd", qtype::q8_0, ff, d, wd.data()), f));
        best = g.argmax(out);
        g.mark_output(out);
        g.mark_output(best);
    }
};

// Runs batches of 5 and 3 tokens (positions 0..7) and returns the output of each.
std::vector<std::vector<float>> run_layer(layer_graph& l, cuda::backend_options o) {
    test_backend b(o);
    graph::executor<test_backend> ex(b, l.g);
    std::vector<std::vector<float>> outs;
    int32_t p0 = 0;
    for (int64_t n : {5, 3}) {
        std::vector<int32_t> pos(static_cast<std::size_t>(n));
        for (auto& p : pos) p = p0++;
        ex.write(l.x, std::span<const float>(gaussian(std::size_t(layer_graph::d * n), uint32_t(40 + n))));
        ex.write(l.pos, std::span<const int32_t>(pos));
        ex.run(n);
        outs.push_back(floats_of(ex, l.out, std::size_t(layer_graph::d * n)));
    }
    return outs;
}

}  // namespace

TEST_CASE("a llama layer agrees with the CPU backend node by node") {
    LLMRT_NEEDS_CUDA_DEVICE();
    layer_graph l;
    pair_of_executors ex(l.g);
    int32_t p0 = 0;
    for (int64_t n : {5, 3}) {
        std::vector<int32_t> pos(static_cast<std::size_t>(n));
        for (auto& p : pos) p = p0++;
        ex.write(l.x, gaussian(std::size_t(layer_graph::d * n), uint32_t(40 + n)));
        ex.write(l.pos, pos);
        ex.run(n);
        ex.check_nodes(n, [](graph::op o) { return o == graph::op::argmax ? 0.0 : mmvq_nmse_bound; });
    }
}

TEST_CASE("graph replay gives the bits of op-by-op launches, with and without programmatic dependent launch") {
    LLMRT_NEEDS_CUDA_DEVICE();
    layer_graph l;
    const auto replayed = run_layer(l, {});
    CHECK(same_bits(replayed[0], run_layer(l, {.use_graphs = false})[0]));
    const auto eager = run_layer(l, {.use_graphs = false, .programmatic_dependent_launch = false});
    const auto plain = run_layer(l, {.programmatic_dependent_launch = false});
    for (std::size_t i = 0; i < replayed.size(); ++i) {
        CHECK(same_bits(replayed[i], eager[i]));
        CHECK(same_bits(replayed[i], plain[i]));
    }
    CHECK(same_bits(replayed[1], run_layer(l, {})[1]));  // and the same bits on every run
}

TEST_CASE("running a prepared graph allocates nothing on the host") {
    LLMRT_NEEDS_CUDA_DEVICE();
    layer_graph l;
    test_backend b;
    graph::executor<test_backend> ex(b, l.g);
    const auto xs = gaussian(std::size_t(layer_graph::d * 8), 50);
    const std::vector<int32_t> pos{0, 1, 2, 3, 4, 5, 6, 7};
    std::vector<float> out(std::size_t(layer_graph::d * 8));
    ex.write(l.x, std::span<const float>(xs));
    ex.write(l.pos, std::span<const int32_t>(pos));
    ex.run(8);
    ex.read(l.out, std::span<float>(out));
    const long before = test::allocation_count();
    for (int64_t n : {1, 8, 3}) {
        ex.write(l.x, std::span<const float>(xs).first(std::size_t(layer_graph::d * n)));
        ex.write(l.pos, std::span<const int32_t>(pos).first(std::size_t(n)));
        ex.run(n);
        ex.read(l.out, std::span<float>(out).first(std::size_t(layer_graph::d * n)));
    }
    CHECK(test::allocation_count() - before == 0);
}

TEST_CASE("a weight type the backend was not built for is refused at prepare, naming it") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t k = 256;
    const auto w = quantize_matrix(qtype::q6_K, gaussian(std::size_t(k * 16), 60), k);
    graph::graph g(1);
    g.mark_output(g.mul_mat(g.weight("w6", qtype::q6_K, k, 16, w.data()), g.input("x", qtype::f32, k)));
    test_backend b;
    try {
        graph::executor<test_backend> ex(b, g);
        FAIL("prepare accepted a q6_K weight on a backend built for q8_0 and q4_K");
    } catch (const llmrt::error& e) {
        CHECK(e.code() == errc::unsupported_type);
        CHECK(std::string(e.what()).find("q6_K") != std::string::npos);
        CHECK(std::string(e.what()).find("w6") != std::string::npos);
    }
}

TEST_CASE("a device index that does not exist raises a device error naming the CUDA call") {
    LLMRT_NEEDS_CUDA_DEVICE();
    try {
        test_backend b({.device = 1000});
        FAIL("device 1000 was accepted");
    } catch (const llmrt::error& e) {
        CHECK(e.code() == errc::device_error);
        CHECK(std::string(e.what()).find("cudaSetDevice") != std::string::npos);
    }
}

TEST_CASE("a mixture-of-experts block (top_k, expert_weights, mul_mat_id, weighted_sum) agrees with the CPU backend, outputs poisoned first") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (qtype t : {qtype::q8_0, qtype::q4_K})
        for (int64_t k : {int64_t(1), int64_t(2), int64_t(8)}) {
            CAPTURE(std::string(name(t)));
            CAPTURE(k);
            const int64_t n_embd = block_size(t) == 256 ? 256 : 64, n_ff = block_size(t) == 256 ? 256 : 96;
            test::moe_net net(t, n_embd, n_ff, 8, k, 9);
            pair_of_executors e(net.g);
            // The fused forms run: the router with its softmax and top_k (router_top_k), gate and up
            // side by side finishing the swiglu in their epilogue, the down adding the weighted slots.
            const graph::plan& plan = e.gpu.get_plan();
            const auto step_of = [&](graph::tensor t_) { return plan.step_of[std::size_t(t_.id)]; };
            CHECK(plan.steps[std::size_t(step_of(net.ids))].nodes.size() == 3);
            CHECK(plan.steps[std::size_t(step_of(net.gate_out))].carries == step_of(net.act));
            CHECK(plan.steps[std::size_t(step_of(net.down_out))].carries == step_of(net.out));
            for (int64_t tokens : {int64_t(1), int64_t(9)}) {
                CAPTURE(tokens);
                const std::vector<std::byte> poison(std::size_t(n_ff * 8 * 9 * 4), std::byte{0xff});  // NaN, id -1
                for (graph::tensor o : {net.ids, net.weights, net.down_out, net.out})
                    e.gpu.write_bytes(o, 0, poison.data(), graph::tensor_bytes(net.g[o]));
                e.write(net.h, gaussian(std::size_t(n_embd * 9), 51));
                e.run(tokens);
                e.check_nodes(tokens, [](graph::op) { return mmvq_nmse_bound; });
                for (float v : floats_of(e.gpu, net.out, std::size_t(n_embd * tokens))) CHECK(std::isfinite(v));
            }
        }
}

TEST_CASE("a router of more than 256 experts runs as its mul_mat, then its softmax and top_k, agreeing with the CPU backend") {
    LLMRT_NEEDS_CUDA_DEVICE();
    test::moe_net net(qtype::q8_0, 64, 32, 300, 4, 3);  // past router_top_k's 256 experts held in registers
    pair_of_executors e(net.g);
    for (int64_t tokens : {int64_t(1), int64_t(3)}) {
        CAPTURE(tokens);
        const std::vector<std::byte> poison(std::size_t(32 * 300 * 3 * 4), std::byte{0xff});
        for (graph::tensor o : {net.ids, net.weights, net.down_out, net.out})
            e.gpu.write_bytes(o, 0, poison.data(), graph::tensor_bytes(net.g[o]));
        e.write(net.h, gaussian(std::size_t(64 * 3), 52));
        e.run(tokens);
        e.check_nodes(tokens, [](graph::op) { return mmvq_nmse_bound; });
    }
}

TEST_CASE("top_k takes ties in index order and expert_weights and weighted_sum give the CPU backend's bits") {
    LLMRT_NEEDS_CUDA_DEVICE();
    graph::graph g(3);
    const auto x = g.input("x", qtype::f32, 10);
    const auto ys = g.input("ys", qtype::f32, 30);
    const auto ids = g.top_k(x, 3);
    const auto w = g.expert_weights(x, ids, graph::expert_norm::sum);
    const auto sum = g.weighted_sum(ys, w);
    for (graph::tensor o : {ids, w, sum}) g.mark_output(o);
    pair_of_executors e(g);
    e.write(x, std::vector<float>{0.5f, 2.0f, 1.0f, 2.0f, 0.5f, 2.0f, 1.0f, -3.0f, 0.0f, 2.0f,
                                  0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f,
                                  1e-9f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2e-9f});
    e.write(ys, gaussian(90, 52));
    e.run(3);
    std::vector<int32_t> got(9);
    e.gpu.read(ids, std::span<int32_t>(got));
    CHECK(got == std::vector<int32_t>{1, 3, 5, 0, 1, 2, 9, 0, 1});
    e.check_nodes(3, exact_ops);
    std::vector<float> a(30), b(30);
    e.gpu.read(sum, std::span<float>(a));
    e.cpu.read(sum, std::span<float>(b));
    CHECK(same_bits(a, b));
}

TEST_CASE("mul_mat_id with f32 experts or experts of a type the backend was not built for is refused at prepare, naming them") {
    LLMRT_NEEDS_CUDA_DEVICE();
    graph::graph g(1);
    const auto x = g.input("x", qtype::f32, 32);
    std::vector<float> experts(32 * 8, 1.0f);
    g.mark_output(g.mul_mat_id(g.weight("experts", qtype::f32, 32, 8, experts.data()), x, g.top_k(x, 2), 4));
    test_backend b;
    CHECK_THROWS_WITH_AS(graph::executor<test_backend>(b, g), doctest::Contains("'experts'"), llmrt::error);
}

TEST_CASE("every graph of gpt-oss's ops and options that the backend once refused prepares, runs and agrees with the CPU backend") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (const test::oss_feature& f : test::oss_features()) {
        CAPTURE(f.name);
        const graph::graph g = f.build();
        pair_of_executors e(g);
        uint32_t seed = 70;
        for (std::size_t id = 0; id < g.nodes().size(); ++id) {
            const graph::node& nd = g.nodes()[id];
            const graph::tensor t{int32_t(id)};
            if (nd.op != graph::op::input) continue;
            if (nd.type == graph::i32_type)
                e.write(t, std::vector<int32_t>{5, 6});  // positions (the caches hold 8)
            else
                e.write(t, gaussian(std::size_t(nd.ne0 * 2), seed++, 3.0f));
        }
        e.run(2);
        e.check_nodes(2, [](graph::op o) { return o == graph::op::attention ? 1e-9 : test::exact_nmse_bound; });
    }
}

TEST_CASE("collectives of one rank copy their input, and ones over more ranks than the backend's group are refused, naming them") {
    LLMRT_NEEDS_CUDA_DEVICE();
    for (bool gather : {false, true}) {
        CAPTURE(gather);
        {
            graph::graph g(2);
            const auto x = g.input("x", qtype::f32, 32);
            const auto y = gather ? g.all_gather(x, 32, 1) : g.all_reduce(x, 1);
            g.mark_output(y);
            test_backend b;
            graph::executor<test_backend> e(b, g);
            const auto v = gaussian(64, 5);
            e.write(x, std::span<const float>(v));
            e.run(2);
            std::vector<float> out(64, -1.0f);
            e.read(y, std::span<float>(out));
            CHECK(out == v);
        }
        graph::graph g(1);
        const auto x = g.input("x", qtype::f32, 16);
        g.mark_output(gather ? g.all_gather(x, 32, 2) : g.all_reduce(x, 2));
        test_backend b;
        CHECK_THROWS_WITH_AS(graph::executor<test_backend>(b, g), doctest::Contains(gather ? "all_gather" : "all_reduce"),
                             llmrt::error);
        CHECK_THROWS_WITH_AS(graph::executor<test_backend>(b, g), doctest::Contains("2 ranks"), llmrt::error);
    }
}

TEST_CASE("read_together gives the bytes separate reads give: through the bounce buffer, past it, and from an input") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t n0 = 17000 + 3;  // 4 columns of it: 272 KB, past the 64 KiB bounce buffer
    graph::graph g(4);
    auto x = g.input("x", qtype::f32, n0);
    auto b = g.input("b", qtype::f32, n0);
    const auto sum = g.add(x, b), next = g.argmax(x), top = g.top_probability(x);
    for (graph::tensor t : {sum, next, top}) g.mark_output(t);
    test_backend cuda;
    graph::executor<test_backend> ex(cuda, g);
    for (int64_t n : {1, 4}) {
        CAPTURE(n);
        const auto cols = std::size_t(n), all = std::size_t(n0 * n);
        const auto xs = gaussian(all, 40 + uint32_t(n), 3.0f), bs = gaussian(all, 50 + uint32_t(n));
        ex.write(x, std::span<const float>(xs));
        ex.write(b, std::span<const float>(bs));
        ex.run(n);
        std::vector<float> sum_one(all), top_one(cols), x_one(all);
        std::vector<int32_t> next_one(cols);
        ex.read(sum, std::span<float>(sum_one));
        ex.read(next, std::span<int32_t>(next_one));
        ex.read(top, std::span<float>(top_one));
        ex.read(x, std::span<float>(x_one));
        // Poisoned destinations; the small reads both before and after the large one.
        std::vector<float> sum_all(all, NAN), top_all(cols, NAN), x_all(all, NAN);
        std::vector<int32_t> next_all(cols, -7), next_again(cols, -7);
        const graph::read_request reads[] = {graph::read_request::of(next, std::span<int32_t>(next_all)),
                                             graph::read_request::of(sum, std::span<float>(sum_all)),
                                             graph::read_request::of(top, std::span<float>(top_all)),
                                             graph::read_request::of(x, std::span<float>(x_all)),
                                             graph::read_request::of(next, std::span<int32_t>(next_again))};
        ex.read_together(reads);
        CHECK(same_bits(sum_all, sum_one));
        CHECK(same_bits(top_all, top_one));
        CHECK(same_bits(x_all, x_one));
        CHECK(next_all == next_one);
        CHECK(next_again == next_one);
        std::vector<float> too_many(std::size_t(n0 * 4) + 1);  // past the tensor's 4 columns
        const graph::read_request past_end[] = {graph::read_request::of(sum, std::span<float>(too_many))};
        CHECK_THROWS_AS(ex.read_together(past_end), llmrt::error);
    }
}
