// gpt-oss's ops and options on the CUDA backend against the CPU backend, node by node: rope with
// YaRN (an op, and fused into the rope_cache step of a gpt-oss-shaped block), attention with a
// sliding window and sinks on the split form and on the one-block-per-head form, swiglu_oai,
// add_id, and top_k carrying expert_weights with expert_norm::softmax. The device's outputs are
// poisoned (NaN, id -1) before every run; batches of one token and of several. Every case skips,
// passing with a message, on a machine without a CUDA device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <llmrt/cuda/ops/split_attention.cuh>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/reference.hpp>

#include "../graph/oss_fixtures.hpp"
#include "cuda_pair.cuh"

using namespace llmrt;

using testing::gaussian;
using testing::quantize_matrix;
using test::carrying_steps;
using test::exact_ops;
using test::floats_of;
using test::pair_of_executors;

namespace {

// All-ones bytes: NaN in f32 and f16, -1 in i32 — what an element a kernel skipped would keep.
void poison(graph::executor<test::test_backend>& ex, const graph::graph& g, std::initializer_list<graph::tensor> ts) {
    for (graph::tensor t : ts) {
        const std::vector<std::byte> bytes(graph::tensor_bytes(g[t]), std::byte{0xff});
        ex.write_bytes(t, 0, bytes.data(), bytes.size());
    }
}

std::vector<int32_t> positions(int32_t first, int32_t count) {
    std::vector<int32_t> p(static_cast<std::size_t>(count));
    for (int32_t i = 0; i < count; ++i) p[std::size_t(i)] = first + i;
    return p;
}

std::size_t count_steps(const graph::plan& p, graph::step_kind kind) {
    std::size_t n = 0;
    for (const auto& s : p.steps) n += s.kind == kind;
    return n;
}

}  // namespace

