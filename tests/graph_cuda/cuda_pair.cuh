// What the CUDA graph tests share: the backend they build (two block types), the NMSE bounds, the
// skip without a device, and one graph run on the CPU reference and on the device side by side.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/cuda/backend.cuh>
#include <llmrt/graph/compare.hpp>
#include <llmrt/graph/executor.hpp>

namespace llmrt::test {

// Two block types are enough here: the chunking and sharing of mul_mat do not depend on the
// type, and mmvq itself is tested for every type in tests/cuda. Fewer types, faster builds.
using test_backend = cuda::basic_backend<type_list<q8_0, q4_K>>;

inline constexpr double mmvq_nmse_bound = 5e-4;
inline constexpr double exact_nmse_bound = 1e-10;

#define LLMRT_NEEDS_CUDA_DEVICE()                                                    \
    do {                                                                             \
        if (!::llmrt::test::test_backend::device_present()) {                        \
            MESSAGE("skipped: no CUDA device on this machine (cudaGetDeviceCount)"); \
            return;                                                                  \
        }                                                                            \
    } while (0)

// One graph on the CPU reference and on the device, both planned without memory reuse.
struct pair_of_executors {
    cpu::backend cpu_backend;
    test_backend gpu_backend;
    graph::executor<cpu::backend> cpu;
    graph::executor<test_backend> gpu;

    explicit pair_of_executors(const graph::graph& g, cuda::backend_options o = {})
        : gpu_backend(o), cpu(cpu_backend, g, {.reuse_memory = false}), gpu(gpu_backend, g, {.reuse_memory = false}) {}

    template <class T>
    void write(graph::tensor t, const std::vector<T>& values) {
        cpu.write(t, std::span<const T>(values));
        gpu.write(t, std::span<const T>(values));
    }
    void run(int64_t n) {
        cpu.run(n);
        gpu.run(n);
    }

    // Every node within its bound (bound(op) gives it), i32 results identical.
    void check_nodes(int64_t n, const std::function<double(graph::op)>& bound) const {
        for (const auto& d : graph::compare_nodes(cpu, gpu, n)) {
            INFO("node ", d.name, " (", graph::to_string(d.op), ", ", d.ne0, " x ", d.ne1, ", batch ", n,
                 "): nmse ", d.nmse, ", max |diff| ", d.max_abs, ", i32 mismatch ", d.mismatch);
            CHECK(d.nmse <= bound(d.op));
            CHECK(d.mismatch == 0.0);
        }
    }
};

inline double exact_ops(graph::op) { return exact_nmse_bound; }
inline double mmvq_ops(graph::op o) { return o == graph::op::mul_mat ? mmvq_nmse_bound : exact_nmse_bound; }

// Every float the device computed for `t` in a run of n columns.
inline std::vector<float> floats_of(const graph::executor<test_backend>& ex, graph::tensor t, std::size_t count) {
    std::vector<float> v(count);
    ex.read(t, std::span<float>(v));
    return v;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Steps that carry another (a top_k carrying its expert_weights, in these tests).
inline std::size_t carrying_steps(const graph::plan& p) {
    std::size_t n = 0;
    for (const auto& s : p.steps) n += s.carries >= 0;
    return n;
}

}  // namespace llmrt::test
