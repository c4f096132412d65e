// The graph executor's Vulkan backend against the CPU backend (Q8_1 activations for quantized
// weights, the reference of the GPU kernels): every op node by node within the mmvq NMSE bound,
// the bits where the formula leaves no freedom (get_rows, set_rows), batch invariance past mmvq's 8
// columns, determinism, state across runs, barriers, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/compare.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/vulkan/backend.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/reference.hpp>

#include "../graph/moe_fixtures.hpp"
#include "../vulkan/vulkan_test_device.hpp"
#include "side_by_side.hpp"

using namespace llmrt;

namespace {

using testing::gaussian;
using testing::quantize_matrix;
using test::ids_of;
using test::nmse_bound;
using test::input_of;
using test::same_bits;
using test::side_by_side;

std::vector<qtype> weight_qtypes() {
    std::vector<qtype> types;
    weight_types::for_each([&](auto tag) { types.push_back(decltype(tag)::type::id); });
    return types;
}

}  // namespace

TEST_CASE("get_rows gives the CPU backend's bits for tables of every float and weight type") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    std::vector<qtype> types{qtype::f32, qtype::f16, qtype::bf16};
    for (qtype t : weight_qtypes()) types.push_back(t);
    const int64_t k = 512, rows = 37;
    const std::vector<float> values = gaussian(std::size_t(k * rows), 11);
    for (qtype t : types) {
        CAPTURE(std::string(name(t)));
        const std::vector<uint8_t> table = quantize_matrix(t, values, k);
        graph::graph g(6);
        const auto ids = g.input("ids", graph::i32_type, 1);
        const auto y = g.get_rows(g.weight("table", t, k, rows, table.data()), ids);
        g.mark_output(y);
        side_by_side s(ctx, g);
        s.run({input_of(ids, ids_of({0, 36, 5, 5, 17, 2}))}, 6);
        CHECK(same_bits(s.read_vk<float>(y, std::size_t(k * 6)), s.read_cpu<float>(y, std::size_t(k * 6))));
    }
}

TEST_CASE("mul_mat agrees with the CPU backend within the mmvq NMSE bound for every weight type, 1 to 8 and more columns") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    std::vector<qtype> types = weight_qtypes();
    for (qtype t : {qtype::f32, qtype::f16, qtype::bf16}) types.push_back(t);
    const int64_t k = 512, rows = 75, max_batch = 17;
    const std::vector<float> w_values = gaussian(std::size_t(k * rows), 21, 0.05f);
    const std::vector<float> x_values = gaussian(std::size_t(k * max_batch), 22);
    for (qtype t : types) {
        CAPTURE(std::string(name(t)));
        const std::vector<uint8_t> w = quantize_matrix(t, w_values, k);
        graph::graph g(max_batch);
        const auto x = g.input("x", qtype::f32, k);
        g.mark_output(g.mul_mat(g.weight("w", t, k, rows, w.data()), x));
        side_by_side s(ctx, g);
        for (int64_t n : {1, 2, 3, 5, 7, 8, 11, 16, 17}) {
            CAPTURE(n);
            s.run({input_of(x, x_values)}, n);
            s.check_nodes(n);
        }
    }
}

