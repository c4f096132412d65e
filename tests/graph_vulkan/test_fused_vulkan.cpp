// The Vulkan backend's fused steps (vulkan/steps.hpp) against the same graphs run unfused on
// Vulkan (the bits, where the fused step promises them) and on the CPU backend (the attention
// step, which sums in another order): norm, swiglu and rope_cache steps with the Q8_1 roundings
// they hand to mat-vecs, the split attention from one tile to many groups, and what the fusion
// saves in dispatches and barriers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/vulkan/backend.hpp>
#include <llmrt/testing/generate.hpp>
#include <llmrt/testing/reference.hpp>

#include "../vulkan/vulkan_test_device.hpp"

#include "side_by_side.hpp"

using namespace llmrt;

namespace {

using testing::gaussian;
using testing::quantize_matrix;

using vk_executor = graph::executor<vulkan::backend>;

template <class E>
std::vector<float> read_floats(const E& ex, graph::tensor t, int64_t cols) {
    std::vector<float> v(std::size_t(ex.get_graph().nodes()[std::size_t(t.id)].ne0 * cols));
    ex.read(t, std::span<float>(v));
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double nmse(const std::vector<float>& ref, const std::vector<float>& got) {
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        num += (double(got[i]) - double(ref[i])) * (double(got[i]) - double(ref[i]));
        den += double(ref[i]) * double(ref[i]);
    }
    return den > 0 ? num / den : num;
}

// The same graph prepared fused and unfused on one Vulkan device.
struct fused_and_unfused {
    vulkan::backend b;
    vk_executor fused, unfused;
    fused_and_unfused(vulkan::context& ctx, const graph::graph& g)
        : b(ctx), fused(b, g, {.reuse_memory = true, .fuse = true}), unfused(b, g, {.reuse_memory = true, .fuse = false}) {}

    template <class T>
    void write(graph::tensor t, const std::vector<T>& values) {
        fused.write(t, std::span<const T>(values));
        unfused.write(t, std::span<const T>(values));
    }
    void run(int64_t n) {
        fused.run(n);
        unfused.run(n);
    }
    bool same(graph::tensor t, int64_t cols) const { return same_bits(read_floats(fused, t, cols), read_floats(unfused, t, cols)); }
};

using test::count_kind;

}  // namespace

TEST_CASE("the norm step gives the sum, the product and the mat-vec over its rounding the bits of the ops one by one") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t k = 320, rows = k, max_batch = 11;  // columns longer than a work-group; batches of 8 and a rest
    const std::vector<uint8_t> w = quantize_matrix(qtype::q8_0, gaussian(std::size_t(k * rows), 201, 0.06f), k);
    const std::vector<float> norm_w = gaussian(std::size_t(k), 202);
    for (bool keep_product : {false, true}) {
        CAPTURE(keep_product);
        graph::graph g(max_batch);
        const auto x = g.input("x", qtype::f32, k);
        const auto r = g.input("r", qtype::f32, k);
        const auto s = g.add(x, r);
        const auto p = g.mul(g.rms_norm(s, 1e-5f), g.weight("norm", qtype::f32, k, 1, norm_w.data()));
        const auto y = g.mul_mat(g.weight("w", qtype::q8_0, k, rows, w.data()), p);
        g.mark_output(g.add(y, s));  // s is read past the norm: kept
        if (keep_product) g.mark_output(p);
        fused_and_unfused e(ctx, g);
        CHECK(count_kind(e.fused.get_plan(), graph::step_kind::norm) == 1);
        CHECK(e.fused.get_plan().steps[std::size_t(e.fused.get_plan().step_of[std::size_t(p.id)])].rounds == p.id);
        const auto out = g.outputs()[0];
        for (int64_t n : {1, 5, 8, 11}) {
            CAPTURE(n);
            e.write(x, gaussian(std::size_t(k * max_batch), 203 + uint32_t(n), 2.0f));
            e.write(r, gaussian(std::size_t(k * max_batch), 303 + uint32_t(n)));
            e.run(n);
            CHECK(e.same(out, n));
            if (keep_product) CHECK(e.same(p, n));
        }
    }
}

TEST_CASE("the swiglu step and the mat-vec over its rounding give the bits of swiglu, quantize and mmvq") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int64_t k = 256, ff = 288, max_batch = 10;
    std::vector<std::vector<uint8_t>> w;
    for (uint32_t i = 0; i < 2; ++i) w.push_back(quantize_matrix(qtype::q4_K, gaussian(std::size_t(k * ff), 211 + i, 0.06f), k));
    const std::vector<uint8_t> down = quantize_matrix(qtype::q8_0, gaussian(std::size_t(ff * k), 213, 0.06f), ff);
    graph::graph g(max_batch);
    const auto x = g.input("x", qtype::f32, k);
    const auto gate = g.mul_mat(g.weight("gate", qtype::q4_K, k, ff, w[0].data()), x);
    const auto up = g.mul_mat(g.weight("up", qtype::q4_K, k, ff, w[1].data()), x);
    const auto h = g.swiglu(gate, up);
    const auto y = g.mul_mat(g.weight("down", qtype::q8_0, ff, k, down.data()), h);
    g.mark_output(y);
    fused_and_unfused e(ctx, g);
    CHECK(count_kind(e.fused.get_plan(), graph::step_kind::swiglu) == 1);
    CHECK(count_kind(e.fused.get_plan(), graph::step_kind::matvec) == 2);  // gate and up share x's rounding
    for (int64_t n : {1, 3, 8, 10}) {
        CAPTURE(n);
        e.write(x, gaussian(std::size_t(k * max_batch), 214 + uint32_t(n), 1.5f));
        e.run(n);
        CHECK(e.same(y, n));
    }
}

