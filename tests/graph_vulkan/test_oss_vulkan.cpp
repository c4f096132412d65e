// gpt-oss's ops and options on the Vulkan backend against the CPU backend, on fresh random inputs
// of sizes that are no multiple of a work-group, with the Vulkan outputs poisoned (NaN) first: rope
// with YaRN as an op and inside the fused rope_cache step, attention with a sliding window and
// with sinks (the three-dispatch op and the split attention step), swiglu_oai past its clamp,
// add_id, expert_weights with expert_norm::softmax, and a gpt-oss-shaped block fused and unfused,
// in batches of 1 and more.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <llmrt/graph/executor.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/vulkan/backend.hpp>

#include "../graph/oss_fixtures.hpp"
#include "../vulkan/vulkan_test_device.hpp"
#include "side_by_side.hpp"

using namespace llmrt;

namespace {

using testing::gaussian;
using test::ids_of;
using test::input_of;
using test::same_bits;
using test::side_by_side;

using test::count_kind;

}  // namespace

TEST_CASE("rope with YaRN agrees with the CPU backend in normal and NeoX order, with frequency factors, at large positions") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const std::vector<float> factors{1.0f, 1.5f, 2.0f, 4.0f, 8.0f, 32.0f, 1.0f, 2.0f, 3.0f};
    for (auto order : {graph::rope_order::normal, graph::rope_order::neox}) {
        CAPTURE(int(order));
        graph::rope_params p = test::oss_rope(7, 24);  // 168 values per column, n_rot 24
        p.order = order;
        graph::rope_params partial = p;  // n_rot < head_dim: the tail passes through
        partial.n_rot = 18;
        const graph::yarn_dims d = graph::yarn_corr_dims(18, 4096, p.freq_base);
        partial.corr_low = d.low;
        partial.corr_high = d.high;
        graph::graph g(6);
        const auto x = g.input("x", qtype::f32, 7 * 24);
        const auto pos = g.input("pos", graph::i32_type, 1);
        const auto f = g.weight("factors", qtype::f32, 9, 1, factors.data());
        const auto a = g.rope(x, pos, p);
        const auto b = g.rope(x, pos, partial, f);
        g.mark_output(a);
        g.mark_output(b);
        side_by_side s(ctx, g);
        for (int64_t n : {int64_t(1), int64_t(6)}) {
            CAPTURE(n);
            s.poison(a);
            s.poison(b);
            s.run({input_of(x, gaussian(std::size_t(7 * 24 * 6), 301 + uint64_t(n))),
                   input_of(pos, ids_of({32767, 1, 7, 1000, 4095, 0}))},
                  n);
            MESSAGE("YaRN rope NMSE: " << s.check_nodes(n, 1e-9));
        }
    }
}

TEST_CASE("the fused rope_cache step with YaRN writes the CPU backend's q, caches and attention") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (qtype kv : {qtype::f32, qtype::f16}) {
        CAPTURE(std::string(name(kv)));
        const int32_t n_head = 6, n_head_kv = 3, head_dim = 26;  // 156 q values per column
        const int64_t n_ctx = 20, q_ne0 = n_head * head_dim, kv_ne0 = n_head_kv * head_dim;
        graph::rope_params rq = test::oss_rope(n_head, head_dim);
        graph::rope_params rk = rq;
        rk.n_head = n_head_kv;
        graph::graph g(7);
        const auto q = g.input("q", qtype::f32, q_ne0);
        const auto k = g.input("k", qtype::f32, kv_ne0);
        const auto v = g.input("v", qtype::f32, kv_ne0);
        const auto pos = g.input("pos", graph::i32_type, 1);
        const auto qr = g.rope(q, pos, rq);
        const auto kc = g.set_rows(g.state("k_cache", kv, kv_ne0, n_ctx), g.rope(k, pos, rk), pos);
        const auto vc = g.set_rows(g.state("v_cache", kv, kv_ne0, n_ctx), v, pos);
        const auto out = g.attention(qr, kc, vc, pos, {n_head, n_head_kv, head_dim, 0.2f});
        g.mark_output(qr);
        g.mark_output(out);
        side_by_side s(ctx, g);
        CHECK(count_kind(s.vk.get_plan(), graph::step_kind::rope_cache) == 1);
        const std::vector<std::vector<int32_t>> steps{{0, 1, 2, 3, 4, 5, 6}, {7}, {8, 9}, {19}};
        uint64_t seed = 310;
        for (const auto& positions : steps) {
            const auto n = int64_t(positions.size());
            CAPTURE(positions[0]);
            s.poison(qr);
            s.poison(out);
            s.run({input_of(q, gaussian(std::size_t(q_ne0 * n), ++seed)), input_of(k, gaussian(std::size_t(kv_ne0 * n), ++seed)),
                   input_of(v, gaussian(std::size_t(kv_ne0 * n), ++seed)), input_of(pos, positions)},
                  n);
            MESSAGE("rope_cache with YaRN, largest NMSE: " << s.check_nodes(n, 1e-8));
        }
    }
}