TEST_CASE("rope with YaRN agrees with the CPU backend in both orders, with and without frequency factors") {
    LLMRT_NEEDS_CUDA_DEVICE();
    std::vector<float> factors(24);
    for (std::size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.75f * float(i);
    for (auto order : {graph::rope_order::normal, graph::rope_order::neox})
        for (bool with_factors : {false, true})
            for (bool ext : {true, false}) {  // gpt-oss's YaRN, or attn_factor alone (ext_factor 0)
                CAPTURE(int(order));
                CAPTURE(with_factors);
                CAPTURE(ext);
                graph::rope_params p = test::oss_rope(3, 64);
                p.order = order;
                p.n_rot = 48;  // elements past n_rot pass through
                if (!ext) {
                    p.ext_factor = 0.0f;
                    p.attn_factor = 0.75f;
                }
                REQUIRE(p.yarn());
                graph::graph g(5);
                const auto x = g.input("x", qtype::f32, 3 * 64);
                const auto pos = g.input("pos", graph::i32_type, 1);
                const auto f = with_factors ? g.weight("factors", qtype::f32, 24, 1, factors.data()) : graph::tensor{};
                const auto y = g.rope(x, pos, p, f);
                g.mark_output(y);
                pair_of_executors ex(g);
                for (int64_t n : {1, 5}) {
                    CAPTURE(n);
                    poison(ex.gpu, g, {y});
                    ex.write(x, gaussian(3 * 64 * 5, 3 + uint64_t(n), 2.0f));
                    ex.write(pos, std::vector<int32_t>{4095, 0, 1, 17, 500});
                    ex.run(n);
                    ex.check_nodes(n, exact_ops);
                }
            }
}

TEST_CASE("attention with a sliding window and sinks agrees with the CPU backend on the split and the one-block form") {
    LLMRT_NEEDS_CUDA_DEVICE();
    struct shape {
        int32_t n_head = 0, n_head_kv = 0, head_dim = 0;
    };
    // 8/2 x 64: the split form (gpt-oss's head_dim; at most 4 kv heads: chunks of 16 keys);
    // 6/2 x 64: 3 query heads per kv head, the split form in blocks of one head; 4/2 x 36: rows of
    // 72 bytes in f16 (the one-block form), of 144 in f32 (the split form without paired elements).
    const shape shapes[] = {{8, 2, 64}, {6, 2, 64}, {4, 2, 36}};
    const int64_t n_ctx = 64;
    for (qtype kv : {qtype::f16, qtype::f32})
        for (const shape& sh : shapes)
            for (int32_t window : {0, 3, 17})  // 17: a chunk of 16 keys and one of 1
                for (bool with_sinks : {false, true}) {
                    if (window == 0 && !with_sinks) continue;  // plain attention: test_graph_cuda
                    CAPTURE(std::string(name(kv)));
                    CAPTURE(sh.n_head);
                    CAPTURE(sh.head_dim);
                    CAPTURE(window);
                    CAPTURE(with_sinks);
                    graph::attention_params p{sh.n_head, sh.n_head_kv, sh.head_dim, 1.0f / std::sqrt(float(sh.head_dim))};
                    p.window = window;
                    const bool split = cuda::ops::split_attention_supports(p, kv);
                    CHECK(split == (sh.head_dim != 36 || kv == qtype::f32));
                    const int64_t q_ne0 = int64_t(sh.n_head) * sh.head_dim, kv_ne0 = int64_t(sh.n_head_kv) * sh.head_dim;
                    const auto sinks = gaussian(sh.n_head, 7, 3.0f);
                    graph::graph g(40);
                    const auto q = g.input("q", qtype::f32, q_ne0);
                    const auto k = g.input("k", qtype::f32, kv_ne0);
                    const auto v = g.input("v", qtype::f32, kv_ne0);
                    const auto pos = g.input("pos", graph::i32_type, 1);
                    const auto k_state = g.state("k_cache", kv, kv_ne0, n_ctx);
                    const auto v_state = g.state("v_cache", kv, kv_ne0, n_ctx);
                    const auto s = with_sinks ? g.weight("sinks", qtype::f32, sh.n_head, 1, sinks.data()) : graph::tensor{};
                    const auto att = g.attention(q, g.set_rows(k_state, k, pos), g.set_rows(v_state, v, pos), pos, p, s);
                    g.mark_output(att);
                    pair_of_executors ex(g);
                    // A prompt of 40 (the window slides within it), one token, three, then two
                    // tokens after a gap with every cache column before their windows NaN: keys
                    // outside the window are never read.
                    const std::vector<std::vector<int32_t>> runs{positions(0, 40), {40}, {41, 42, 43}, {55, 56}};
                    uint64_t seed = 200;
                    for (const auto& ps : runs) {
                        const auto n = int64_t(ps.size());
                        CAPTURE(ps.front());
                        CAPTURE(n);
                        if (ps.front() == 55 && window > 0) {
                            const std::size_t column = std::size_t(kv_ne0) * (kv == qtype::f16 ? 2 : 4);
                            const std::vector<std::byte> nan(column * std::size_t(56 - window), std::byte{0xff});
                            for (graph::tensor c : {k_state, v_state}) {
                                ex.cpu.write_bytes(c, 0, nan.data(), nan.size());
                                ex.gpu.write_bytes(c, 0, nan.data(), nan.size());
                            }
                        }
                        poison(ex.gpu, g, {att});
                        ex.write(q, gaussian(q_ne0 * n, seed++, 2.0f));
                        ex.write(k, gaussian(kv_ne0 * n, seed++));
                        ex.write(v, gaussian(kv_ne0 * n, seed++));
                        ex.write(pos, ps);
                        ex.run(n);
                        ex.check_nodes(n, [](graph::op) { return 1e-9; });
                        for (float x : floats_of(ex.gpu, att, std::size_t(q_ne0 * n))) CHECK(std::isfinite(x));
                    }
                }
}

TEST_CASE("swiglu_oai agrees with the CPU backend, gate and up beyond the limit both ways") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t n0 = 300;  // not a multiple of the block
    graph::graph g(7);
    const auto gate = g.input("gate", qtype::f32, n0);
    const auto up = g.input("up", qtype::f32, n0);
    const auto y = g.swiglu_oai(gate, up, 1.702f, 7.0f);
    g.mark_output(y);
    pair_of_executors ex(g);
    for (int64_t n : {1, 7}) {
        CAPTURE(n);
        poison(ex.gpu, g, {y});
        const auto gs = gaussian(n0 * n, 30 + uint64_t(n), 10.0f), us = gaussian(n0 * n, 40 + uint64_t(n), 10.0f);
        int64_t beyond = 0;
        for (std::size_t i = 0; i < gs.size(); ++i) beyond += (std::fabs(gs[i]) > 7.0f) + (std::fabs(us[i]) > 7.0f);
        CHECK(beyond > 0);
        ex.write(gate, gs);
        ex.write(up, us);
        ex.run(n);
        ex.check_nodes(n, exact_ops);
    }
}