TEST_CASE("each column of a batched run has the bits of a one-token run, past mmvq's 8 columns too") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t k = 256, rows = 200, max_batch = 13;
    const std::vector<uint8_t> w = quantize_matrix(qtype::q4_K, gaussian(std::size_t(k * rows), 31, 0.06f), k);
    const std::vector<float> norm = gaussian(std::size_t(k), 32);
    graph::graph g(max_batch);
    const auto x = g.input("x", qtype::f32, k);
    const auto h = g.mul(g.rms_norm(x, 1e-6f), g.weight("norm", qtype::f32, k, 1, norm.data()));
    const auto y = g.mul_mat(g.weight("w", qtype::q4_K, k, rows, w.data()), h);
    const auto probs = g.softmax(y);
    const auto best = g.argmax(y);
    for (auto t : {y, probs, best}) g.mark_output(t);
    vulkan::backend vk_backend(ctx);
    graph::executor<vulkan::backend> ex(vk_backend, g);
    const std::vector<float> xs = gaussian(std::size_t(k * max_batch), 33);
    ex.write(x, std::span<const float>(xs));
    ex.run(max_batch);
    std::vector<float> batch_y(static_cast<std::size_t>(rows * max_batch)), batch_p(batch_y.size());
    std::vector<int32_t> batch_best(static_cast<std::size_t>(max_batch));
    ex.read(y, std::span<float>(batch_y));
    ex.read(probs, std::span<float>(batch_p));
    ex.read(best, std::span<int32_t>(batch_best));
    for (int64_t c = 0; c < max_batch; ++c) {
        CAPTURE(c);
        ex.write(x, std::span<const float>(xs).subspan(std::size_t(c * k), std::size_t(k)));
        ex.run(1);
        std::vector<float> one_y(static_cast<std::size_t>(rows)), one_p(static_cast<std::size_t>(rows));
        std::vector<int32_t> one_best(1);
        ex.read(y, std::span<float>(one_y));
        ex.read(probs, std::span<float>(one_p));
        ex.read(best, std::span<int32_t>(one_best));
        CHECK(std::memcmp(one_y.data(), batch_y.data() + c * rows, std::size_t(rows) * 4) == 0);
        CHECK(std::memcmp(one_p.data(), batch_p.data() + c * rows, std::size_t(rows) * 4) == 0);
        CHECK(one_best[0] == batch_best[std::size_t(c)]);
    }
}

TEST_CASE("mul_mats of one input share its Q8_1 activations and agree with the CPU backend when memory is reused") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    // Three projections of x, as q, k and v are: with memory reuse the second one's result lands
    // in the scratch where the first left the activations it shares.
    const int64_t k = 256, rows = 100, max_batch = 8;
    std::vector<std::vector<uint8_t>> w;
    for (uint32_t i = 0; i < 3; ++i) w.push_back(quantize_matrix(qtype::q8_0, gaussian(std::size_t(k * rows), 101 + i, 0.06f), k));
    graph::graph g(max_batch);
    const auto x = g.input("x", qtype::f32, k);
    const auto hn = g.rms_norm(x, 1e-5f);
    std::vector<graph::tensor> y;
    for (std::size_t i = 0; i < 3; ++i)
        y.push_back(g.mul_mat(g.weight("w" + std::to_string(i), qtype::q8_0, k, rows, w[i].data()), hn));
    const auto out = g.add(g.add(y[0], y[1]), y[2]);
    g.mark_output(out);
    cpu::backend cpu_backend;
    vulkan::backend vk_backend(ctx);
    graph::executor<cpu::backend> cpu(cpu_backend, g);
    graph::executor<vulkan::backend> vk(vk_backend, g);
    const std::vector<float> xs = gaussian(std::size_t(k * max_batch), 104);
    for (int64_t n : {1, 5, 8}) {
        CAPTURE(n);
        cpu.write(x, std::span<const float>(xs));
        vk.write(x, std::span<const float>(xs));
        cpu.run(n);
        vk.run(n);
        std::vector<float> a(static_cast<std::size_t>(rows * n)), b(a.size());
        cpu.read(out, std::span<float>(a));
        vk.read(out, std::span<float>(b));
        double num = 0.0, den = 0.0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            num += (double(b[i]) - double(a[i])) * (double(b[i]) - double(a[i]));
            den += double(a[i]) * double(a[i]);
        }
        CHECK(num / den <= nmse_bound);
    }
    // Fused, the norm step writes the rounding the three products read; unfused, one quantization
    // serves them.
    const auto planned = vk_backend.prepare(vk.get_graph(), vk.get_plan());
    CHECK(planned.stats(1).dispatches == 1 + 3 + 2);  // norm step, 3 mmvq, 2 adds
    graph::executor<vulkan::backend> unfused(vk_backend, g, {.fuse = false});
    const auto planned_unfused = vk_backend.prepare(unfused.get_graph(), unfused.get_plan());
    CHECK(planned_unfused.stats(1).dispatches == 1 + 1 + 3 + 2);  // rms_norm, one quantization, 3 mmvq, 2 adds
}