TEST_CASE("attention with a window shorter than the context and with sinks agrees with the CPU backend, as op and as step") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int32_t n_head = 6, n_head_kv = 2, head_dim = 24;
    const int64_t n_ctx = 300, q_ne0 = n_head * head_dim, kv_ne0 = n_head_kv * head_dim, max_batch = 70;
    // A sink far above the scores, one far below, the others near them.
    const std::vector<float> sink_values{5.0f, -30.0f, 0.3f, -0.7f, 1.5f, 0.0f};
    struct variant {
        int32_t window = 0;
        bool sinks = false;
    };
    for (const variant& va : {variant{5, false}, variant{0, true}, variant{201, true}, variant{1, true}})
        for (bool fuse : {true, false}) {
            CAPTURE(va.window);
            CAPTURE(va.sinks);
            CAPTURE(fuse);
            graph::attention_params p{n_head, n_head_kv, head_dim, 0.3f};
            p.window = va.window;
            graph::graph g(max_batch);
            const auto q = g.input("q", qtype::f32, q_ne0);
            const auto k = g.input("k", qtype::f32, kv_ne0);
            const auto v = g.input("v", qtype::f32, kv_ne0);
            const auto pos = g.input("pos", graph::i32_type, 1);
            const auto kc = g.set_rows(g.state("k_cache", qtype::f16, kv_ne0, n_ctx), k, pos);
            const auto vc = g.set_rows(g.state("v_cache", qtype::f16, kv_ne0, n_ctx), v, pos);
            const auto sinks = va.sinks ? g.weight("sinks", qtype::f32, n_head, 1, sink_values.data()) : graph::tensor{};
            const auto out = g.attention(q, kc, vc, pos, p, sinks);
            g.mark_output(out);
            side_by_side s(ctx, g, fuse);
            CHECK(count_kind(s.vk.get_plan(), graph::step_kind::attention) == (fuse ? 1u : 0u));
            // Batches of 70 up to position 279 (past two tiles of 128 keys), then one token at a
            // time, then a batch of 3 at the end of the cache.
            std::vector<std::vector<int32_t>> steps;
            for (int32_t first = 0; first < 280; first += 70) {
                steps.emplace_back();
                for (int32_t i = 0; i < 70; ++i) steps.back().push_back(first + i);
            }
            steps.push_back({280});
            steps.push_back({281});
            steps.push_back({297, 298, 299});
            uint64_t seed = 400;
            for (const auto& positions : steps) {
                const auto n = int64_t(positions.size());
                CAPTURE(positions[0]);
                s.poison(out);
                s.run({input_of(q, gaussian(std::size_t(q_ne0 * n), ++seed, 2.0f)),
                       input_of(k, gaussian(std::size_t(kv_ne0 * n), ++seed)),
                       input_of(v, gaussian(std::size_t(kv_ne0 * n), ++seed)),
                       input_of(pos, positions)},
                      n);
                s.check_nodes(n, 1e-9);
            }
        }
}

TEST_CASE("swiglu_oai agrees with the CPU backend where gate and up lie beyond the limit both ways") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t ne0 = 200;
    graph::graph g(5);
    const auto gate = g.input("gate", qtype::f32, ne0);
    const auto up = g.input("up", qtype::f32, ne0);
    const auto y = g.swiglu_oai(gate, up, 1.702f, 7.0f);
    g.mark_output(y);
    side_by_side s(ctx, g);
    for (int64_t n : {int64_t(1), int64_t(5)}) {
        CAPTURE(n);
        s.poison(y);
        // A standard deviation of 8: about a third of the values lie past ±7.
        std::vector<float> gv = gaussian(std::size_t(ne0 * n), 500 + uint64_t(n), 8.0f);
        std::vector<float> uv = gaussian(std::size_t(ne0 * n), 510 + uint64_t(n), 8.0f);
        gv[0] = 7.0f;  // at the limit exactly, and far past it
        uv[0] = -7.0f;
        gv[1] = 1e4f;
        uv[1] = -1e4f;
        s.run({input_of(gate, gv), input_of(up, uv)}, n);
        MESSAGE("swiglu_oai NMSE: " << s.check_nodes(n, 1e-10));
        const auto got = s.read_vk<float>(y, std::size_t(ne0 * n));
        const auto want = s.read_cpu<float>(y, std::size_t(ne0 * n));
        CHECK(got[1] == doctest::Approx(want[1]).epsilon(1e-5));  // min(1e4, 7) · σ(1.702·7) · (−7 + 1)
        for (float v : got) CHECK(std::isfinite(v));
    }
}