TEST_CASE("the rope_cache step writes q' and both caches with the bits of rope and set_rows, in both orders and cache types") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    for (qtype kv : {qtype::f32, qtype::f16})
        for (graph::rope_order order : {graph::rope_order::normal, graph::rope_order::neox}) {
            CAPTURE(std::string(name(kv)));
            CAPTURE(int(order));
            const int32_t n_head = 4, n_head_kv = 2, head_dim = 64;
            const int64_t n_ctx = 50, q_ne0 = n_head * head_dim, kv_ne0 = n_head_kv * head_dim, max_batch = 6;
            graph::graph g(max_batch);
            const auto q = g.input("q", qtype::f32, q_ne0);
            const auto k = g.input("k", qtype::f32, kv_ne0);
            const auto v = g.input("v", qtype::f32, kv_ne0);
            const auto pos = g.input("pos", graph::i32_type, 1);
            const auto qr = g.rope(q, pos, {n_head, head_dim, 48, 10000.0f, order});  // n_rot < head_dim: a tail passes through
            const auto kr = g.rope(k, pos, {n_head_kv, head_dim, 48, 10000.0f, order});
            const auto kc = g.set_rows(g.state("k_cache", kv, kv_ne0, n_ctx), kr, pos);
            const auto vc = g.set_rows(g.state("v_cache", kv, kv_ne0, n_ctx), v, pos);
            const auto a = g.attention(qr, kc, vc, pos, {n_head, n_head_kv, head_dim, 0.125f});
            g.mark_output(a);
            g.mark_output(qr);
            fused_and_unfused e(ctx, g);
            CHECK(count_kind(e.fused.get_plan(), graph::step_kind::rope_cache) == 1);
            const std::vector<std::vector<int32_t>> runs{{0, 1, 2, 3, 4, 5}, {6}, {3, 3}, {49}};  // two tokens at one position
            uint32_t seed = 220;
            for (const auto& positions : runs) {
                const auto n = int64_t(positions.size());
                CAPTURE(positions[0]);
                e.write(q, gaussian(std::size_t(q_ne0 * max_batch), ++seed));
                e.write(k, gaussian(std::size_t(kv_ne0 * max_batch), ++seed));
                e.write(v, gaussian(std::size_t(kv_ne0 * max_batch), ++seed));
                e.write(pos, positions);
                e.run(n);
                CHECK(e.same(qr, n));
                const std::size_t cache_bytes = std::size_t(kv_ne0 * n_ctx) * (kv == qtype::f32 ? 4 : 2);
                for (graph::tensor c : {kc, vc}) {
                    std::vector<std::byte> f(cache_bytes), u(cache_bytes);
                    e.fused.read_bytes(c, 0, f.data(), cache_bytes);
                    e.unfused.read_bytes(c, 0, u.data(), cache_bytes);
                    CHECK(std::memcmp(f.data(), u.data(), cache_bytes) == 0);
                }
                CHECK(nmse(read_floats(e.unfused, a, n), read_floats(e.fused, a, n)) <= 1e-10);
            }
        }
}

