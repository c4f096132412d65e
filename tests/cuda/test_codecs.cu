// The public device codecs: dequantize_block in device code gives the host's floats bit for bit,
// and dot_q8_1 (the integer block dot with __dp4a) gives the double dot of the dequantized weights
// with the Q8_1 activations.
#include <doctest/doctest.h>

#include <vector>

#include "llmrt/cuda/codecs.cuh"
#include "support.cuh"

using namespace llmrt_cuda_test;

namespace {

template <class B>
__global__ void dequantize_blocks(const B* w, float* y, int nblocks) {
    const int b = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (b < nblocks) llmrt::dequantize_block(w[b], y + int64_t(b) * B::block_size);
}

template <class B>
__global__ void dot_blocks(const B* w, const llmrt::q8_1* x, float* y, int nblocks) {
    const int b = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (b < nblocks) y[b] = llmrt::cuda::dot_q8_1(w[b], x + int64_t(b) * (B::block_size / 32));
}

}  // namespace


TEST_CASE_TEMPLATE_DEFINE("dequantize_block in device code equals the host's, bit for bit", B,
                          dequantize_block_in_device_code_equals) {
    static_assert(llmrt::list_contains_v<B, llmrt::weight_types>);
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int nblocks = 300;
    const std::vector<uint8_t> w = random_blocks<B>(nblocks, 11);
    std::vector<float> expected(std::size_t(nblocks) * B::block_size);
    llmrt::dequantize_row(reinterpret_cast<const B*>(w.data()), expected.data(), int64_t(expected.size()));

    device_buffer d_w(w.size()), d_y(expected.size() * sizeof(float));
    d_w.upload(w);
    llmrt::testing::poison_device(d_y.as<float>(), int64_t(expected.size()));
    dequantize_blocks<B><<<(nblocks + 127) / 128, 128>>>(d_w.as<const B>(), d_y.as<float>(), nblocks);
    check_cuda(cudaGetLastError(), "dequantize_blocks");
    const std::vector<float> got = d_y.download<float>(expected.size());
    CHECK(bits_equal(got.data(), expected.data(), got.size()));
}
TEST_CASE_TEMPLATE_APPLY(dequantize_block_in_device_code_equals, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("dot_q8_1 equals the double dot of the dequantized block with the Q8_1 activations", B,
                          dot_q8_1_equals_the_double) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int nblocks = 257;
    const int64_t n = int64_t(nblocks) * B::block_size;
    const std::vector<uint8_t> w = random_blocks<B>(nblocks, 23);
    const std::vector<float> x = llmrt::testing::generate(llmrt::testing::distribution::heavy_tailed, n, 5);
    std::vector<llmrt::q8_1> xq(std::size_t(n / 32));
    llmrt::quantize_row(x.data(), xq.data(), n);

    std::vector<float> wf(static_cast<std::size_t>(n)), xf(static_cast<std::size_t>(n));
    std::vector<float> expected(static_cast<std::size_t>(nblocks));
    llmrt::dequantize_row(reinterpret_cast<const B*>(w.data()), wf.data(), n);
    llmrt::dequantize_row(xq.data(), xf.data(), n);
    for (int b = 0; b < nblocks; ++b) {
        double sum = 0.0;
        for (int64_t i = int64_t(b) * B::block_size; i < int64_t(b + 1) * B::block_size; ++i)
            sum += double(wf[std::size_t(i)]) * double(xf[std::size_t(i)]);
        expected[std::size_t(b)] = float(sum);
    }

    device_buffer d_w(w.size()), d_x(xq.size() * sizeof(llmrt::q8_1)), d_y(expected.size() * sizeof(float));
    d_w.upload(w);
    d_x.upload(xq);
    llmrt::testing::poison_device(d_y.as<float>(), nblocks);
    dot_blocks<B><<<(nblocks + 127) / 128, 128>>>(d_w.as<const B>(), d_x.as<const llmrt::q8_1>(), d_y.as<float>(), nblocks);
    check_cuda(cudaGetLastError(), "dot_blocks");
    const llmrt::testing::readback_report r = llmrt::testing::compare_device(d_y.as<float>(), expected);
    CHECK_MESSAGE(r.complete(), r.describe(expected.data()));
    CHECK_MESSAGE(r.nmse < 1e-10, r.describe(expected.data()));
}
TEST_CASE_TEMPLATE_APPLY(dot_q8_1_equals_the_double, llmrt_cuda_test::weight_type_tuple);
