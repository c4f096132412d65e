// The CUDA kernels dequantize_scaled and matvec_scaled against llmrt's CPU reference, with the
// testing toolkit: seeded weights of every distribution quantized by llmrt, the device output
// poisoned before each launch so an element the kernel never wrote is caught, and the result
// copied back and compared. Without a CUDA device the device cases pass with a "skipped" message.
#include <llmrt/quant/q4_K.hpp>
#include <llmrt/quant/q8_0.hpp>
#include <llmrt/testing.hpp>
#include <llmrt/testing/cuda.hpp>
#include <llmrt/testing/doctest.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "dequantize_scaled.cuh"
#include "matvec_scaled.cuh"

using namespace llmrt::testing;

// Ends the test case, passing with the reason, where cudaGetDeviceCount finds no device.
#define NEEDS_CUDA_DEVICE()                                                                  \
    do {                                                                                     \
        int count_ = 0;                                                                      \
        const cudaError_t status_ = cudaGetDeviceCount(&count_);                             \
        if (status_ != cudaSuccess || count_ == 0) {                                         \
            MESSAGE("skipped: no CUDA device (cudaGetDeviceCount: "                          \
                    << std::string(cudaGetErrorName(status_)) << ")");                       \
            return;                                                                          \
        }                                                                                    \
    } while (false)

