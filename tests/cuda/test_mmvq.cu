// mmvq on the device against the CPU reference (cpu::matvec with Q8_1-rounded activations, in
// double), for every weight type, rows and k that are not multiples of the tile, 1 to 8 columns;
// each column bit-identical whatever the column count and across runs, on small shapes and on
// model-sized one-wave grids; the batched form with W broadcast; mmvq_id (shapes refused on the
// host: test_mmvq_refusals.cu).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "llmrt/cuda/mmvq.cuh"
#include "support.cuh"

using namespace llmrt_cuda_test;
namespace cuda = llmrt::cuda;
using llmrt::testing::distribution;

namespace {

// The NMSE bound against the reference of the same activation format: the kernel differs from
// it only by float rounding (about 1e-14 measured); the acceptance floor is 5e-4.
constexpr double nmse_bound = 1e-9;

struct run_result {
    std::vector<float> y;  // ncols columns of rows floats
    std::vector<int64_t> unwritten;
};

// Y = W·X on the device for W at d_w (+ offset bytes, row stride in bytes) and the first ncols
// columns of X at d_x, Y poisoned first.
run_result run_mmvq(llmrt::qtype type, const device_buffer& d_w, int64_t w_offset, int64_t rows, int64_t k,
                    int64_t row_stride, const device_buffer& d_x, int64_t ncols, const device_buffer& d_y,
                    const device_buffer& scratch, const cuda::launch_options& options = {},
                    cudaStream_t stream = nullptr) {
    cuda::qmatrix_view w;
    w.type = type;
    w.data = static_cast<const uint8_t*>(d_w.ptr) + w_offset;
    w.rows = rows;
    w.k = k;
    w.row_stride = row_stride;
    const cuda::input_columns x{d_x.as<const float>(), k, ncols};
    const cuda::output_columns y{d_y.as<float>(), rows, ncols};
    llmrt::testing::poison_device(y.data, rows * ncols);
    cuda::mmvq(w, x, y, scratch.ptr, scratch.bytes, stream, options);
    check_cuda(cudaGetLastError(), "mmvq");
    check_cuda(cudaStreamSynchronize(stream), "mmvq");
    run_result r;
    r.y = d_y.download<float>(std::size_t(rows * ncols));
    r.unwritten = llmrt::testing::unwritten(r.y.data(), int64_t(r.y.size()));
    return r;
}

// rows × k of B as random blocks, row r at r·row_stride (row_stride >= the dense row bytes).
template <class B>
std::vector<uint8_t> random_matrix(int64_t rows, int64_t k, int64_t row_stride, uint64_t seed) {
    const int64_t row_bytes = int64_t(llmrt::row_size(B::id, k));
    const std::vector<uint8_t> dense = random_blocks<B>(rows * (k / B::block_size), seed);
    std::vector<uint8_t> w(std::size_t(rows * row_stride), 0xee);
    for (int64_t r = 0; r < rows; ++r)
        std::memcpy(w.data() + r * row_stride, dense.data() + r * row_bytes, std::size_t(row_bytes));
    return w;
}

std::vector<uint8_t> dense_rows(const std::vector<uint8_t>& w, int64_t rows, int64_t row_bytes, int64_t row_stride) {
    std::vector<uint8_t> dense(std::size_t(rows * row_bytes));
    for (int64_t r = 0; r < rows; ++r)
        std::memcpy(dense.data() + r * row_bytes, w.data() + r * row_stride, std::size_t(row_bytes));
    return dense;
}

// A random rows × k W of B on the device, dense (tensor-map boxes) or with padded rows at an odd
// offset (per-row copies), 8 random activation columns, and Y and scratch for 8 columns.
template <class B>
struct random_problem {
    int64_t rows, k, row_stride, offset;
    std::vector<uint8_t> w;
    std::vector<float> x;
    device_buffer d_w, d_x, d_y, scratch;