TEST_CASE("rms_norm, mul, add, softmax, silu, swiglu, argmax and top_probability agree with the CPU backend") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t n = 300, max_batch = 5;  // columns longer than a work-group, not a multiple of it
    const std::vector<float> norm = gaussian(std::size_t(n), 41);
    graph::graph g(max_batch);
    const auto a = g.input("a", qtype::f32, n);
    const auto b = g.input("b", qtype::f32, n);
    const auto normed = g.rms_norm(a, 1e-5f);
    const auto scaled = g.mul(normed, g.weight("norm", qtype::f32, n, 1, norm.data()));  // broadcast
    const auto product = g.mul(scaled, b);
    const auto shifted = g.add(product, g.weight("bias", qtype::f32, n, 1, norm.data()));
    const auto sum = g.add(shifted, a);
    const auto act = g.silu(sum);
    const auto gated = g.swiglu(act, b);
    g.mark_output(g.softmax(gated));
    g.mark_output(g.argmax(gated));
    g.mark_output(g.top_probability(gated));
    side_by_side s(ctx, g);
    for (int64_t tokens : {1, 5}) {
        CAPTURE(tokens);
        s.run({input_of(a, gaussian(std::size_t(n * max_batch), 42, 3.0f)), input_of(b, gaussian(std::size_t(n * max_batch), 43))},
              tokens);
        MESSAGE("largest NMSE of the element-wise ops: " << s.check_nodes(tokens));
    }
}

TEST_CASE("top_probability of vocabulary-long columns agrees with the CPU backend, the output poisoned first") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t n = 128256 + 5;  // Llama 3's vocabulary and a few: not a multiple of the work-group
    std::vector<float> x = gaussian(std::size_t(n * 3), 112, 3.0f);
    x[std::size_t(n - 1)] = 40.0f;  // column 0: one token far ahead, a probability near 1
    graph::graph g(3);
    const auto in = g.input("x", qtype::f32, n);
    const auto top = g.top_probability(in);
    g.mark_output(top);
    side_by_side s(ctx, g);
    s.poison(top);
    s.run({input_of(in, x)}, 3);
    MESSAGE("NMSE of top_probability: " << s.check_nodes(3));
    const std::vector<float> got = s.read_vk<float>(top, 3);
    CHECK(got[0] > 0.99f);
    for (float p : got) CHECK((p > 0.0f && p <= 1.0f));
}

TEST_CASE("argmax over a vocabulary-long column gives the CPU backend's index, ties and NaN included") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t n = 50000;  // many work-groups' chunks, the last one partial
    std::vector<float> x = gaussian(std::size_t(n * 6), 111);
    auto column = [&](int64_t c) { return x.data() + c * n; };
    // 1: the largest value three times; 2: NaN at index 0; 3: NaNs elsewhere; 4: all equal;
    // 5: the largest value in the last, partial chunk.
    for (int64_t i : {7000, 30000, 49999}) column(1)[i] = 100.0f;
    column(2)[0] = std::nanf("");
    column(2)[123] = 100.0f;
    for (int64_t i : {0, 1, 2047, 2048, 40000}) column(3)[i + 1] = std::nanf("");
    column(3)[40002] = 100.0f;
    std::fill(column(4), column(4) + n, 0.5f);
    column(5)[49990] = 100.0f;
    graph::graph g(6);
    const auto in = g.input("x", qtype::f32, n);
    const auto best = g.argmax(in);
    g.mark_output(best);
    side_by_side s(ctx, g);
    s.run({input_of(in, x)}, 6);
    const std::vector<int32_t> got = s.read_vk<int32_t>(best, 6);
    CHECK(got == s.read_cpu<int32_t>(best, 6));
    CHECK(got[1] == 7000);
    CHECK(got[2] == 0);
    CHECK(got[3] == 40002);
    CHECK(got[4] == 0);
    CHECK(got[5] == 49990);
}

