// The f32 -> Q8_1 activation quantizer on the device: ggml's block_q8_1 bytes exactly as
// llmrt::quantize_row writes them, and mmvq's activation records holding the same values.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "llmrt/cuda/activations.cuh"
#include "support.cuh"

using namespace llmrt_cuda_test;
namespace cuda = llmrt::cuda;
using llmrt::testing::distribution;

TEST_CASE("quantize_q8_1 on the device writes the bytes llmrt::quantize_row writes, for every input distribution") {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    for (const int64_t n : {32, 32 * 7, 4096 + 32}) {
        for (distribution dist : llmrt::testing::all_distributions) {
            CAPTURE(n);
            CAPTURE(llmrt::testing::to_string(dist));
            const std::vector<float> x = llmrt::testing::generate(dist, n, uint64_t(n) * 31 + uint64_t(dist));
            std::vector<llmrt::q8_1> expected(std::size_t(n / 32));
            llmrt::quantize_row(x.data(), expected.data(), n);

            device_buffer d_x(x.size() * sizeof(float)), d_y(expected.size() * sizeof(llmrt::q8_1));
            d_x.upload(x);
            check_cuda(cudaMemset(d_y.ptr, 0xa5, d_y.bytes), "cudaMemset");
            cuda::quantize_q8_1(d_x.as<float>(), d_y.as<llmrt::q8_1>(), n, nullptr);
            const std::vector<uint8_t> got = d_y.download<uint8_t>(d_y.bytes);
            CHECK(std::memcmp(got.data(), expected.data(), got.size()) == 0);
        }
    }
}

TEST_CASE("quantize_activations writes mmvq's records with quantize_row's quants, scales and exact sums") {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int64_t k = 32 * 13, ncols = 3, batch2 = 2, batch3 = 2;
    const int64_t col_stride = k + 32, stride2 = ncols * col_stride + 64, stride3 = batch2 * stride2 + 96;
    const std::vector<float> x =
        llmrt::testing::generate(distribution::heavy_tailed, batch3 * stride3, 77);
    device_buffer d_x(x.size() * sizeof(float));
    d_x.upload(x);
    cuda::input_columns view{d_x.as<const float>(), k, ncols, col_stride, batch2, batch3, stride2, stride3};
    const std::size_t bytes = cuda::activation_scratch_bytes(k, ncols, batch2 * batch3);
    device_buffer scratch(bytes);
    cuda::quantize_activations(view, scratch.ptr, bytes, nullptr);
    const std::vector<uint8_t> records = scratch.download<uint8_t>(bytes);

    const int64_t record_bytes = cuda::activation_record_bytes(ncols);
    for (int64_t i3 = 0; i3 < batch3; ++i3)
        for (int64_t i2 = 0; i2 < batch2; ++i2)
            for (int64_t c = 0; c < ncols; ++c) {
                std::vector<llmrt::q8_1> expected(std::size_t(k / 32));
                llmrt::quantize_row(x.data() + i3 * stride3 + i2 * stride2 + c * col_stride, expected.data(), k);
                const uint8_t* batch = records.data() + (i3 * batch2 + i2) * cuda::activation_batch_bytes(k, ncols);
                for (int64_t b = 0; b < k / 32; ++b) {
                    const uint8_t* record = batch + b * record_bytes;
                    cuda::q8_1_aux aux;
                    std::memcpy(&aux, record + 32 * ncols + 16 * c, sizeof aux);
                    const llmrt::q8_1& e = expected[std::size_t(b)];
                    int lo = 0, hi = 0;
                    for (int j = 0; j < 32; ++j) (j < 16 ? lo : hi) += e.qs[j];
                    CAPTURE(i3);
                    CAPTURE(i2);
                    CAPTURE(c);
                    CAPTURE(b);
                    REQUIRE(std::memcmp(record + 32 * c, e.qs, 32) == 0);
                    REQUIRE(aux.d == llmrt::fp16_to_fp32(e.d));
                    REQUIRE(aux.sum_lo == lo);
                    REQUIRE(aux.sum_hi == hi);
                    REQUIRE(aux.d_sum == aux.d * float(lo + hi));
                }
            }
}

TEST_CASE("quantize_activations refuses a length that is not a multiple of 32 and too small a scratch") {
    // Checked on the host before any launch, so this runs without a device too.
    float fake[1];
    cuda::input_columns x{fake, 48, 1};
    CHECK_THROWS_AS(cuda::quantize_activations(x, fake, 1 << 20, nullptr), llmrt::error);
    x.length = 64;
    CHECK_THROWS_AS(cuda::quantize_activations(x, fake, 16, nullptr), llmrt::error);
    CHECK_THROWS_AS(cuda::quantize_q8_1(fake, nullptr, 33, nullptr), llmrt::error);
}
