// One graph on the CPU backend (the reference) and on the Vulkan backend, for the tests of
// tests/graph_vulkan/: the same inputs written to both, every node compared after a run.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <span>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/compare.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/vulkan/backend.hpp>

namespace llmrt::test {

// The steps of kind k in a plan.
inline std::size_t count_kind(const graph::plan& p, graph::step_kind k) {
    std::size_t n = 0;
    for (const graph::step& s : p.steps) n += s.kind == k;
    return n;
}

// The NMSE a node may differ by (the mmvq bound for quantized products).
inline constexpr double nmse_bound = 5e-4;

// Host bytes written to one input before a run.
struct input_value {
    graph::tensor t{};
    std::vector<std::byte> bytes{};
};

template <class T>
input_value input_of(graph::tensor t, const std::vector<T>& values) {
    input_value v{t, std::vector<std::byte>(values.size() * sizeof(T))};
    std::memcpy(v.bytes.data(), values.data(), v.bytes.size());
    return v;
}

// The same graph on the CPU and the Vulkan backend, planned without memory reuse so that every
// node can be compared after a run; fuse = false runs every node as its own op on both.
struct side_by_side {
    cpu::backend cpu_backend;
    vulkan::backend vk_backend;
    graph::executor<cpu::backend> cpu;
    graph::executor<vulkan::backend> vk;

    side_by_side(vulkan::context& ctx, const graph::graph& g, bool fuse = true)
        : vk_backend(ctx),
          cpu(cpu_backend, g, {.reuse_memory = false, .fuse = fuse}),
          vk(vk_backend, g, {.reuse_memory = false, .fuse = fuse}) {}

    void run(const std::vector<input_value>& inputs, int64_t n) {
        for (const auto& in : inputs) {
            cpu.write_bytes(in.t, 0, in.bytes.data(), in.bytes.size());
            vk.write_bytes(in.t, 0, in.bytes.data(), in.bytes.size());
        }
        cpu.run(n);
        vk.run(n);
    }

    // Writes NaN floats (-1 ids) over every byte of t on the Vulkan side: what a shader leaves
    // unwritten shows.
    void poison(graph::tensor t) {
        const std::vector<std::byte> ff(graph::tensor_bytes(vk.get_graph()[t]), std::byte{0xff});
        vk.write_bytes(t, 0, ff.data(), ff.size());
    }

    // Every node within the NMSE bound, every i32 node equal; returns the largest NMSE.
    double check_nodes(int64_t n, double bound = nmse_bound) const {
        double worst = 0.0;
        for (const auto& d : graph::compare_nodes(cpu, vk, n)) {
            CAPTURE(d.name);
            CAPTURE(d.max_abs);
            CHECK(d.nmse <= bound);
            CHECK(d.mismatch == 0.0);
            worst = std::max(worst, d.nmse);
        }
        return worst;
    }

    template <class T>
    std::vector<T> read_vk(graph::tensor t, std::size_t count) const {
        std::vector<T> v(count);
        vk.read(t, std::span<T>(v));
        return v;
    }
    template <class T>
    std::vector<T> read_cpu(graph::tensor t, std::size_t count) const {
        std::vector<T> v(count);
        cpu.read(t, std::span<T>(v));
        return v;
    }
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

inline std::vector<int32_t> ids_of(std::initializer_list<int32_t> ids) { return std::vector<int32_t>(ids); }

}  // namespace llmrt::test