TEST_CASE("rope in normal and NeoX order agrees with the CPU backend, at large positions too") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (auto order : {graph::rope_order::normal, graph::rope_order::neox}) {
        CAPTURE(int(order));
        const graph::rope_params p{3, 20, 12, 10000.0f, order};  // n_rot < head_dim: the tail passes through
        graph::graph g(6);
        const auto x = g.input("x", qtype::f32, 60);
        const auto pos = g.input("pos", graph::i32_type, 1);
        g.mark_output(g.rope(x, pos, p));
        side_by_side s(ctx, g);
        s.run({input_of(x, gaussian(60 * 6, 51)), input_of(pos, ids_of({0, 1, 7, 1000, 4095, 32767}))}, 6);
        MESSAGE("rope NMSE: " << s.check_nodes(6, 1e-9));
    }
}

TEST_CASE("rope with linear scaling and frequency factors, a grouped rms_norm and a repeated weight agree with the CPU backend") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const std::vector<float> factors{1.0f, 1.5f, 2.0f, 4.0f, 8.0f, 32.0f};
    const std::vector<float> gain = gaussian(20, 52);
    for (auto order : {graph::rope_order::normal, graph::rope_order::neox}) {
        CAPTURE(int(order));
        const graph::rope_params p{3, 20, 12, 10000.0f, order, 0.125f};
        graph::graph g(6);
        const auto x = g.input("x", qtype::f32, 60);
        const auto pos = g.input("pos", graph::i32_type, 1);
        const auto f = g.weight("factors", qtype::f32, 6, 1, factors.data());
        const auto w = g.weight("gain", qtype::f32, 20, 1, gain.data());
        const auto normed = g.mul(g.rms_norm(x, 1e-6f, 20), w);  // per head, as qwen3's q/k norms
        g.mark_output(g.rope(g.add(normed, w), pos, p, f));
        g.mark_output(g.rope(x, pos, p));
        side_by_side s(ctx, g);
        s.run({input_of(x, gaussian(60 * 6, 53)), input_of(pos, ids_of({0, 1, 7, 1000, 4095, 32767}))}, 6);
        MESSAGE("NMSE: " << s.check_nodes(6, 1e-9));
    }
}

TEST_CASE("attention with grouped-query heads over an f32 or f16 KV cache agrees with the CPU backend run after run") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (qtype kv : {qtype::f32, qtype::f16}) {
        CAPTURE(std::string(name(kv)));
        const graph::attention_params p{6, 2, 16, 0.25f};
        const int64_t n_ctx = 40, q_ne0 = 6 * 16, kv_ne0 = 2 * 16;
        graph::graph g(5);
        const auto q = g.input("q", qtype::f32, q_ne0);
        const auto k = g.input("k", qtype::f32, kv_ne0);
        const auto v = g.input("v", qtype::f32, kv_ne0);
        const auto pos = g.input("pos", graph::i32_type, 1);
        const auto kc = g.set_rows(g.state("k_cache", kv, kv_ne0, n_ctx), k, pos);
        const auto vc = g.set_rows(g.state("v_cache", kv, kv_ne0, n_ctx), v, pos);
        g.mark_output(g.attention(q, kc, vc, pos, p));
        side_by_side s(ctx, g);
        // A prompt of 5, then one token at a time, then a rewrite of positions 3..4.
        const std::vector<std::vector<int32_t>> steps{{0, 1, 2, 3, 4}, {5}, {6}, {3, 4}, {5, 6, 7, 8, 9}};
        uint32_t seed = 60;
        for (const auto& positions : steps) {
            const auto tokens = int64_t(positions.size());
            CAPTURE(positions[0]);
            s.run({input_of(q, gaussian(std::size_t(q_ne0 * 5), ++seed)), input_of(k, gaussian(std::size_t(kv_ne0 * 5), ++seed)),
                   input_of(v, gaussian(std::size_t(kv_ne0 * 5), ++seed)), input_of(pos, positions)},
                  tokens);
            s.check_nodes(tokens);
        }
    }
}

