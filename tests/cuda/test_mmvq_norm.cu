// mmvq's norm-tail epilogue on the device (a matvec step carrying the norm step after it): for
// every weight type, columns of one and several 32-value blocks past the norm kernel's 1024
// threads, 1 to 8 columns, outputs poisoned first, records in chunks of 8 columns and of one.
// Against the launches it replaces, bit for bit: mmvq storing Y, then ops::add_rms_norm_mul on
// the residual and Y.
#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llmrt/cuda/mmvq.cuh"
#include "llmrt/cuda/ops/norm.cuh"
#include "llmrt/cuda/ops/records.cuh"
#include "support.cuh"

using namespace llmrt_cuda_test;
namespace cuda = llmrt::cuda;
using llmrt::testing::distribution;

TEST_CASE_TEMPLATE_DEFINE("the norm-tail epilogue gives the bits of mmvq then the residual add, rms_norm, weight and records", B,
                          norm_tail_epilogue) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int64_t k = test_ks<B>()[1];
    const float eps = 1e-5f;
    for (const int64_t rows : {int64_t(96), int64_t(2080)}) {  // 3 blocks; 65 blocks, past 1024 values
        const std::vector<uint8_t> w = random_blocks<B>(rows * (k / B::block_size), 111);
        const std::vector<float> x = llmrt::testing::generate(distribution::heavy_tailed, 8 * k, 112);
        const std::vector<float> residual = llmrt::testing::generate(distribution::gaussian, 8 * rows, 113);
        const std::vector<float> weight = llmrt::testing::generate(distribution::gaussian, rows, 114);
        device_buffer d_w(w.size()), d_x(x.size() * sizeof(float)), d_residual(residual.size() * sizeof(float)),
            d_weight(weight.size() * sizeof(float)), scratch(cuda::activation_scratch_bytes(k, 8));
        d_w.upload(w);
        d_x.upload(x);
        d_residual.upload(residual);
        d_weight.upload(weight);
        const std::size_t floats = std::size_t(8 * rows) * sizeof(float);
        device_buffer d_y(floats), d_sum(floats), d_norm(floats), d_product(floats), d_y_ref(floats), d_sum_ref(floats),
            d_norm_ref(floats), d_product_ref(floats), d_counter(sizeof(int32_t));
        check_cuda(cudaMemset(d_counter.ptr, 0, d_counter.bytes), "cudaMemset");
        cuda::qmatrix_view wv;
        wv.type = B::id;
        wv.data = d_w.ptr;
        wv.rows = rows;
        wv.k = k;
        for (const int64_t ncols : {int64_t(1), int64_t(3), int64_t(8)})
            for (const int64_t chunk_cols : {int64_t(8), int64_t(1)}) {
                CAPTURE(rows);
                CAPTURE(ncols);
                CAPTURE(chunk_cols);
                const std::size_t record_bytes = chunk_cols == 8 ? cuda::ops::rounded_records_bytes(rows, ncols)
                                                                 : std::size_t(cuda::activation_batch_bytes(rows, 1) * ncols);
                device_buffer d_records(record_bytes), d_records_ref(record_bytes);
                cuda::quantize_activations(cuda::input_columns{d_x.as<const float>(), k, ncols}, scratch.ptr, scratch.bytes, nullptr);
                const cuda::prepared_activations xp{scratch.ptr, k, ncols};
                for (float* p : {d_y.as<float>(), d_sum.as<float>(), d_norm.as<float>(), d_product.as<float>()})
                    llmrt::testing::poison_device(p, rows * ncols);
                // Both poisoned alike: a chunk of fewer than 8 columns leaves the bytes of the missing
                // columns as they were, in both.
                check_cuda(cudaMemset(d_records.ptr, 0xA5, record_bytes), "cudaMemset");
                check_cuda(cudaMemset(d_records_ref.ptr, 0xA5, record_bytes), "cudaMemset");
                for (int run = 0; run < 2; ++run) {  // the second run finds the counter the first left
                    cuda::mmvq_product pr;
                    pr.w = wv;
                    pr.y = cuda::output_columns{d_y.as<float>(), rows, ncols};
                    cuda::mmvq_epilogue& e = pr.epilogue;
                    e.kind = cuda::mmvq_finish::norm_tail;
                    e.length = int32_t(rows);
                    e.addend = d_residual.as<const float>();
                    e.addend_stride = rows;
                    e.sum = d_sum.as<float>();
                    e.norm = d_norm.as<float>();
                    e.product = d_product.as<float>();
                    e.weight = d_weight.as<const float>();
                    e.eps = eps;
                    e.records = static_cast<uint8_t*>(d_records.ptr);
                    e.chunk_cols = chunk_cols;
                    e.cols = ncols;
                    e.counters = d_counter.as<int32_t>();
                    cuda::mmvq_prepared_many(std::span<const cuda::mmvq_product>(&pr, 1), xp, nullptr);
                    check_cuda(cudaDeviceSynchronize(), "mmvq with norm_tail");
                }
                // The unfused launches: Y, then the norm step.
                cuda::mmvq_product plain;
                plain.w = wv;
                plain.y = cuda::output_columns{d_y_ref.as<float>(), rows, ncols};
                cuda::mmvq_prepared_many(std::span<const cuda::mmvq_product>(&plain, 1), xp, nullptr);
                cuda::ops::add_rms_norm_mul(d_residual.as<const float>(), d_y_ref.as<const float>(), d_sum_ref.as<float>(),
                                            d_norm_ref.as<float>(), d_weight.as<const float>(), d_product_ref.as<float>(), rows,
                                            ncols, eps, nullptr, {}, d_records_ref.ptr, true, chunk_cols);
                check_cuda(cudaDeviceSynchronize(), "mmvq, add_rms_norm_mul");
                const auto n = std::size_t(rows * ncols);
                for (const auto& [got, want] : {std::pair{&d_y, &d_y_ref}, std::pair{&d_sum, &d_sum_ref},
                                                 std::pair{&d_norm, &d_norm_ref}, std::pair{&d_product, &d_product_ref}}) {
                    const std::vector<float> g = got->template download<float>(n), r = want->template download<float>(n);
                    REQUIRE(llmrt::testing::unwritten(g.data(), int64_t(n)).empty());
                    CHECK(bits_equal(g.data(), r.data(), n));
                }
                CHECK(d_records.download<uint8_t>(record_bytes) == d_records_ref.download<uint8_t>(record_bytes));
                CHECK(d_counter.download<int32_t>(1)[0] == 0);
            }
    }
}
TEST_CASE_TEMPLATE_APPLY(norm_tail_epilogue, llmrt_cuda_test::weight_type_tuple);