TEST_CASE("add_id gives the CPU backend's bits, and ids outside the bias's experts raise llmrt::error") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t rows = 150, n_expert = 5, k = 3;
    const std::vector<float> bias = gaussian(std::size_t(rows * n_expert), 520);
    graph::graph g(4);
    const auto x = g.input("x", qtype::f32, rows * k);
    const auto ids = g.input("ids", graph::i32_type, k);
    const auto y = g.add_id(x, g.weight("bias", qtype::f32, rows, n_expert, bias.data()), ids);
    g.mark_output(y);
    side_by_side s(ctx, g);
    for (int64_t n : {int64_t(1), int64_t(4)}) {
        CAPTURE(n);
        s.poison(y);
        s.run({input_of(x, gaussian(std::size_t(rows * k * n), 521 + uint64_t(n))),
               input_of(ids, ids_of({4, 0, 4, 2, 3, 1, 0, 0, 0, 1, 2, 3}))},
              n);
        CHECK(same_bits(s.read_vk<float>(y, std::size_t(rows * k * n)), s.read_cpu<float>(y, std::size_t(rows * k * n))));
    }
    s.vk.write(ids, std::span<const int32_t>(ids_of({0, 5, 1})));
    CHECK_THROWS_WITH_AS(s.vk.run(1), doctest::Contains("add_id: id 5 of token 0"), llmrt::error);
    s.vk.write(ids, std::span<const int32_t>(ids_of({0, 4, 1})));
    CHECK_NOTHROW(s.vk.run(1));
}

TEST_CASE("expert_weights with expert_norm::softmax agrees with the CPU backend and sums to one") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t n_expert = 70;
    for (int64_t k : {int64_t(1), int64_t(4), int64_t(70)}) {
        CAPTURE(k);
        graph::graph g(5);
        const auto x = g.input("logits", qtype::f32, n_expert);
        const auto ids = g.top_k(x, k);
        const auto w = g.expert_weights(x, ids, graph::expert_norm::softmax);
        g.mark_output(ids);
        g.mark_output(w);
        side_by_side s(ctx, g);
        for (int64_t n : {int64_t(1), int64_t(5)}) {
            CAPTURE(n);
            s.poison(w);
            s.run({input_of(x, gaussian(std::size_t(n_expert * n), 530 + uint64_t(n + k), 3.0f))}, n);
            MESSAGE("softmax weights NMSE: " << s.check_nodes(n, 1e-12));
            const auto got = s.read_vk<float>(w, std::size_t(k * n));
            for (int64_t c = 0; c < n; ++c) {
                double total = 0.0;
                for (int64_t j = 0; j < k; ++j) total += got[std::size_t(c * k + j)];
                CHECK(total == doctest::Approx(1.0).epsilon(1e-6));
            }
        }
    }
}

TEST_CASE("a gpt-oss block with q8_0 experts agrees with the CPU backend fused and unfused, in a batch and token by token") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (bool fuse : {true, false}) {
        CAPTURE(fuse);
        test::oss_block b(6, qtype::q8_0);
        side_by_side s(ctx, b.g, fuse);
        if (fuse) CHECK(count_kind(s.vk.get_plan(), graph::step_kind::rope_cache) == 1);
        const auto x = gaussian(std::size_t(b.n_embd * 16), 540, 1.0f);
        // Positions 0..5 in one batch, then 6..15 one at a time: the window of 3 slides past the
        // start of the cache.
        for (int32_t t = 0; t < 16;) {
            const int32_t n = t == 0 ? 6 : 1;
            CAPTURE(t);
            std::vector<int32_t> positions;
            for (int32_t i = 0; i < n; ++i) positions.push_back(t + i);
            s.poison(b.out);
            s.poison(b.weights);
            s.run({input_of(b.h, std::vector<float>(x.begin() + t * b.n_embd, x.begin() + (t + n) * b.n_embd)),
                   input_of(b.pos, positions)},
                  n);
            s.check_nodes(n);
            for (float v : s.read_vk<float>(b.out, std::size_t(b.n_embd * n))) CHECK(std::isfinite(v));
            t += n;
        }
    }
}

TEST_CASE("the Vulkan backend runs every small graph of gpt-oss's ops and options that it used to refuse") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (const test::oss_feature& f : test::oss_features()) {
        CAPTURE(f.name);
        vulkan::backend b(ctx);
        graph::executor<vulkan::backend> ex(b, f.build());
        CHECK_NOTHROW(ex.run(2));
    }
}