TEST_CASE("set_rows writes the CPU backend's f16 bits, and the later of two tokens at one position") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t ne0 = 33, n_ctx = 9;  // odd columns: halves at every alignment
    graph::graph g(4);
    const auto src = g.input("src", qtype::f32, ne0);
    const auto pos = g.input("pos", graph::i32_type, 1);
    const auto cache = g.set_rows(g.state("cache", qtype::f16, ne0, n_ctx), src, pos);
    g.mark_output(cache);
    side_by_side s(ctx, g);
    std::vector<float> values = gaussian(std::size_t(ne0 * 4), 71, 1000.0f);
    values[0] = 65519.0f;   // rounds down to the largest half
    values[1] = 65520.0f;   // rounds to inf
    values[2] = 1e-7f;      // subnormal half
    values[3] = -2.98e-8f;  // below half the smallest subnormal: -0
    s.run({input_of(src, values), input_of(pos, ids_of({8, 2, 2, 0}))}, 4);
    CHECK(same_bits(s.read_vk<uint16_t>(cache, std::size_t(ne0 * n_ctx)), s.read_cpu<uint16_t>(cache, std::size_t(ne0 * n_ctx))));
}

TEST_CASE("a prepared graph gives the same bits on every run") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t k = 256, rows = 300;
    const std::vector<uint8_t> w = quantize_matrix(qtype::q6_K, gaussian(std::size_t(k * rows), 81, 0.06f), k);
    graph::graph g(8);
    const auto x = g.input("x", qtype::f32, k);
    const auto y = g.softmax(g.mul_mat(g.weight("w", qtype::q6_K, k, rows, w.data()), g.rms_norm(x, 1e-5f)));
    g.mark_output(y);
    vulkan::backend vk_backend(ctx);
    graph::executor<vulkan::backend> ex(vk_backend, g);
    ex.write(x, std::span<const float>(gaussian(std::size_t(k * 8), 82)));
    std::vector<float> first(static_cast<std::size_t>(rows * 8)), again(first.size());
    ex.run(8);
    ex.read(y, std::span<float>(first));
    for (int i = 0; i < 5; ++i) {
        ex.run(8);
        ex.read(y, std::span<float>(again));
        CHECK(same_bits(first, again));
    }
}

TEST_CASE("independent dispatches run without a barrier between them, dependent ones after one") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    graph::graph g(2);
    const auto x = g.input("x", qtype::f32, 64);
    const auto a = g.silu(x);
    const auto b = g.rms_norm(x, 1e-5f);  // reads what a reads: no barrier
    const auto c = g.add(a, b);           // reads a and b: one barrier
    g.mark_output(c);
    vulkan::backend vk_backend(ctx);
    graph::executor<vulkan::backend> ex(vk_backend, g, {.reuse_memory = false});
    const auto planned = vk_backend.prepare(ex.get_graph(), ex.get_plan());
    CHECK(planned.stats(2).dispatches == 3);
    CHECK(planned.stats(2).barriers == 1);
}