TEST_CASE("the attention step agrees with the CPU reference from one tile to many groups, for head sizes 64 to 256") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    struct shape {
        int32_t n_head, n_head_kv, head_dim;
        qtype kv;
    };
    for (const shape& sh : {shape{4, 4, 64, qtype::f16}, shape{8, 2, 128, qtype::f16}, shape{2, 1, 256, qtype::f32},
                            shape{4, 2, 80, qtype::f32}}) {
        CAPTURE(sh.head_dim);
        const int64_t n_ctx = 4500, q_ne0 = int64_t(sh.n_head) * sh.head_dim, kv_ne0 = int64_t(sh.n_head_kv) * sh.head_dim;
        graph::graph g(6);
        const auto q = g.input("q", qtype::f32, q_ne0);
        const auto pos = g.input("pos", graph::i32_type, 1);
        const auto kc = g.state("k_cache", sh.kv, kv_ne0, n_ctx);
        const auto vc = g.state("v_cache", sh.kv, kv_ne0, n_ctx);
        const auto a = g.attention(q, kc, vc, pos, {sh.n_head, sh.n_head_kv, sh.head_dim, 1.0f / std::sqrt(float(sh.head_dim))});
        g.mark_output(a);
        cpu::backend cpu_backend;
        vulkan::backend vk_backend(ctx);
        graph::executor<cpu::backend> cpu(cpu_backend, g);
        vk_executor vk(vk_backend, g);
        CHECK(count_kind(vk.get_plan(), graph::step_kind::attention) == 1);
        // Random caches, as the same bytes on both backends.
        for (graph::tensor c : {kc, vc}) {
            const std::vector<float> values = gaussian(std::size_t(kv_ne0 * n_ctx), 230 + uint32_t(c.id), 2.0f);
            std::vector<std::byte> bytes(values.size() * (sh.kv == qtype::f32 ? 4 : 2));
            if (sh.kv == qtype::f32) std::memcpy(bytes.data(), values.data(), bytes.size());
            else
                for (std::size_t i = 0; i < values.size(); ++i) {
                    const uint16_t h = fp32_to_fp16(values[i]);
                    std::memcpy(bytes.data() + 2 * i, &h, 2);
                }
            cpu.write_bytes(c, 0, bytes.data(), bytes.size());
            vk.write_bytes(c, 0, bytes.data(), bytes.size());
        }
        const std::vector<int32_t> positions{0, 127, 128, 1000, 4095, 4499};  // one tile, two, many groups
        const std::vector<float> qs = gaussian(std::size_t(q_ne0 * 6), 240, 3.0f);
        cpu.write(q, std::span<const float>(qs));
        vk.write(q, std::span<const float>(qs));
        cpu.write(pos, std::span<const int32_t>(positions));
        vk.write(pos, std::span<const int32_t>(positions));
        cpu.run(6);
        vk.run(6);
        const std::vector<float> batched = read_floats(vk, a, 6);
        CHECK(nmse(read_floats(cpu, a, 6), batched) <= 1e-10);
        // Each token alone gets the bits it got in the batch, run after run.
        for (std::size_t t = 0; t < positions.size(); ++t) {
            CAPTURE(positions[t]);
            vk.write(q, std::span<const float>(qs).subspan(t * std::size_t(q_ne0), std::size_t(q_ne0)));
            vk.write(pos, std::span<const int32_t>(positions).subspan(t, 1));
            vk.run(1);
            const std::vector<float> alone = read_floats(vk, a, 1);
            CHECK(std::memcmp(alone.data(), batched.data() + t * std::size_t(q_ne0), alone.size() * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("the attention step hands the o projection a rounding as good as quantizing its result") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const int32_t n_head = 4, n_head_kv = 2, head_dim = 64;
    const int64_t n_ctx = 300, q_ne0 = n_head * head_dim, kv_ne0 = n_head_kv * head_dim, max_batch = 9;
    const std::vector<uint8_t> wo = quantize_matrix(qtype::q8_0, gaussian(std::size_t(q_ne0 * q_ne0), 250, 0.06f), q_ne0);
    graph::graph g(max_batch);
    const auto q = g.input("q", qtype::f32, q_ne0);
    const auto k = g.input("k", qtype::f32, kv_ne0);
    const auto v = g.input("v", qtype::f32, kv_ne0);
    const auto pos = g.input("pos", graph::i32_type, 1);
    const auto kc = g.set_rows(g.state("k_cache", qtype::f16, kv_ne0, n_ctx), k, pos);
    const auto vc = g.set_rows(g.state("v_cache", qtype::f16, kv_ne0, n_ctx), v, pos);
    const auto a = g.attention(q, kc, vc, pos, {n_head, n_head_kv, head_dim, 0.125f});
    const auto y = g.mul_mat(g.weight("wo", qtype::q8_0, q_ne0, q_ne0, wo.data()), a);
    g.mark_output(y);
    cpu::backend cpu_backend;
    vulkan::backend vk_backend(ctx);
    graph::executor<cpu::backend> cpu(cpu_backend, g);
    vk_executor vk(vk_backend, g);
    const graph::plan& p = vk.get_plan();
    CHECK(p.where[std::size_t(a.id)] == graph::storage::fused);  // only the rounding is written
    std::vector<int32_t> positions(max_batch);
    for (int32_t i = 0; i < int32_t(max_batch); ++i) positions[std::size_t(i)] = i;
    for (int64_t n : {int64_t(9), int64_t(1)}) {
        CAPTURE(n);
        for (auto* t : {&q, &k, &v}) {
            const std::vector<float> values = gaussian(std::size_t(g.nodes()[std::size_t(t->id)].ne0 * max_batch), 251 + uint32_t(n + t->id));
            cpu.write(*t, std::span<const float>(values));
            vk.write(*t, std::span<const float>(values));
        }
        cpu.write(pos, std::span<const int32_t>(positions));
        vk.write(pos, std::span<const int32_t>(positions));
        cpu.run(n);
        vk.run(n);
        CHECK(nmse(read_floats(cpu, y, n), read_floats(vk, y, n)) <= 5e-4);
        for (int32_t& x : positions) x += int32_t(n);
    }
}