TEST_CASE("add_id adds each slot's expert bias as the CPU backend does") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t rows = 100, n_expert = 5, k = 3;  // rows: not a multiple of the block
    const auto bias = gaussian(rows * n_expert, 60);
    graph::graph g(6);
    const auto x = g.input("x", qtype::f32, k * rows);
    const auto ids = g.input("ids", graph::i32_type, k);
    const auto y = g.add_id(x, g.weight("bias", qtype::f32, rows, n_expert, bias.data()), ids);
    g.mark_output(y);
    pair_of_executors ex(g);
    for (int64_t n : {1, 6}) {
        CAPTURE(n);
        std::vector<int32_t> id(std::size_t(k * 6));
        for (std::size_t i = 0; i < id.size(); ++i) id[i] = int32_t((i * 7 + 3) % std::size_t(n_expert));
        poison(ex.gpu, g, {y});
        ex.write(x, gaussian(k * rows * 6, 61 + uint64_t(n)));
        ex.write(ids, id);
        ex.run(n);
        ex.check_nodes(n, exact_ops);
    }
}

TEST_CASE("shard_ids and shard_weights (expert parallelism) give the CPU backend's ids and weights") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t k = 5, n_expert = 24;
    graph::graph g(9);
    const auto ids = g.input("ids", graph::i32_type, k);
    const auto w = g.input("w", qtype::f32, k);
    const auto local = g.shard_ids(ids, 8, 8);
    const auto held = g.shard_weights(w, ids, 8, 8);
    g.mark_output(local);
    g.mark_output(held);
    pair_of_executors ex(g);
    for (int64_t n : {1, 9}) {
        CAPTURE(n);
        std::vector<int32_t> id(std::size_t(k * 9));
        for (std::size_t i = 0; i < id.size(); ++i) id[i] = int32_t((i * 11 + i / 7) % std::size_t(n_expert));
        id[0] = id[1] = id[2] = id[3] = id[4] = 20;  // token 0: no expert of the rank's
        poison(ex.gpu, g, {local, held});
        ex.write(ids, id);
        ex.write(w, gaussian(k * 9, 64 + uint64_t(n)));
        ex.run(n);
        ex.check_nodes(n, exact_ops);
    }
}

TEST_CASE("expert_weights with expert_norm::softmax agrees with the CPU backend, carried by top_k and on its own") {
    LLMRT_NEEDS_CUDA_DEVICE();
    const int64_t n_expert = 32, k = 4;
    graph::graph g(9);
    const auto logits = g.input("logits", qtype::f32, n_expert);
    const auto ids = g.top_k(logits, k);
    const auto w = g.expert_weights(logits, ids, graph::expert_norm::softmax);
    // The same weights from ids the host writes: expert_weights' own kernel.
    const auto given = g.input("given", graph::i32_type, k);
    const auto w_given = g.expert_weights(logits, given, graph::expert_norm::softmax);
    for (graph::tensor o : {ids, w, w_given}) g.mark_output(o);
    pair_of_executors ex(g);
    CHECK(carrying_steps(ex.gpu.get_plan()) == 1);  // top_k's launch writes w
    for (int64_t n : {1, 9}) {
        CAPTURE(n);
        poison(ex.gpu, g, {ids, w, w_given});
        ex.write(logits, gaussian(n_expert * 9, 70 + uint64_t(n), 3.0f));
        std::vector<int32_t> chosen(std::size_t(k * 9));
        for (std::size_t i = 0; i < chosen.size(); ++i) chosen[i] = int32_t((i * 5 + 1) % std::size_t(n_expert));
        ex.write(given, chosen);
        ex.run(n);
        ex.check_nodes(n, exact_ops);
    }
}

namespace {

// A gpt-oss-shaped block on quantized weights: biased q/k/v, YaRN rope fused with the f16 cache
// writes (rope_cache), a windowed attention with sinks (head_dim 64: the split form), the output
// projection, a biased f32 router, top_k carrying softmax weights, q8_0 experts with biases
// (mul_mat_id, add_id) and swiglu_oai.
struct oss_block {
    static constexpr int64_t n_embd = 128, n_head = 4, n_head_kv = 2, head_dim = 64, n_ctx = 32;
    static constexpr int64_t n_expert = 8, k = 3, n_ff = 96;
    std::vector<std::vector<float>> floats;
    std::vector<std::vector<uint8_t>> blocks;
    graph::graph g{8};
    graph::tensor h, pos, att, weights, out;