TEST_CASE("ids and positions outside their range raise llmrt::error naming them, and the program stays usable") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t k = 64;
    const std::vector<uint8_t> table = quantize_matrix(qtype::q8_0, gaussian(std::size_t(k * 10), 91), k);
    graph::graph g(2);
    const auto ids = g.input("ids", graph::i32_type, 1);
    const auto pos = g.input("pos", graph::i32_type, 1);
    const auto x = g.get_rows(g.weight("table", qtype::q8_0, k, 10, table.data()), ids);
    const auto cache = g.set_rows(g.state("cache", qtype::f32, k, 4), x, pos);
    g.mark_output(g.argmax(x));
    (void)cache;
    vulkan::backend vk_backend(ctx);
    graph::executor<vulkan::backend> ex(vk_backend, g);
    auto run_with = [&](std::vector<int32_t> id_values, std::vector<int32_t> pos_values) -> std::string {
        ex.write(ids, std::span<const int32_t>(id_values));
        ex.write(pos, std::span<const int32_t>(pos_values));
        try {
            ex.run(int64_t(id_values.size()));
        } catch (const llmrt::error& e) {
            CHECK(e.code() == errc::invalid_argument);
            return e.what();
        }
        return "";
    };
    CHECK(run_with({3, 10}, {0, 1}).find("id 10 of token 1 is outside [0, 10)") != std::string::npos);
    CHECK(run_with({-1}, {0}).find("id -1") != std::string::npos);
    CHECK(run_with({3, 4}, {0, 4}).find("position 4 of token 1 is outside [0, 4)") != std::string::npos);
    CHECK(run_with({3, 4}, {2, 3}) == "");
}

TEST_CASE("a mul_mat weight type without a Vulkan kernel is refused when the graph is prepared, naming the node") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t k = 256;
    const std::vector<uint8_t> w = quantize_matrix(qtype::q8_K, gaussian(std::size_t(k * 4), 95), k);
    graph::graph g(1);
    const auto x = g.input("x", qtype::f32, k);
    const auto y = g.mul_mat(g.weight("w_q8_K", qtype::q8_K, k, 4, w.data()), x);
    g.mark_output(y);
    vulkan::backend vk_backend(ctx);
    try {
        graph::executor<vulkan::backend> ex(vk_backend, g);
        FAIL("a q8_K weight was accepted");
    } catch (const llmrt::error& e) {
        CHECK(e.code() == errc::unsupported_type);
        CHECK(std::string(e.what()).find("w_q8_K") != std::string::npos);
    }
}

TEST_CASE("a mixture-of-experts block (top_k, expert_weights, mul_mat_id, weighted_sum) agrees with the CPU backend, outputs poisoned first") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    // 8 experts (gate/up 96 rows of 64, down 64 of 96), k = 1, 2 and all 8.
    for (int64_t k : {int64_t(1), int64_t(2), int64_t(8)}) {
        CAPTURE(k);
        test::moe_net net(qtype::q8_0, 64, 96, 8, k, 9);
        side_by_side s(ctx, net.g);
        for (int64_t tokens : {int64_t(1), int64_t(9)}) {
            CAPTURE(tokens);
            const std::vector<std::byte> poison(std::size_t(64 * 8 * 9 * 4), std::byte{0xff});  // NaN floats, -1 ids
            for (graph::tensor t : {net.ids, net.weights, net.down_out, net.out})
                s.vk.write_bytes(t, 0, poison.data(), graph::tensor_bytes(net.g[t]));
            s.run({input_of(net.h, gaussian(std::size_t(64 * 9), 51))}, tokens);
            CHECK(same_bits(s.read_vk<int32_t>(net.ids, std::size_t(k * tokens)), s.read_cpu<int32_t>(net.ids, std::size_t(k * tokens))));
            MESSAGE("largest NMSE of the mixture-of-experts block: " << s.check_nodes(tokens));
            const auto out = s.read_vk<float>(net.out, std::size_t(64 * tokens));
            for (float v : out) CHECK(std::isfinite(v));
        }
    }
}

