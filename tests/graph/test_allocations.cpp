// Running a planned graph allocates nothing: this program links counting replacements of the
// global operator new (count_allocations.cpp) and counts the allocations made while it runs.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/llmrt.hpp>

#include "count_allocations.hpp"

using namespace llmrt;

TEST_CASE("the allocation counter sees allocations") {
    const long before = test::allocation_count();
    std::vector<int> v(100);
    volatile int* escape = v.data();
    (void)escape;
    CHECK(test::allocation_count() - before >= 1);
}

TEST_CASE("running a planned graph with every op kind allocates nothing") {
    const int64_t k = 64, rows = 48, n_ctx = 16;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    std::vector<float> wf(std::size_t(k * rows)), table_f(std::size_t(k * 20)), norm(static_cast<std::size_t>(k)), x(static_cast<std::size_t>(4 * k));
    for (auto* v : {&wf, &table_f, &norm, &x})
        for (auto& e : *v) e = normal(rng);
    std::vector<std::byte> w(row_size(qtype::q8_0, k) * rows), table(row_size(qtype::q8_0, k) * 20);
    for (int64_t r = 0; r < rows; ++r) quantize(qtype::q8_0, wf.data() + r * k, w.data() + r * row_size(qtype::q8_0, k), k);
    for (int64_t r = 0; r < 20; ++r)
        quantize(qtype::q8_0, table_f.data() + r * k, table.data() + r * row_size(qtype::q8_0, k), k);

    graph::graph g(4);
    auto ids = g.input("ids", graph::i32_type, 1);
    auto pos = g.input("pos", graph::i32_type, 1);
    auto e = g.get_rows(g.weight("table", qtype::q8_0, k, 20, table.data()), ids);
    auto h = g.mul(g.rms_norm(e, 1e-5f), g.weight("norm", qtype::f32, k, 1, norm.data()));
    auto q = g.rope(h, pos, {4, 16, 16, 10000.0f, graph::rope_order::normal});
    auto kr = g.rope(h, pos, {4, 16, 16, 10000.0f, graph::rope_order::neox});
    auto kc = g.set_rows(g.state("k", qtype::f16, k, n_ctx), kr, pos);
    auto vc = g.set_rows(g.state("v", qtype::f16, k, n_ctx), h, pos);
    auto a = g.add(g.attention(q, kc, vc, pos, {4, 4, 16, 0.25f}), e);
    auto m = g.mul_mat(g.weight("w", qtype::q8_0, k, rows, w.data()), g.swiglu(a, g.silu(a)));
    auto logits = g.softmax(m);
    g.mark_output(logits);
    g.mark_output(g.argmax(m));

    cpu::backend cpu_backend;
    graph::executor ex(cpu_backend, std::move(g));
    const std::vector<int32_t> id_values{3, 19, 0, 7}, pos_values{0, 1, 2, 3};
    std::vector<float> out(std::size_t(rows * 4));

    const long before = test::allocation_count();
    ex.write(ids, std::span<const int32_t>(id_values));
    ex.write(pos, std::span<const int32_t>(pos_values));
    ex.run(4);
    ex.read(logits, std::span<float>(out));
    ex.write(ids, std::span<const int32_t>(id_values.data(), 1));
    ex.run(1);
    CHECK(test::allocation_count() - before == 0);
}
