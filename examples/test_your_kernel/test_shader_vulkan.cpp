// dequantize_scaled.comp against llmrt's CPU reference, with the testing toolkit: seeded weights
// of every distribution quantized by llmrt, the output buffer poisoned before each dispatch so
// an element the shader never wrote is caught, and the result read back and compared.
#include <llmrt/testing.hpp>
#include <llmrt/testing/doctest.hpp>
#include <llmrt/testing/vulkan.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "dequantize_scaled_vulkan.hpp"
#include "vulkan_test_device.hpp"

using namespace llmrt::testing;
using llmrt::qtype;
using llmrt::vulkan::buffer;

namespace {

// What the shader must compute, from llmrt's reference dequantizer: y[r·k + i] = scales[r] · W[r][i].
std::vector<float> reference(const std::vector<uint8_t>& w, const std::vector<float>& scales, int64_t rows, int64_t k) {
    const std::size_t row_bytes = llmrt::row_size(qtype::q4_K, k);
    std::vector<float> y(std::size_t(rows * k));
    for (int64_t r = 0; r < rows; ++r) {
        float* row = y.data() + r * k;
        dequantize(qtype::q4_K, w.data() + std::size_t(r) * row_bytes, row, k);
        for (int64_t i = 0; i < k; ++i) row[i] *= scales[std::size_t(r)];
    }
    return y;
}

template <class T>
buffer device_copy(const llmrt::vulkan::context& ctx, const std::vector<T>& host) {
    buffer b(ctx, host.size() * sizeof(T));
    b.upload(host.data(), host.size() * sizeof(T));
    return b;
}

}  // namespace

TEST_CASE("dequantize_scaled.comp gives every row its scale times llmrt's dequantized weights") {
    NEEDS_VULKAN_DEVICE(ctx);
    const my_kernels::dequantize_scaled kernel(ctx);
    const int64_t rows = 37, k = 3 * 256;  // 888 slices: the last work-group is partly idle
    for (distribution d : all_distributions) {
        CAPTURE(std::string(to_string(d)));
        const std::vector<float> weights = generate(d, rows * k, /*seed=*/1, /*block=*/256);
        const std::vector<uint8_t> w = quantize_matrix(qtype::q4_K, weights.data(), rows, k);
        const std::vector<float> scales = uniform(rows, /*seed=*/2, -2.0f, 2.0f);
        const std::vector<float> ref = reference(w, scales, rows, k);

        buffer w_dev = device_copy(ctx, w), scales_dev = device_copy(ctx, scales);
        buffer y_dev(ctx, ref.size() * sizeof(float));
        poison_device(y_dev);
        kernel.run(w_dev.span(), scales_dev.span(), y_dev.span(), rows, k);

        const readback_report r = compare_device(y_dev, ref);
        LLMRT_CHECK_ALL_WRITTEN(r.out.data(), r.n);
        // Each weight is rounded exactly as the reference rounds it: demand equality, not a bound.
        LLMRT_CHECK_MAX_ABS(r.out.data(), ref.data(), r.n, 0.0);
    }
}

TEST_CASE("dequantize_scaled.comp writes nothing past the rows it is given") {
    NEEDS_VULKAN_DEVICE(ctx);
    const my_kernels::dequantize_scaled kernel(ctx);
    const int64_t rows = 5, k = 2 * 256;
    const std::vector<float> weights = generate(distribution::gaussian, rows * k, 3);
    const std::vector<uint8_t> w = quantize_matrix(qtype::q4_K, weights.data(), rows, k);
    const std::vector<float> scales = uniform(rows, 4, 0.5f, 2.0f);

    buffer w_dev = device_copy(ctx, w), scales_dev = device_copy(ctx, scales);
    buffer y_dev(ctx, std::size_t((rows + 1) * k) * sizeof(float));  // one row more than it needs
    poison_device(y_dev);
    kernel.run(w_dev.span(), scales_dev.span(), y_dev.span(), rows, k);

    const std::vector<float> y = copy_to_host(y_dev, (rows + 1) * k);
    const std::vector<int64_t> untouched = unwritten(y.data(), int64_t(y.size()));
    REQUIRE(untouched.size() == std::size_t(k));
    CHECK(untouched.front() == rows * k);
    CHECK(untouched.back() == (rows + 1) * k - 1);
}

TEST_CASE("dequantize_scaled refuses a shape that does not fit Q4_K blocks or its buffers") {
    NEEDS_VULKAN_DEVICE(ctx);
    const my_kernels::dequantize_scaled kernel(ctx);
    buffer w_dev(ctx, 4 * 144), scales_dev(ctx, 4 * sizeof(float)), y_dev(ctx, 4 * 256 * sizeof(float));
    CHECK_THROWS_AS(kernel.run(w_dev.span(), scales_dev.span(), y_dev.span(), 4, 200), llmrt::error);  // k not 256·n
    CHECK_THROWS_AS(kernel.run(w_dev.span(), scales_dev.span(), y_dev.span(), 5, 256), llmrt::error);  // 5 rows in 4
}