TEST_CASE("top_k takes ties in index order and weighted_sum adds the slots in order, with the CPU backend's bits") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    graph::graph g(3);
    const auto x = g.input("x", qtype::f32, 10);
    const auto ys = g.input("ys", qtype::f32, 30);
    const auto ids = g.top_k(x, 3);
    const auto w = g.expert_weights(x, ids, graph::expert_norm::sum);
    const auto plain = g.expert_weights(x, ids, graph::expert_norm::none);
    const auto sum = g.weighted_sum(ys, w);
    for (graph::tensor t : {ids, w, plain, sum}) g.mark_output(t);
    side_by_side s(ctx, g);
    std::vector<float> values{0.5f, 2.0f, 1.0f, 2.0f, 0.5f, 2.0f, 1.0f, -3.0f, 0.0f, 2.0f,  // ties
                              0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f,
                              1e-9f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2e-9f};  // a sum below 2^-14
    s.run({input_of(x, values), input_of(ys, gaussian(90, 52))}, 3);
    CHECK(s.read_vk<int32_t>(ids, 9) == std::vector<int32_t>{1, 3, 5, 0, 1, 2, 9, 0, 1});
    CHECK(same_bits(s.read_vk<int32_t>(ids, 9), s.read_cpu<int32_t>(ids, 9)));
    CHECK(same_bits(s.read_vk<float>(w, 9), s.read_cpu<float>(w, 9)));
    CHECK(same_bits(s.read_vk<float>(plain, 9), s.read_cpu<float>(plain, 9)));
    CHECK(same_bits(s.read_vk<float>(sum, 30), s.read_cpu<float>(sum, 30)));
}

TEST_CASE("mul_mat_id over experts of 40 rows with one activation column per slot agrees with the CPU backend") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (qtype t : {qtype::q8_0, qtype::q4_K}) {
        CAPTURE(std::string(name(t)));
        const int64_t k = block_size(t) == 256 ? 256 : 64, rows = 40, n_expert = 5, n_used = 3;
        const auto v = gaussian(std::size_t(rows * n_expert * k), 53, 0.3f);
        const auto w = quantize_matrix(t, v.data(), rows * n_expert, k);
        graph::graph g(4);
        const auto x = g.input("x", qtype::f32, k * n_used);
        const auto ids = g.input("ids", graph::i32_type, n_used);
        const auto y = g.mul_mat_id(g.weight("experts", t, k, rows * n_expert, w.data()), x, ids, n_expert);
        g.mark_output(y);
        side_by_side s(ctx, g);
        const std::vector<std::byte> poison(std::size_t(rows * n_used * 4 * 4), std::byte{0xff});
        s.vk.write_bytes(y, 0, poison.data(), poison.size());
        s.run({input_of(x, gaussian(std::size_t(k * n_used * 4), 54)), input_of(ids, ids_of({4, 0, 4, 2, 3, 1, 0, 0, 0, 1, 2, 3}))}, 4);
        MESSAGE("largest NMSE of mul_mat_id: " << s.check_nodes(4));
    }
}

TEST_CASE("mul_mat_id with f32 experts is refused on Vulkan when the graph is prepared, naming the node") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    graph::graph g(1);
    const auto x = g.input("x", qtype::f32, 32);
    std::vector<float> experts(32 * 8, 1.0f);
    g.mark_output(g.mul_mat_id(g.weight("experts", qtype::f32, 32, 8, experts.data()), x, g.top_k(x, 2), 4));
    vulkan::backend b(ctx);
    CHECK_THROWS_WITH_AS(graph::executor<vulkan::backend>(b, g), doctest::Contains("'experts'"), llmrt::error);
}

TEST_CASE("tensor-parallel collectives are refused on Vulkan when the graph is prepared, naming the node") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (bool gather : {false, true}) {
        graph::graph g(1);
        const auto x = g.input("x", qtype::f32, 32);
        g.mark_output(gather ? g.all_gather(x, 32, 1) : g.all_reduce(x, 1));
        vulkan::backend b(ctx);
        CHECK_THROWS_WITH_AS(graph::executor<vulkan::backend>(b, g),
                             doctest::Contains(gather ? "all_gather" : "all_reduce"), llmrt::error);
        CHECK_THROWS_WITH_AS(graph::executor<vulkan::backend>(b, g), doctest::Contains("not supported on this backend yet"),
                             llmrt::error);
    }
}