TEST_CASE("the norm-tail epilogue is refused on the host for columns it cannot finish, naming why") {
    // Runs with and without a device: the checks come before any CUDA call.
    alignas(256) static uint8_t host_bytes[4096];
    cuda::qmatrix_view wv;
    wv.type = llmrt::qtype::q8_0;
    wv.data = host_bytes;
    wv.rows = 40;  // not whole 32-value blocks
    wv.k = 64;
    cuda::mmvq_product pr;
    pr.w = wv;
    pr.y = cuda::output_columns{reinterpret_cast<float*>(host_bytes), 40, 1};
    float dummy = 0.0f;
    int32_t counter = 0;
    pr.epilogue.kind = cuda::mmvq_finish::norm_tail;
    pr.epilogue.length = 40;
    pr.epilogue.addend = &dummy;
    pr.epilogue.sum = &dummy;
    pr.epilogue.counters = &counter;
    const cuda::prepared_activations xp{host_bytes, 64, 1};
    try {
        cuda::mmvq_prepared_many(std::span<const cuda::mmvq_product>(&pr, 1), xp, nullptr);
        FAIL("a norm tail over 40 rows was accepted");
    } catch (const llmrt::error& e) {
        CHECK(std::string(e.what()).find("norm_tail needs columns of whole 32-value blocks") != std::string::npos);
    }
}
