// mmvq's and mmvq_id's refusals on the host: every shape, type, alignment and scratch mistake is
// an llmrt::error naming the shapes, raised before anything is launched (and, where a device is
// present, with Y left as it was).
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "llmrt/cuda/mmvq.cuh"
#include "support.cuh"

using namespace llmrt_cuda_test;
namespace cuda = llmrt::cuda;

namespace {

// Calls f, which must throw llmrt::error with `code` and a message naming every string of `names`.
template <class F>
void check_refused(F&& f, llmrt::errc code, std::initializer_list<std::string> names) {
    bool thrown = false;
    try {
        f();
    } catch (const llmrt::error& e) {
        thrown = true;
        CHECK_MESSAGE(e.code() == code, std::string(e.what()));
        const std::string what = e.what();
        for (const std::string& name : names) {
            const std::string missing = what + " lacks " + name;
            CHECK_MESSAGE(what.find(name) != std::string::npos, missing);
        }
    }
    CHECK_MESSAGE(thrown, "no llmrt::error was thrown");
}

}  // namespace

TEST_CASE("mmvq refuses mismatched shapes on the host, naming both shapes, before anything is launched") {
    // Runs with and without a device: the checks come before any CUDA call. With a device, the
    // buffers are real and stay poisoned, which shows nothing was launched.
    const bool device = probe().present();
    const int64_t rows = 64, k = 512;
    alignas(256) static uint8_t host_bytes[1 << 16];
    std::unique_ptr<device_buffer> d_w, d_x, d_y, scratch;
    void *w_ptr = host_bytes, *x_ptr = host_bytes, *y_ptr = host_bytes, *s_ptr = host_bytes;
    if (device) {
        d_w = std::make_unique<device_buffer>(std::size_t(rows) * llmrt::row_size(llmrt::qtype::q4_K, k) * 2);
        d_x = std::make_unique<device_buffer>(std::size_t(k) * 16 * sizeof(float));
        d_y = std::make_unique<device_buffer>(std::size_t(rows) * 16 * sizeof(float));
        scratch = std::make_unique<device_buffer>(cuda::activation_scratch_bytes(k, 16, 4));
        w_ptr = d_w->ptr, x_ptr = d_x->ptr, y_ptr = d_y->ptr, s_ptr = scratch->ptr;
        llmrt::testing::poison_device(d_y->as<float>(), rows * 16);
        check_cuda(cudaMemset(scratch->ptr, 0x5a, scratch->bytes), "cudaMemset");
    }
    cuda::qmatrix_view w;
    w.type = llmrt::qtype::q4_K;
    w.data = w_ptr;
    w.rows = rows;
    w.k = k;
    cuda::input_columns x{static_cast<const float*>(x_ptr), k, 2};
    cuda::output_columns y{static_cast<float*>(y_ptr), rows, 2};
    const std::size_t scratch_bytes = cuda::activation_scratch_bytes(k, 16, 4);
    auto run = [&](const cuda::qmatrix_view& wv, const cuda::input_columns& xv, const cuda::output_columns& yv) {
        return [=] { cuda::mmvq(wv, xv, yv, s_ptr, scratch_bytes, nullptr); };
    };
    using llmrt::errc;

    SUBCASE("X's length is not W's k") {
        cuda::input_columns bad = x;
        bad.length = 256;
        check_refused(run(w, bad, y), errc::shape_mismatch, {w.describe(), bad.describe()});
    }
    SUBCASE("more than 8 columns") {
        cuda::input_columns bad = x;
        bad.ncols = 9;
        cuda::output_columns bad_y = y;
        bad_y.ncols = 9;
        check_refused(run(w, bad, bad_y), errc::shape_mismatch, {w.describe(), bad.describe(), "1..8"});
    }
    SUBCASE("Y's length is not W's rows") {
        cuda::output_columns bad = y;
        bad.length = rows - 1;
        check_refused(run(w, x, bad), errc::shape_mismatch, {w.describe(), x.describe(), bad.describe()});
    }
    SUBCASE("Y's column count is not X's") {
        cuda::output_columns bad = y;
        bad.ncols = 3;
        check_refused(run(w, x, bad), errc::shape_mismatch, {w.describe(), x.describe(), bad.describe()});
    }
    SUBCASE("W's batches do not divide X's") {
        cuda::qmatrix_view bw = w;
        bw.batch2 = 2;
        cuda::input_columns bx = x;
        bx.batch2 = 3;
        cuda::output_columns by = y;
        by.batch2 = 3;
        check_refused(run(bw, bx, by), errc::shape_mismatch, {bw.describe(), bx.describe()});
    }
    SUBCASE("k is not a multiple of the block size") {
        cuda::qmatrix_view bw = w;
        bw.k = 320;
        cuda::input_columns bx = x;
        bx.length = 320;
        check_refused(run(bw, bx, y), errc::shape_mismatch, {"q4_K", "320", bx.describe()});
    }
    SUBCASE("W's address is not aligned for its type") {
        cuda::qmatrix_view bw = w;
        bw.data = static_cast<const uint8_t*>(w_ptr) + 2;
        check_refused(run(bw, x, y), errc::invalid_argument, {bw.describe(), "16 bytes"});
    }
    SUBCASE("a type without a kernel") {
        cuda::qmatrix_view bw = w;
        bw.type = llmrt::qtype::f32;
        check_refused(run(bw, x, y), errc::unsupported_type, {"cuda::mmvq", "q4_K"});
    }
    SUBCASE("too small a scratch") {
        check_refused([&] { cuda::mmvq(w, x, y, s_ptr, 16, nullptr); }, errc::invalid_argument, {"scratch"});
    }
    SUBCASE("mmvq_prepared_many names the product whose shapes do not match, and launches none") {
        const cuda::prepared_activations prepared = cuda::prepared_from(x, s_ptr);
        cuda::output_columns bad = y;
        bad.length = rows - 1;
        const std::vector<cuda::mmvq_product> products = {{w, y}, {w, bad}};
        check_refused([&] { cuda::mmvq_prepared_many(products, prepared, nullptr); }, errc::shape_mismatch,
                      {"product 1", bad.describe()});
    }
    SUBCASE("mmvq_prepared_many refuses a null W in a later product before launching the first") {
        const cuda::prepared_activations prepared = cuda::prepared_from(x, s_ptr);
        cuda::qmatrix_view bw = w;
        bw.data = nullptr;
        const std::vector<cuda::mmvq_product> products = {{w, y}, {bw, y}};
        check_refused([&] { cuda::mmvq_prepared_many(products, prepared, nullptr); }, errc::invalid_argument,
                      {"product 1", "null pointer"});
    }
    SUBCASE("mmvq, which quantizes X itself, refuses to be told X was shared") {
        cuda::launch_options shared;
        shared.activations = cuda::activation_order::shared;
        check_refused([&] { cuda::mmvq(w, x, y, s_ptr, scratch_bytes, nullptr, shared); }, errc::invalid_argument,
                      {"activation_order::shared"});
    }
    SUBCASE("a warp cap that is not 0, 1, 2, 4 or 8") {
        cuda::launch_options three;
        three.mmvq_max_warps = 3;
        check_refused([&] { cuda::mmvq(w, x, y, s_ptr, scratch_bytes, nullptr, three); }, errc::invalid_argument,
                      {"mmvq_max_warps is 3"});
        const cuda::prepared_activations prepared = cuda::prepared_from(x, s_ptr);
        check_refused([&] { cuda::mmvq_prepared(w, prepared, y, nullptr, three); }, errc::invalid_argument,
                      {"mmvq_max_warps is 3"});
    }
    SUBCASE("mmvq_id with ids for another number of tokens") {
        cuda::qmatrix_view experts = w;
        experts.batch2 = 4;
        const cuda::input_columns xi{static_cast<const float*>(x_ptr), k, 1, 0, 3};
        const cuda::output_columns yi{static_cast<float*>(y_ptr), rows, 2, 0, 3};
        const cuda::expert_ids_view ids{reinterpret_cast<const int32_t*>(x_ptr), 2, 2};
        check_refused([&] { cuda::mmvq_id(experts, xi, ids, yi, s_ptr, scratch_bytes, nullptr); },
                      errc::shape_mismatch, {experts.describe(), xi.describe(), ids.describe()});
    }
    if (device) {
        const std::vector<float> after = d_y->download<float>(std::size_t(rows) * 16);
        CHECK(llmrt::testing::unwritten(after.data(), int64_t(after.size())).size() == after.size());
        const std::vector<uint8_t> s = scratch->download<uint8_t>(scratch->bytes);
        CHECK(std::count(s.begin(), s.end(), uint8_t(0x5a)) == int64_t(s.size()));
    }
}