namespace {

// n elements of T in device memory, freed on scope exit.
template <class T>
struct device_array {
    T* ptr = nullptr;
    explicit device_array(std::size_t n) { check_cuda(cudaMalloc(&ptr, n * sizeof(T)), "cudaMalloc"); }
    device_array(const void* host, std::size_t n) : device_array(n) {
        check_cuda(cudaMemcpy(ptr, host, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    ~device_array() { cudaFree(ptr); }
    device_array(const device_array&) = delete;
    device_array& operator=(const device_array&) = delete;
};

// What dequantize_scaled must compute, from llmrt's reference dequantizer: y[r·k + i] = scales[r] · W[r][i].
std::vector<float> reference_dequantize_scaled(llmrt::qtype t, const std::vector<uint8_t>& w, const std::vector<float>& scales,
                             int64_t rows, int64_t k) {
    const std::size_t row_bytes = llmrt::row_size(t, k);
    std::vector<float> y(std::size_t(rows * k));
    for (int64_t r = 0; r < rows; ++r) {
        float* row = y.data() + r * k;
        dequantize(t, w.data() + std::size_t(r) * row_bytes, row, k);
        for (int64_t i = 0; i < k; ++i) row[i] *= scales[std::size_t(r)];
    }
    return y;
}

}  // namespace

TEST_CASE_TEMPLATE("dequantize_scaled gives every row its scale times llmrt's dequantized weights", Block, llmrt::q4_K,
                   llmrt::q8_0) {
    NEEDS_CUDA_DEVICE();
    const int64_t rows = 37, k = 3 * 256;  // blocks not a multiple of the 128 threads of a thread block
    for (distribution d : all_distributions) {
        CAPTURE(std::string(to_string(d)));
        const std::vector<float> weights = generate(d, rows * k, /*seed=*/1, int(Block::block_size));
        const std::vector<uint8_t> w = quantize_matrix(Block::id, weights.data(), rows, k);
        const std::vector<float> scales = uniform(rows, /*seed=*/2, -2.0f, 2.0f);
        const std::vector<float> ref = reference_dequantize_scaled(Block::id, w, scales, rows, k);

        const device_array<Block> w_dev(w.data(), w.size() / sizeof(Block));
        const device_array<float> scales_dev(scales.data(), scales.size());
        const device_array<float> y_dev(ref.size());
        poison_device(y_dev.ptr, int64_t(ref.size()));
        my_kernels::dequantize_scaled(w_dev.ptr, scales_dev.ptr, y_dev.ptr, rows, k);

        const readback_report r = compare_device(y_dev.ptr, ref);
        LLMRT_CHECK_ALL_WRITTEN(r.out.data(), r.n);
        // Each weight is rounded exactly as the reference rounds it: demand equality, not a bound.
        LLMRT_CHECK_MAX_ABS(r.out.data(), ref.data(), r.n, 0.0);
    }
}

TEST_CASE("dequantize_scaled writes nothing past the rows it is given") {
    NEEDS_CUDA_DEVICE();
    const int64_t rows = 5, k = 2 * 256;
    const std::vector<float> weights = generate(distribution::gaussian, rows * k, 3);
    const std::vector<uint8_t> w = quantize_matrix(llmrt::qtype::q4_K, weights.data(), rows, k);
    const std::vector<float> scales = uniform(rows, 4, 0.5f, 2.0f);

    const device_array<llmrt::q4_K> w_dev(w.data(), w.size() / sizeof(llmrt::q4_K));
    const device_array<float> scales_dev(scales.data(), scales.size());
    const device_array<float> y_dev(std::size_t((rows + 1) * k));  // one row more than it needs
    poison_device(y_dev.ptr, (rows + 1) * k);
    my_kernels::dequantize_scaled(w_dev.ptr, scales_dev.ptr, y_dev.ptr, rows, k);

    const std::vector<float> y = copy_to_host(y_dev.ptr, (rows + 1) * k);
    const std::vector<int64_t> untouched = unwritten(y.data(), int64_t(y.size()));
    REQUIRE(untouched.size() == std::size_t(k));
    CHECK(untouched.front() == rows * k);
    CHECK(untouched.back() == (rows + 1) * k - 1);
}

TEST_CASE("dequantize_scaled refuses a k that is not a whole number of blocks, before launching") {
    // Host-side checks: no device needed, so this runs on every machine.
    CHECK_THROWS_AS(my_kernels::dequantize_scaled<llmrt::q4_K>(nullptr, nullptr, nullptr, 4, 200), llmrt::error);
    CHECK_THROWS_AS(my_kernels::dequantize_scaled<llmrt::q8_0>(nullptr, nullptr, nullptr, 4, 48), llmrt::error);
    CHECK_THROWS_AS(my_kernels::dequantize_scaled<llmrt::q8_0>(nullptr, nullptr, nullptr, -1, 64), llmrt::error);
}

TEST_CASE_TEMPLATE("matvec_scaled gives every row its scale times the reference dot with Q8_1 activations", Block,
                   llmrt::q4_K, llmrt::q8_0) {
    NEEDS_CUDA_DEVICE();
    const int64_t rows = 37, k = 40 * 256;  // 40 blocks of 256 (320 of 32): lanes take one or more
    for (distribution d : all_distributions) {
        CAPTURE(std::string(to_string(d)));
        const std::vector<float> weights = generate(d, rows * k, /*seed=*/5, int(Block::block_size));
        const std::vector<uint8_t> w = quantize_matrix(Block::id, weights.data(), rows, k);
        const std::vector<float> x = generate(distribution::heavy_tailed, k, /*seed=*/6);
        const std::vector<float> scales = uniform(rows, /*seed=*/7, -2.0f, 2.0f);
        // The reference rounds x through Q8_1, as the kernel's input is, and sums in double.
        std::vector<float> ref = reference_matvec(Block::id, w.data(), x.data(), rows, k, 1);
        for (int64_t r = 0; r < rows; ++r) ref[std::size_t(r)] *= scales[std::size_t(r)];
        std::vector<llmrt::q8_1> xq(std::size_t(k / 32));
        quantize(llmrt::qtype::q8_1, x.data(), xq.data(), k);

        const device_array<Block> w_dev(w.data(), w.size() / sizeof(Block));
        const device_array<llmrt::q8_1> x_dev(xq.data(), xq.size());
        const device_array<float> scales_dev(scales.data(), scales.size());
        const device_array<float> y_dev{std::size_t(rows)};
        poison_device(y_dev.ptr, rows);
        my_kernels::matvec_scaled(w_dev.ptr, x_dev.ptr, scales_dev.ptr, y_dev.ptr, rows, k);

        const readback_report r = compare_device(y_dev.ptr, ref);
        LLMRT_CHECK_ALL_WRITTEN(r.out.data(), r.n);
        // A float sum in another order than the reference's double one: the bound of section 3
        // of docs/testing.md, not equality.
        LLMRT_CHECK_NMSE(r.out.data(), ref.data(), r.n, 1e-10);
    }
}