    graph::tensor f32(const std::string& name, int64_t ne0, int64_t ne1, uint64_t seed, float scale) {
        floats.push_back(gaussian(ne0 * ne1, seed, scale));
        return g.weight(name, qtype::f32, ne0, ne1, floats.back().data());
    }
    graph::tensor q8(const std::string& name, int64_t k_in, int64_t rows, uint64_t seed) {
        blocks.push_back(quantize_matrix(qtype::q8_0, gaussian(k_in * rows, seed, 0.08f), k_in));
        return g.weight(name, qtype::q8_0, k_in, rows, blocks.back().data());
    }

    oss_block() {
        h = g.input("h", qtype::f32, n_embd);
        pos = g.input("pos", graph::i32_type, 1);
        const auto kc = g.state("k", qtype::f16, n_head_kv * head_dim, n_ctx);
        const auto vc = g.state("v", qtype::f16, n_head_kv * head_dim, n_ctx);
        const auto x = g.rms_norm(h, 1e-5f);
        auto biased = [&](const std::string& name, int64_t rows, uint64_t seed) {
            return g.add(g.mul_mat(q8(name, n_embd, rows, seed), x), f32(name + ".b", rows, 1, seed + 50, 0.2f));
        };
        const graph::rope_params rq = test::oss_rope(n_head, head_dim);
        graph::rope_params rk = rq;
        rk.n_head = n_head_kv;
        const auto q = g.rope(biased("q", n_head * head_dim, 1), pos, rq);
        const auto kr = g.rope(biased("k", n_head_kv * head_dim, 2), pos, rk);
        const auto v = biased("v", n_head_kv * head_dim, 3);
        graph::attention_params ap{n_head, n_head_kv, head_dim, 0.125f};
        ap.window = 5;
        att = g.attention(q, g.set_rows(kc, kr, pos), g.set_rows(vc, v, pos), pos, ap, f32("sinks", n_head, 1, 4, 2.0f));
        const auto h1 = g.add(h, g.mul_mat(q8("o", n_head * head_dim, n_embd, 5), att));
        const auto x2 = g.rms_norm(h1, 1e-5f);
        const auto logits = g.add(g.mul_mat(f32("router", n_embd, n_expert, 6, 0.3f), x2), f32("router.b", n_expert, 1, 56, 0.2f));
        const auto ids = g.top_k(logits, k);
        weights = g.expert_weights(logits, ids, graph::expert_norm::softmax);
        auto expert = [&](const std::string& name, graph::tensor in, int64_t k_in, int64_t rows, uint64_t seed) {
            const auto y = g.mul_mat_id(q8(name, k_in, rows * n_expert, seed), in, ids, n_expert);
            return g.add_id(y, f32(name + ".b", rows, n_expert, seed + 50, 0.2f), ids);
        };
        const auto act = g.swiglu_oai(expert("gate", x2, n_embd, n_ff, 7), expert("up", x2, n_embd, n_ff, 8), 1.702f, 7.0f);
        out = g.add(h1, g.weighted_sum(expert("down", act, n_ff, n_embd, 9), weights));
        for (graph::tensor o : {att, weights, out}) g.mark_output(o);
    }
};

}  // namespace

TEST_CASE("a gpt-oss block (YaRN rope_cache, windowed attention with sinks, softmax-weighted biased experts) agrees with the CPU backend") {
    LLMRT_NEEDS_CUDA_DEVICE();
    oss_block b;
    pair_of_executors ex(b.g);
    CHECK(count_steps(ex.gpu.get_plan(), graph::step_kind::rope_cache) == 1);  // the YaRN ropes fused
    CHECK(carrying_steps(ex.gpu.get_plan()) >= 1);                             // top_k carries the weights
    // A prompt of 6 (past the window of 5), then tokens one at a time, then a batch of 3.
    const std::vector<std::vector<int32_t>> runs{positions(0, 6), {6}, {7}, positions(8, 3)};
    uint64_t seed = 90;
    for (const auto& ps : runs) {
        const auto n = int64_t(ps.size());
        CAPTURE(ps.front());
        CAPTURE(n);
        poison(ex.gpu, b.g, {b.att, b.weights, b.out});
        ex.write(b.h, gaussian(oss_block::n_embd * n, seed++, 1.0f));
        ex.write(b.pos, ps);
        ex.run(n);
        ex.check_nodes(n, [](graph::op) { return test::mmvq_nmse_bound; });
        for (float v : floats_of(ex.gpu, b.out, std::size_t(oss_block::n_embd * n))) CHECK(std::isfinite(v));
    }
}