    random_problem(int64_t rows_, int64_t k_, bool padded, uint64_t& seed)
        : rows(rows_),
          k(k_),
          row_stride(int64_t(llmrt::row_size(B::id, k_)) + (padded ? 16 * cuda::device_codec<B>::align : 0)),
          offset(padded ? cuda::device_codec<B>::align : 0),
          w(random_matrix<B>(rows_, k_, row_stride, ++seed)),
          x(llmrt::testing::generate(distribution::gaussian, k_ * cuda::mmvq_max_cols, ++seed)),
          d_w(w.size() + 64),
          d_x(x.size() * sizeof(float)),
          d_y(std::size_t(rows_) * cuda::mmvq_max_cols * sizeof(float)),
          scratch(cuda::activation_scratch_bytes(k_, cuda::mmvq_max_cols)) {
        d_w.upload(w, std::size_t(offset));
        d_x.upload(x);
    }
    run_result run(int64_t ncols, const cuda::launch_options& options = {}, cudaStream_t stream = nullptr) const {
        return run_mmvq(B::id, d_w, offset, rows, k, row_stride, d_x, ncols, d_y, scratch, options, stream);
    }
    // r's ncols columns against the CPU reference (W's dense rows).
    void check_reference(const run_result& r, int64_t ncols) const {
        const std::vector<uint8_t> dense = dense_rows(w, rows, int64_t(llmrt::row_size(B::id, k)), row_stride);
        const std::vector<float> ref = llmrt::testing::reference_matvec(B::id, dense.data(), x.data(), rows, k, ncols);
        const llmrt::testing::error_report report = llmrt::testing::compare(r.y.data(), ref.data(), rows * ncols);
        CHECK_MESSAGE((report.all_finite_match() && report.nmse < nmse_bound), report.describe(r.y.data(), ref.data()));
    }
};

// A producer that lets its dependents start at once, as llmrt's kernels do, but takes long to
// write: it waits for the kernel before it, idles about 20 µs, then copies n 16-byte words.
__global__ void slow_copy(const uint4* src, uint4* dst, int64_t n) {
    cuda::ptx::allow_dependent_grids();
    cuda::ptx::wait_for_prerequisite_grids();
    const long long start = clock64();
    while (clock64() - start < 40000) {
    }
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

}  // namespace


TEST_CASE_TEMPLATE_DEFINE("mmvq matches the CPU reference and each column's bits do not depend on the column count", B,
                          mmvq_matches_the_cpu_reference_and) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    uint64_t seed = 1000 * uint64_t(B::id);
    for (const int64_t k : test_ks<B>()) {
        for (const int64_t rows : test_rows()) {
            // Odd shapes also get padded rows and, for types that allow it, a base address that is
            // not 16-byte aligned.
            const int64_t row_bytes = int64_t(llmrt::row_size(B::id, k));
            const bool padded = (rows == 33 || rows == 257) && k > 256;
            const int64_t row_stride = padded ? row_bytes + 16 * cuda::device_codec<B>::align : row_bytes;
            const int64_t offset = padded ? cuda::device_codec<B>::align : 0;
            CAPTURE(k);
            CAPTURE(rows);
            CAPTURE(row_stride);
            CAPTURE(offset);
            const std::vector<uint8_t> w = random_matrix<B>(rows, k, row_stride, ++seed);
            const distribution dist = llmrt::testing::all_distributions[seed % 5];
            const std::vector<float> x = llmrt::testing::generate(dist, k * cuda::mmvq_max_cols, ++seed);
            const std::vector<uint8_t> wd = dense_rows(w, rows, row_bytes, row_stride);
            const std::vector<float> ref =
                llmrt::testing::reference_matvec(B::id, wd.data(), x.data(), rows, k, cuda::mmvq_max_cols);

            device_buffer d_w(w.size() + 64), d_x(x.size() * sizeof(float));
            device_buffer d_y(std::size_t(rows) * cuda::mmvq_max_cols * sizeof(float));
            device_buffer scratch(cuda::activation_scratch_bytes(k, cuda::mmvq_max_cols));
            d_w.upload(w, std::size_t(offset));
            d_x.upload(x);

            const run_result all = run_mmvq(B::id, d_w, offset, rows, k, row_stride, d_x, 8, d_y, scratch);
            REQUIRE_MESSAGE(all.unwritten.empty(), llmrt::testing::describe_unwritten(all.unwritten));
            const llmrt::testing::error_report report = llmrt::testing::compare(all.y.data(), ref.data(), rows * 8);
            CHECK_MESSAGE((report.all_finite_match() && report.nmse < nmse_bound), report.describe(all.y.data(), ref.data()));

            const run_result again = run_mmvq(B::id, d_w, offset, rows, k, row_stride, d_x, 8, d_y, scratch);
            CHECK_MESSAGE(bits_equal(again.y.data(), all.y.data(), all.y.size()), "a repeated run changed bits");

            for (int64_t ncols = 1; ncols < cuda::mmvq_max_cols; ++ncols) {
                CAPTURE(ncols);
                const run_result some = run_mmvq(B::id, d_w, offset, rows, k, row_stride, d_x, ncols, d_y, scratch);
                REQUIRE_MESSAGE(some.unwritten.empty(), llmrt::testing::describe_unwritten(some.unwritten));
                for (int64_t c = 0; c < ncols; ++c) {
                    CAPTURE(c);
                    CHECK_MESSAGE(bits_equal(some.y.data() + c * rows, all.y.data() + c * rows, std::size_t(rows)),
                                  "column differs from the same column of an 8-column launch");
                }
            }
        }
    }
}
TEST_CASE_TEMPLATE_APPLY(mmvq_matches_the_cpu_reference_and, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("mmvq gives the same bits whether W's rows come through a tensor map or row by row", B,
                          mmvq_gives_the_same_bits_whether) {
    // k = 2048 makes every type's rows a multiple of 16 bytes, so a 16-byte aligned dense W is
    // loaded as tensor-map boxes; the same rows at an odd offset with padded rows are not, and go
    // through the per-row copies, each row at its own address modulo 4. A third copy has every
    // row 2 bytes (or the type's alignment) past a multiple of 16: per-row copies again, with all
    // rows at one address modulo 4, which the tensor-core form of the unaligned types reads at
    // fixed offsets.
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int64_t rows = 33, k = 2048, align = cuda::device_codec<B>::align;
    const int64_t row_bytes = int64_t(llmrt::row_size(B::id, k));
    REQUIRE(row_bytes % 16 == 0);
    const int64_t odd_stride = row_bytes + (align < 16 ? align : 16 + 16);
    const int64_t odd_offset = align < 16 ? align : 0;
    const int64_t shifted_stride = row_bytes + 16, shifted_offset = align <= 2 ? 2 : align;
    const std::vector<uint8_t> dense = random_matrix<B>(rows, k, row_bytes, 4242);
    const std::vector<uint8_t> padded = random_matrix<B>(rows, k, odd_stride, 4242);
    const std::vector<uint8_t> shifted = random_matrix<B>(rows, k, shifted_stride, 4242);
    REQUIRE(dense_rows(padded, rows, row_bytes, odd_stride) == dense);
    REQUIRE(dense_rows(shifted, rows, row_bytes, shifted_stride) == dense);
    const std::vector<float> x = llmrt::testing::generate(distribution::gaussian, k * cuda::mmvq_max_cols, 4343);
    device_buffer d_dense(dense.size()), d_padded(padded.size() + 64), d_shifted(shifted.size() + 64);
    device_buffer d_x(x.size() * sizeof(float)), d_y(std::size_t(rows) * cuda::mmvq_max_cols * sizeof(float));
    device_buffer scratch(cuda::activation_scratch_bytes(k, cuda::mmvq_max_cols));
    d_dense.upload(dense);
    d_padded.upload(padded, std::size_t(odd_offset));
    d_shifted.upload(shifted, std::size_t(shifted_offset));
    d_x.upload(x);
    for (const int64_t ncols : {int64_t(1), int64_t(3), int64_t(8)}) {
        CAPTURE(ncols);
        const run_result a = run_mmvq(B::id, d_dense, 0, rows, k, row_bytes, d_x, ncols, d_y, scratch);
        const run_result b = run_mmvq(B::id, d_padded, odd_offset, rows, k, odd_stride, d_x, ncols, d_y, scratch);
        const run_result c =
            run_mmvq(B::id, d_shifted, shifted_offset, rows, k, shifted_stride, d_x, ncols, d_y, scratch);
        REQUIRE(a.unwritten.empty());
        REQUIRE(b.unwritten.empty());
        REQUIRE(c.unwritten.empty());
        CHECK(bits_equal(a.y.data(), b.y.data(), a.y.size()));
        CHECK(bits_equal(a.y.data(), c.y.data(), a.y.size()));
        const std::vector<float> ref = llmrt::testing::reference_matvec(B::id, dense.data(), x.data(), rows, k, ncols);
        const llmrt::testing::error_report report = llmrt::testing::compare(a.y.data(), ref.data(), rows * ncols);
        CHECK_MESSAGE((report.all_finite_match() && report.nmse < nmse_bound), report.describe(a.y.data(), ref.data()));
    }
}
TEST_CASE_TEMPLATE_APPLY(mmvq_gives_the_same_bits_whether, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("a programmatic dependent launch gives the same bits as a plain one", B,
                          a_programmatic_dependent_launch_gives_the) {
    // The programmatic launch starts W's copies before waiting for the previous kernel; on a
    // matrix of 314 row tiles (the last one partial), dense (tensor-map boxes) and with padded rows
    // at an odd offset (per-row copies), its results must equal the plain launch's bit for bit.
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int64_t rows = 5009;
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda::launch_options programmatic;
    programmatic.programmatic_dependent_launch = true;
    uint64_t seed = 7000 * uint64_t(B::id);
    for (const int64_t k : {test_ks<B>()[1], test_ks<B>().back()}) {
        for (const bool padded : {false, true}) {
            CAPTURE(k);
            CAPTURE(padded);
            const random_problem<B> problem(rows, k, padded, seed);
            for (const int64_t ncols : {int64_t(1), int64_t(3), int64_t(8)}) {
                CAPTURE(ncols);
                const run_result plain = problem.run(ncols, {}, stream);
                const run_result early = problem.run(ncols, programmatic, stream);
                REQUIRE_MESSAGE(early.unwritten.empty(), llmrt::testing::describe_unwritten(early.unwritten));
                CHECK_MESSAGE(bits_equal(plain.y.data(), early.y.data(), plain.y.size()),
                              "programmatic launch changed bits");
                if (ncols == 8 && !padded) problem.check_reference(early, ncols);
            }
        }
    }
    check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
}
TEST_CASE_TEMPLATE_APPLY(a_programmatic_dependent_launch_gives_the, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("mmvq gives the same bits however many warps run the shares of its k-split", B,
                          mmvq_gives_the_same_bits_however) {
    // launch_options::mmvq_max_warps lets fewer warps per CTA run the k-split, each taking several
    // neighbouring shares and keeping their sums apart: the sums added, and so the bits, must not
    // change. k: 9 units shared unevenly by the widest split, and 4096; W dense (tensor-map boxes)
    // and with padded rows at an odd offset (per-row copies).
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int64_t rows = 1001;
    uint64_t seed = 13000 * uint64_t(B::id);
    for (const int64_t k : {test_ks<B>().back(), int64_t(4096)}) {
        for (const bool padded : {false, true}) {
            CAPTURE(k);
            CAPTURE(padded);
            const random_problem<B> problem(rows, k, padded, seed);
            for (const int64_t ncols : {int64_t(1), int64_t(2), int64_t(5), int64_t(8)}) {
                CAPTURE(ncols);
                const run_result chosen = problem.run(ncols);
                REQUIRE_MESSAGE(chosen.unwritten.empty(), llmrt::testing::describe_unwritten(chosen.unwritten));
                for (const int max_warps : {1, 2, 4}) {
                    CAPTURE(max_warps);
                    cuda::launch_options fewer;
                    fewer.mmvq_max_warps = max_warps;
                    const run_result r = problem.run(ncols, fewer);
                    REQUIRE_MESSAGE(r.unwritten.empty(), llmrt::testing::describe_unwritten(r.unwritten));
                    CHECK_MESSAGE(bits_equal(chosen.y.data(), r.y.data(), r.y.size()), "fewer warps changed bits");
                }
                if (ncols == 5) problem.check_reference(chosen, ncols);
            }
        }
    }
}
TEST_CASE_TEMPLATE_APPLY(mmvq_gives_the_same_bits_however, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("mmvq_prepared_many gives every product the bits of its own mmvq_prepared", B,
                          mmvq_prepared_many_gives_every_product) {
    // Four W (a partial last row tile, two model-sized one-wave grids, a single row tile) sharing X,
    // quantized on the same stream just before, all as programmatic launches: the first product
    // reads X after the quantizer is complete, the others at once. Each Y must equal that of a
    // plain mmvq_prepared of its own, bit for bit, and the CPU reference.
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda::launch_options programmatic;
    programmatic.programmatic_dependent_launch = true;
    uint64_t seed = 11000 * uint64_t(B::id);
    const int64_t k = 4096, all_rows[] = {1001, 14336, 4096, 16};
    std::vector<std::vector<uint8_t>> w;
    std::vector<std::unique_ptr<device_buffer>> d_w, d_y;
    for (const int64_t rows : all_rows) {
        w.push_back(random_blocks<B>(rows * (k / B::block_size), ++seed));
        d_w.push_back(std::make_unique<device_buffer>(w.back().size()));
        d_w.back()->upload(w.back());
        d_y.push_back(std::make_unique<device_buffer>(std::size_t(rows) * cuda::mmvq_max_cols * sizeof(float)));
    }
    device_buffer d_alone(std::size_t(all_rows[1]) * cuda::mmvq_max_cols * sizeof(float));
    const std::vector<float> x = llmrt::testing::generate(distribution::gaussian, k * cuda::mmvq_max_cols, ++seed);
    device_buffer d_x(x.size() * sizeof(float)), scratch(cuda::activation_scratch_bytes(k, cuda::mmvq_max_cols));
    d_x.upload(x);
    for (const int64_t ncols : {int64_t(1), int64_t(2), int64_t(5), int64_t(8)}) {
        CAPTURE(ncols);
        const cuda::input_columns xv{d_x.as<const float>(), k, ncols};
        std::vector<cuda::mmvq_product> products;
        for (std::size_t i = 0; i < d_w.size(); ++i) {
            cuda::qmatrix_view wv;
            wv.type = B::id;
            wv.data = d_w[i]->ptr;
            wv.rows = all_rows[i];
            wv.k = k;
            products.push_back({wv, cuda::output_columns{d_y[i]->as<float>(), all_rows[i], ncols}});
            llmrt::testing::poison_device(d_y[i]->as<float>(), all_rows[i] * ncols);
        }
        check_cuda(cudaMemsetAsync(scratch.ptr, 0, scratch.bytes, stream), "cudaMemsetAsync");
        cuda::quantize_activations(xv, scratch.ptr, scratch.bytes, stream, programmatic);
        const cuda::prepared_activations prepared = cuda::prepared_from(xv, scratch.ptr);
        cuda::mmvq_prepared_many(products, prepared, stream, programmatic);
        check_cuda(cudaStreamSynchronize(stream), "mmvq_prepared_many");
        for (std::size_t i = 0; i < products.size(); ++i) {
            const int64_t rows = all_rows[i];
            CAPTURE(rows);
            const std::vector<float> shared = d_y[i]->download<float>(std::size_t(rows * ncols));
            const std::vector<int64_t> unwritten = llmrt::testing::unwritten(shared.data(), int64_t(shared.size()));
            REQUIRE_MESSAGE(unwritten.empty(), llmrt::testing::describe_unwritten(unwritten));
            llmrt::testing::poison_device(d_alone.as<float>(), rows * ncols);
            cuda::mmvq_prepared(products[i].w, prepared, cuda::output_columns{d_alone.as<float>(), rows, ncols}, stream);
            check_cuda(cudaStreamSynchronize(stream), "mmvq_prepared");
            const std::vector<float> alone = d_alone.download<float>(std::size_t(rows * ncols));
            CHECK_MESSAGE(bits_equal(shared.data(), alone.data(), alone.size()), "a shared-X launch changed bits");
            const int64_t check_rows = std::min<int64_t>(rows, 64);
            const std::vector<float> ref =
                llmrt::testing::reference_matvec(B::id, w[i].data(), x.data(), check_rows, k, ncols);
            std::vector<float> got(std::size_t(check_rows * ncols));
            for (int64_t c = 0; c < ncols; ++c)
                std::memcpy(got.data() + c * check_rows, shared.data() + c * rows, std::size_t(check_rows) * sizeof(float));
            const llmrt::testing::error_report report = llmrt::testing::compare(got.data(), ref.data(), int64_t(got.size()));
            CHECK_MESSAGE((report.all_finite_match() && report.nmse < nmse_bound), report.describe(got.data(), ref.data()));
        }
    }
    check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
}
TEST_CASE_TEMPLATE_APPLY(mmvq_prepared_many_gives_every_product, llmrt_cuda_test::weight_type_tuple);

TEST_CASE("launches sharing X read the X that the kernel just before them wrote, never an older one") {
    // Rounds of: a slow producer kernel (it lets its dependents start at once, waits for the kernel
    // before it, idles for about 20 µs, then copies this round's X records into the one scratch
    // that every round reads), then mmvq_prepared_many over small and large W, all programmatic
    // launches queued back to back without a host wait. A launch that read X before the producer
    // of its round was complete would see the previous round's X: every round's Y must equal a
    // plain launch's on that round's X, bit for bit. (With the first launch reading X at once too,
    // this test fails.)
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda::launch_options programmatic;
    programmatic.programmatic_dependent_launch = true;
    const int64_t k = 4096, rounds = 6, all_rows[] = {32, 4096, 48};
    uint64_t seed = 12000;
    std::vector<std::unique_ptr<device_buffer>> d_w;
    for (const int64_t rows : all_rows) {
        const std::vector<uint8_t> w = random_blocks<llmrt::q4_K>(rows * (k / 256), ++seed);
        d_w.push_back(std::make_unique<device_buffer>(w.size()));
        d_w.back()->upload(w);
    }
    // Every round's X, quantized once into records of its own.
    const std::vector<float> x = llmrt::testing::generate(distribution::gaussian, k * rounds, ++seed);
    device_buffer d_x(x.size() * sizeof(float));
    d_x.upload(x);
    const std::size_t record_bytes = cuda::activation_scratch_bytes(k, 1);
    device_buffer all_records(record_bytes * rounds), scratch(record_bytes);
    for (int64_t round = 0; round < rounds; ++round)
        cuda::quantize_activations(cuda::input_columns{d_x.as<const float>() + round * k, k, 1},
                                   static_cast<uint8_t*>(all_records.ptr) + round * record_bytes, record_bytes, stream);
    const int64_t total_rows = all_rows[0] + all_rows[1] + all_rows[2];
    device_buffer d_y(std::size_t(rounds * total_rows) * sizeof(float)), d_alone(std::size_t(total_rows) * sizeof(float));
    llmrt::testing::poison_device(d_y.as<float>(), rounds * total_rows);
    auto products_of = [&](float* y) {
        std::vector<cuda::mmvq_product> products;
        int64_t offset = 0;
        for (std::size_t i = 0; i < d_w.size(); ++i) {
            cuda::qmatrix_view wv;
            wv.type = llmrt::qtype::q4_K;
            wv.data = d_w[i]->ptr;
            wv.rows = all_rows[i];
            wv.k = k;
            products.push_back({wv, cuda::output_columns{y + offset, all_rows[i], 1}});
            offset += all_rows[i];
        }
        return products;
    };
    const cuda::prepared_activations prepared = cuda::prepared_from(cuda::input_columns{d_x.as<const float>(), k, 1}, scratch.ptr);
    for (int64_t round = 0; round < rounds; ++round) {
        cuda::detail::launch("slow_copy", slow_copy, dim3(1), dim3(256), 0, stream, programmatic,
                             reinterpret_cast<const uint4*>(static_cast<uint8_t*>(all_records.ptr) + round * record_bytes),
                             static_cast<uint4*>(scratch.ptr), int64_t(record_bytes / 16));
        cuda::mmvq_prepared_many(products_of(d_y.as<float>() + round * total_rows), prepared, stream, programmatic);
    }
    check_cuda(cudaStreamSynchronize(stream), "rounds");
    const std::vector<float> shared = d_y.download<float>(std::size_t(rounds * total_rows));
    for (int64_t round = 0; round < rounds; ++round) {
        CAPTURE(round);
        const cuda::prepared_activations own =
            cuda::prepared_from(cuda::input_columns{d_x.as<const float>(), k, 1},
                                static_cast<uint8_t*>(all_records.ptr) + round * record_bytes);
        for (const cuda::mmvq_product& product : products_of(d_alone.as<float>()))
            cuda::mmvq_prepared(product.w, own, product.y, stream);
        check_cuda(cudaStreamSynchronize(stream), "plain");
        const std::vector<float> alone = d_alone.download<float>(std::size_t(total_rows));
        CHECK_MESSAGE(bits_equal(shared.data() + round * total_rows, alone.data(), alone.size()),
                      "a launch sharing X read another round's X");
    }
    check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

TEST_CASE_TEMPLATE_DEFINE("large one-wave grids give each column the same bits at every column count", B,
                          large_one_wave_grids_give_each) {
    // Model-sized matrices whose grids fill the GPU in one wave: there the ring takes the shapes
    // that small tests never reach (wide steps of two units, compact tensor-map slots, rings sized
    // from the SM's share of shared memory, one-slot rings beside room for the next launch), and
    // each column count may take a different one. Every column must still equal the same column
    // of the 8-column launch; the first and last 48 rows are checked against the CPU reference.
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    uint64_t seed = 9000 * uint64_t(B::id);
    const int64_t shapes[][2] = {{4096, 4096}, {14336, 4096}, {4096, 14336}};
    for (const auto& shape : shapes) {
        const int64_t rows = shape[0], k = shape[1];
        const int64_t row_bytes = int64_t(llmrt::row_size(B::id, k));
        CAPTURE(rows);
        CAPTURE(k);
        const std::vector<uint8_t> w = random_blocks<B>(rows * (k / B::block_size), ++seed);
        const std::vector<float> x = llmrt::testing::generate(distribution::gaussian, k * cuda::mmvq_max_cols, ++seed);
        device_buffer d_w(w.size()), d_x(x.size() * sizeof(float));
        device_buffer d_y(std::size_t(rows) * cuda::mmvq_max_cols * sizeof(float));
        device_buffer scratch(cuda::activation_scratch_bytes(k, cuda::mmvq_max_cols));
        d_w.upload(w);
        d_x.upload(x);
        const run_result all = run_mmvq(B::id, d_w, 0, rows, k, row_bytes, d_x, 8, d_y, scratch);
        REQUIRE_MESSAGE(all.unwritten.empty(), llmrt::testing::describe_unwritten(all.unwritten));
        for (const int64_t first : {int64_t(0), rows - 48}) {
            const std::vector<float> ref = llmrt::testing::reference_matvec(
                B::id, w.data() + first * row_bytes, x.data(), 48, k, cuda::mmvq_max_cols);
            std::vector<float> got(std::size_t(48 * cuda::mmvq_max_cols));
            for (int64_t c = 0; c < cuda::mmvq_max_cols; ++c)
                std::memcpy(got.data() + c * 48, all.y.data() + c * rows + first, 48 * sizeof(float));
            const llmrt::testing::error_report report = llmrt::testing::compare(got.data(), ref.data(), int64_t(got.size()));
            CHECK_MESSAGE((report.all_finite_match() && report.nmse < nmse_bound), report.describe(got.data(), ref.data()));
        }
        for (int64_t ncols = 1; ncols < cuda::mmvq_max_cols; ++ncols) {
            CAPTURE(ncols);
            const run_result some = run_mmvq(B::id, d_w, 0, rows, k, row_bytes, d_x, ncols, d_y, scratch);
            REQUIRE_MESSAGE(some.unwritten.empty(), llmrt::testing::describe_unwritten(some.unwritten));
            CHECK_MESSAGE(bits_equal(some.y.data(), all.y.data(), std::size_t(ncols * rows)),
                          "a column differs from the same column of an 8-column launch");
        }
    }
}
TEST_CASE_TEMPLATE_APPLY(large_one_wave_grids_give_each, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("the batched form broadcasts W across activation batches and matches separate launches", B,
                          the_batched_form_broadcasts_w_across) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int64_t rows = 33, k = test_ks<B>()[1], ncols = 3;
    const int64_t w_batch2 = 2, w_batch3 = 1, batch2 = 4, batch3 = 3;  // ratios 2 and 3
    const int64_t row_bytes = int64_t(llmrt::row_size(B::id, k)), matrix_bytes = rows * row_bytes;
    const std::vector<uint8_t> w = random_blocks<B>(w_batch2 * w_batch3 * rows * (k / B::block_size), 91);
    const int64_t x_batch = ncols * k;
    const std::vector<float> x = llmrt::testing::generate(distribution::gaussian, batch2 * batch3 * x_batch, 92);

    device_buffer d_w(w.size()), d_x(x.size() * sizeof(float));
    device_buffer d_y(std::size_t(batch2 * batch3 * ncols * rows) * sizeof(float)), d_y1(std::size_t(ncols * rows) * sizeof(float));
    device_buffer scratch(cuda::activation_scratch_bytes(k, ncols, batch2 * batch3));
    d_w.upload(w);
    d_x.upload(x);

    cuda::qmatrix_view wv;
    wv.type = B::id;
    wv.data = d_w.ptr;
    wv.rows = rows;
    wv.k = k;
    wv.batch2 = w_batch2;
    wv.batch3 = w_batch3;
    const cuda::input_columns xv{d_x.as<const float>(), k, ncols, 0, batch2, batch3};
    const cuda::output_columns yv{d_y.as<float>(), rows, ncols, 0, batch2, batch3};
    llmrt::testing::poison_device(yv.data, batch2 * batch3 * ncols * rows);
    cuda::mmvq(wv, xv, yv, scratch.ptr, scratch.bytes, nullptr);
    const std::vector<float> y = d_y.download<float>(std::size_t(batch2 * batch3 * ncols * rows));
    REQUIRE(llmrt::testing::unwritten(y.data(), int64_t(y.size())).empty());

    for (int64_t i3 = 0; i3 < batch3; ++i3)
        for (int64_t i2 = 0; i2 < batch2; ++i2) {
            CAPTURE(i2);
            CAPTURE(i3);
            const int64_t wi = (i3 / (batch3 / w_batch3)) * w_batch2 + i2 / (batch2 / w_batch2);
            const uint8_t* wslice = w.data() + wi * matrix_bytes;
            const float* xslice = x.data() + (i3 * batch2 + i2) * x_batch;
            const float* yslice = y.data() + (i3 * batch2 + i2) * ncols * rows;
            const std::vector<float> ref = llmrt::testing::reference_matvec(B::id, wslice, xslice, rows, k, ncols);
            const llmrt::testing::error_report report = llmrt::testing::compare(yslice, ref.data(), ncols * rows);
            CHECK_MESSAGE((report.all_finite_match() && report.nmse < nmse_bound), report.describe(yslice, ref.data()));

            cuda::qmatrix_view one = wv;
            one.data = static_cast<const uint8_t*>(d_w.ptr) + wi * matrix_bytes;
            one.batch2 = one.batch3 = 1;
            const cuda::input_columns x1{d_x.as<const float>() + (i3 * batch2 + i2) * x_batch, k, ncols};
            const cuda::output_columns y1{d_y1.as<float>(), rows, ncols};
            cuda::mmvq(one, x1, y1, scratch.ptr, scratch.bytes, nullptr);
            const std::vector<float> separate = d_y1.download<float>(std::size_t(ncols * rows));
            CHECK_MESSAGE(bits_equal(separate.data(), yslice, separate.size()), "batched and separate launches differ");
        }
}
TEST_CASE_TEMPLATE_APPLY(the_batched_form_broadcasts_w_across, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("mmvq_id multiplies each column by the expert its id names, and an invalid id gives NaN", B,
                          mmvq_id_multiplies_each_column_by) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const int64_t rows = 33, k = test_ks<B>()[1], n_experts = 4, n_tokens = 3, n_used = 2;
    const int64_t row_bytes = int64_t(llmrt::row_size(B::id, k)), matrix_bytes = rows * row_bytes;
    const std::vector<uint8_t> w = random_blocks<B>(n_experts * rows * (k / B::block_size), 71);
    const std::vector<int32_t> ids = {2, 0, 3, 3, 1, n_experts};  // the last one is invalid
    device_buffer d_w(w.size()), d_ids(ids.size() * sizeof(int32_t));
    d_w.upload(w);
    d_ids.upload(ids);
    cuda::qmatrix_view experts;
    experts.type = B::id;
    experts.data = d_w.ptr;
    experts.rows = rows;
    experts.k = k;
    experts.batch2 = n_experts;

    for (const int64_t x_cols : {int64_t(1), n_used}) {
        CAPTURE(x_cols);
        const std::vector<float> x = llmrt::testing::generate(distribution::heavy_tailed, n_tokens * x_cols * k, 72 + x_cols);
        device_buffer d_x(x.size() * sizeof(float)), d_y(std::size_t(n_tokens * n_used * rows) * sizeof(float));
        device_buffer d_y1(std::size_t(rows) * sizeof(float));
        d_x.upload(x);
        const cuda::input_columns xv{d_x.as<const float>(), k, x_cols, 0, n_tokens};
        const cuda::output_columns yv{d_y.as<float>(), rows, n_used, 0, n_tokens};
        const cuda::expert_ids_view iv{d_ids.as<const int32_t>(), n_tokens, n_used};
        device_buffer scratch(cuda::mmvq_id_scratch_bytes(xv));
        llmrt::testing::poison_device(yv.data, n_tokens * n_used * rows);
        cuda::mmvq_id(experts, xv, iv, yv, scratch.ptr, scratch.bytes, nullptr);
        const std::vector<float> y = d_y.download<float>(std::size_t(n_tokens * n_used * rows));
        REQUIRE(llmrt::testing::unwritten(y.data(), int64_t(y.size())).empty());

        for (int64_t token = 0; token < n_tokens; ++token)
            for (int64_t slot = 0; slot < n_used; ++slot) {
                CAPTURE(token);
                CAPTURE(slot);
                const int32_t id = ids[std::size_t(token * n_used + slot)];
                const float* got = y.data() + (token * n_used + slot) * rows;
                if (id >= n_experts) {
                    for (int64_t r = 0; r < rows; ++r) CHECK(std::isnan(got[r]));
                    continue;
                }
                const float* xcol = x.data() + (token * x_cols + (x_cols == 1 ? 0 : slot)) * k;
                const std::vector<float> ref =
                    llmrt::testing::reference_matvec(B::id, w.data() + id * matrix_bytes, xcol, rows, k, 1);
                const llmrt::testing::error_report report = llmrt::testing::compare(got, ref.data(), rows);
                CHECK_MESSAGE((report.all_finite_match() && report.nmse < nmse_bound), report.describe(got, ref.data()));

                cuda::qmatrix_view one = experts;
                one.data = static_cast<const uint8_t*>(d_w.ptr) + id * matrix_bytes;
                one.batch2 = 1;
                const cuda::input_columns x1{d_x.as<const float>() + (xcol - x.data()), k, 1};
                const cuda::output_columns y1{d_y1.as<float>(), rows, 1};
                cuda::mmvq(one, x1, y1, scratch.ptr, scratch.bytes, nullptr);
                const std::vector<float> single = d_y1.download<float>(std::size_t(rows));
                CHECK_MESSAGE(bits_equal(single.data(), got, std::size_t(rows)), "mmvq_id and mmvq differ");
            }
    }
}
TEST_CASE_TEMPLATE_APPLY(mmvq_id_multiplies_each_column_by, llmrt_cuda_test::weight_type_tuple);
