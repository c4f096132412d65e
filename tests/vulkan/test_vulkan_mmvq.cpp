// The Vulkan mat-vec against the CPU reference (llmrt::cpu::matvec with Q8_1-rounded activations,
// in double): every weight type, 1..8 columns, sizes that are not multiples of the work-group
// tile, outputs poisoned first; batching with broadcast W, strides, mmvq_id, the quantizer's bytes,
// and the host-side shape checks.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "llmrt/quant/codec.hpp"
#include "llmrt/testing/generate.hpp"
#include "llmrt/testing/reference.hpp"
#include "llmrt/testing/vulkan.hpp"
#include "llmrt/vulkan/vulkan.hpp"
#include "test_data.hpp"
#include "vulkan_test_device.hpp"

using namespace llmrt;
using vulkan::buffer;
using vulkan::memory;

namespace {

constexpr double nmse_bound = 5e-4;

// k for a type: a few blocks, never a multiple of the chunk a subgroup stages (2 to 8 blocks
// on lavapipe, up to 32 on NVIDIA), and a longer one that gives every subgroup several chunks.
int64_t short_k(qtype t) { return block_size(t) == 32 ? 32 * 13 : 256 * 5; }
int64_t long_k(qtype t) { return block_size(t) == 32 ? 32 * 181 : 256 * 23; }

std::vector<qtype> weight_qtypes() {
    std::vector<qtype> types;
    weight_types::for_each([&](auto tag) { types.push_back(decltype(tag)::type::id); });
    return types;
}

template <class T>
buffer device_copy(const vulkan::context& ctx, const std::vector<T>& host) {
    buffer b(ctx, host.size() * sizeof(T));
    b.upload(host.data(), host.size() * sizeof(T));
    return b;
}

// W (rows × k of t), X (ncols columns), Y = W·X on the device; returns Y as read back, and the
// comparison with the reference.
struct mmvq_case {
    qtype type;
    int64_t rows, k, ncols;
    uint64_t seed;
};

struct mmvq_result {
    std::vector<float> y;
    testing::readback_report report;
    std::vector<float> ref;
};

mmvq_result run_mmvq(vulkan::context& ctx, vulkan::mmvq& kernels, const mmvq_case& c,
                     testing::distribution dist = testing::distribution::gaussian) {
    const std::vector<uint8_t> w = testing::random_weights(c.type, c.rows, c.k, c.seed);
    const std::vector<float> x = testing::generate(dist, c.k * c.ncols, c.seed + 1);
    mmvq_result r;
    r.ref = testing::reference_matvec(c.type, w.data(), x.data(), c.rows, c.k, c.ncols);
    buffer wd = device_copy(ctx, w), xd = device_copy(ctx, x);
    buffer scratch(ctx, vulkan::q8_1_activation_layout(c.k, c.ncols).bytes);
    buffer y(ctx, std::size_t(c.rows * c.ncols) * sizeof(float));
    testing::poison_device(y);
    kernels.run(c.type, {.rows = c.rows, .k = c.k, .ncols = c.ncols}, wd.span(), xd.span(), scratch.span(), y.span());
    r.report = testing::compare_device(y, r.ref);
    r.y = r.report.out;
    return r;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("a pipeline can be created for every weight type and 1 to 8 columns") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    for (qtype t : weight_qtypes())
        for (int64_t ncols = 1; ncols <= vulkan::mmvq_max_columns; ++ncols) {
            CAPTURE(name(t));
            CAPTURE(ncols);
            CHECK_NOTHROW(kernels.prepare(t, ncols));
        }
}

TEST_CASE("the quantize shader writes the bytes of quantize_row, ties rounding away from zero") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    const int64_t k = 32 * 9, ncols = 3;
    std::vector<float> x = testing::generate(testing::distribution::heavy_tailed, k * ncols, 7);
    // Block 0: amax 127 gives d = 1 and 1/d = 1, so the half-integers are exact ties.
    for (int i = 0; i < 32; ++i) x[std::size_t(i)] = float(i % 2 ? -1 : 1) * (float(i) + 0.5f);
    x[31] = 127.0f;
    for (int i = 32; i < 64; ++i) x[std::size_t(i)] = 0.0f;  // block 1: all zero, d = 0
    buffer xd = device_copy(ctx, x);
    const vulkan::q8_1_layout layout = vulkan::q8_1_activation_layout(k, ncols);
    buffer scratch(ctx, layout.bytes);
    scratch.fill(0xdeadbeefu);
    ctx.run([&](vk::CommandBuffer cmd) { kernels.record_quantize(cmd, {.k = k, .ncols = ncols}, xd.span(), scratch.span()); });
    const std::vector<uint8_t> got = scratch.download<uint8_t>(layout.bytes);

    for (int64_t c = 0; c < ncols; ++c) {
        std::vector<q8_1> want(std::size_t(k / 32));
        quantize_row(x.data() + c * k, want.data(), k);
        for (int64_t b = 0; b < k / 32; ++b) {
            CAPTURE(c);
            CAPTURE(b);
            const q8_1& q = want[std::size_t(b)];
            const std::size_t block = std::size_t(c * (k / 32) + b);
            uint16_t d, s;
            std::memcpy(&d, got.data() + layout.records_offset + 8 * block, 2);
            std::memcpy(&s, got.data() + layout.records_offset + 8 * block + 2, 2);
            CHECK(d == q.d);
            CHECK(s == q.s);
            CHECK(std::memcmp(got.data() + layout.qs_offset + 32 * block, q.qs, 32) == 0);
            int16_t sums[2];
            std::memcpy(sums, got.data() + layout.records_offset + 8 * block + 4, 4);
            int want_sums[2] = {0, 0};
            for (int i = 0; i < 32; ++i) want_sums[i / 16] += q.qs[i];
            CHECK(sums[0] == want_sums[0]);
            CHECK(sums[1] == want_sums[1]);
        }
    }
}

TEST_CASE("mmvq matches the CPU reference for every weight type and 1 to 8 columns") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    for (qtype t : weight_qtypes())
        for (int64_t ncols = 1; ncols <= vulkan::mmvq_max_columns; ++ncols) {
            const mmvq_case c{t, ncols % 2 ? 37 : 1, ncols <= 4 ? short_k(t) : long_k(t), ncols, uint64_t(1000 + ncols)};
            CAPTURE(name(t));
            CAPTURE(c.rows);
            CAPTURE(c.k);
            CAPTURE(ncols);
            const mmvq_result r = run_mmvq(ctx, kernels, c);
            CHECK_MESSAGE(r.report.complete(), r.report.describe(r.ref.data()));
            CHECK_MESSAGE(r.report.nmse < nmse_bound, r.report.describe(r.ref.data()));
        }
}

TEST_CASE("mmvq handles activation outliers, zero blocks and constant blocks") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    for (qtype t : weight_qtypes())
        for (testing::distribution d : testing::all_distributions) {
            CAPTURE(name(t));
            CAPTURE(testing::to_string(d));
            const mmvq_result r = run_mmvq(ctx, kernels, {t, 21, short_k(t), 3, 77}, d);
            CHECK_MESSAGE(r.report.complete(), r.report.describe(r.ref.data()));
            CHECK_MESSAGE(r.report.nmse < nmse_bound, r.report.describe(r.ref.data()));
        }
}

TEST_CASE("each column is bit-identical whatever the number of columns beside it") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    for (qtype t : weight_qtypes()) {
        CAPTURE(name(t));
        const int64_t rows = 45, k = long_k(t);
        const std::vector<uint8_t> w = testing::random_weights(t, rows, k, 5);
        const std::vector<float> x = testing::gaussian(k * 8, 6);
        buffer wd = device_copy(ctx, w), xd = device_copy(ctx, x);
        buffer scratch(ctx, vulkan::q8_1_activation_layout(k, 8).bytes);
        buffer y(ctx, std::size_t(rows * 8) * sizeof(float));
        std::vector<std::vector<float>> results;
        for (int64_t ncols = 1; ncols <= 8; ++ncols) {
            testing::poison_device(y);
            kernels.run(t, {.rows = rows, .k = k, .ncols = ncols}, wd.span(), xd.span(), scratch.span(), y.span());
            results.push_back(testing::copy_to_host(y, rows * ncols));
        }
        for (int64_t ncols = 1; ncols < 8; ++ncols)
            for (int64_t i = 0; i < rows * ncols; ++i)
                if (!same_bits(results[std::size_t(ncols - 1)][std::size_t(i)], results[7][std::size_t(i)])) {
                    FAIL_CHECK("column " << i / rows << " row " << i % rows << " with " << ncols << " columns: "
                                         << results[std::size_t(ncols - 1)][std::size_t(i)] << ", with 8: "
                                         << results[7][std::size_t(i)]);
                    break;
                }
    }
}

TEST_CASE("every work-group shape computes the same mat-vec, each column independent of the others") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    const uint32_t sg = ctx.info().subgroup_size;
    struct shape {
        uint32_t subgroups, k_split, slices_per_lane, rows, long_row_k_split = 0;
    };
    // The matrix has fewer rows than k, so long_row_k_split, where set, replaces k_split.
    for (qtype t : {qtype::q8_0, qtype::q4_K, qtype::q6_K, qtype::mxfp4})
        for (shape sh : {shape{4, 1, 1, 1}, shape{4, 2, 2, 3}, shape{2, 2, 1, 2}, shape{8, 4, 1, 1}, shape{4, 1, 1, 2, 4}}) {
            CAPTURE(name(t));
            CAPTURE(sh.subgroups);
            CAPTURE(sh.k_split);
            CAPTURE(sh.slices_per_lane);
            CAPTURE(sh.rows);
            CAPTURE(sh.long_row_k_split);
            vulkan::mmvq kernels(ctx);
            vulkan::mmvq_tuning tuning = kernels.tuning(t);
            tuning.workgroup_size = sh.subgroups * sg;
            tuning.k_split = sh.k_split;
            tuning.long_row_k_split = sh.long_row_k_split;
            tuning.slices_per_lane = sh.slices_per_lane;
            for (uint32_t& rows : tuning.rows) rows = sh.rows;
            tuning.rows[0] = 1;
            kernels.set_tuning(t, tuning);
            const int64_t rows = 41, k = long_k(t), ncols = 3;
            const std::vector<uint8_t> w = testing::random_weights(t, rows, k, 21);
            const std::vector<float> x = testing::gaussian(k * ncols, 22);
            const std::vector<float> ref = testing::reference_matvec(t, w.data(), x.data(), rows, k, ncols);
            buffer wd = device_copy(ctx, w), xd = device_copy(ctx, x);
            buffer scratch(ctx, vulkan::q8_1_activation_layout(k, ncols).bytes);
            buffer y(ctx, std::size_t(rows * ncols) * 4), y1(ctx, std::size_t(rows) * 4);
            testing::poison_device(y);
            kernels.run(t, {.rows = rows, .k = k, .ncols = ncols}, wd.span(), xd.span(), scratch.span(), y.span());
            const testing::readback_report report = testing::compare_device(y, ref);
            CHECK_MESSAGE(report.complete(), report.describe(ref.data()));
            CHECK_MESSAGE(report.nmse < nmse_bound, report.describe(ref.data()));
            kernels.run(t, {.rows = rows, .k = k, .ncols = 1}, wd.span(), xd.span(), scratch.span(), y1.span());
            const std::vector<float> alone = testing::copy_to_host(y1, rows);
            CHECK(std::memcmp(alone.data(), report.out.data(), std::size_t(rows) * 4) == 0);
        }
}

TEST_CASE("a work-group shape that needs more shared memory than the device has is refused") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    vulkan::mmvq_tuning tuning = kernels.tuning(qtype::q8_0);
    tuning.workgroup_size = std::min<uint32_t>(ctx.info().max_workgroup_size, 32 * tuning.subgroup_size);
    tuning.k_split = 1;
    tuning.slices_per_lane = 16;
    for (uint32_t& rows : tuning.rows) rows = 8;
    CHECK_THROWS_WITH_AS(kernels.set_tuning(qtype::q8_0, tuning), doctest::Contains("bytes of shared memory"), error);
}

TEST_CASE("reading aligned weights in place gives the staged result bit for bit, however many slices are unrolled") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    struct shape {
        uint32_t k_split, unroll;
    };
    for (qtype t : weight_qtypes()) {
        if (type_size(t) % 4 != 0) continue;  // only 4-byte aligned blocks can be read in place
        for (shape sh : {shape{1, 1}, shape{1, 3}, shape{2, 4}}) {
            CAPTURE(name(t));
            CAPTURE(sh.k_split);
            CAPTURE(sh.unroll);
            vulkan::mmvq staged(ctx), direct(ctx);
            vulkan::mmvq_tuning tuning = direct.tuning(t);
            tuning.workgroup_size = 4 * tuning.subgroup_size;
            tuning.k_split = sh.k_split;
            for (uint32_t& u : tuning.unroll) u = sh.unroll;
            tuning.staged = false;
            direct.set_tuning(t, tuning);
            tuning.staged = true;
            staged.set_tuning(t, tuning);
            for (int64_t ncols : {1, 3}) {
                const int64_t rows = 29, k = long_k(t);
                const std::vector<uint8_t> w = testing::random_weights(t, rows, k, 11);
                const std::vector<float> x = testing::gaussian(k * ncols, 12);
                buffer wd = device_copy(ctx, w), xd = device_copy(ctx, x);
                buffer scratch(ctx, vulkan::q8_1_activation_layout(k, ncols).bytes);
                buffer y1(ctx, std::size_t(rows * ncols) * 4), y2(ctx, std::size_t(rows * ncols) * 4);
                testing::poison_device(y2);
                staged.run(t, {.rows = rows, .k = k, .ncols = ncols}, wd.span(), xd.span(), scratch.span(), y1.span());
                direct.run(t, {.rows = rows, .k = k, .ncols = ncols}, wd.span(), xd.span(), scratch.span(), y2.span());
                const std::vector<float> a = testing::copy_to_host(y1, rows * ncols), b = testing::copy_to_host(y2, rows * ncols);
                CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
            }
        }
    }
    vulkan::mmvq direct(ctx);
    vulkan::mmvq_tuning unaligned = direct.tuning(qtype::q8_0);
    unaligned.staged = false;
    CHECK_THROWS_WITH_AS(direct.set_tuning(qtype::q8_0, unaligned), doctest::Contains("must be staged"), error);
    vulkan::mmvq_tuning too_much = direct.tuning(qtype::q4_K);
    too_much.unroll[2] = 9;
    CHECK_THROWS_WITH_AS(direct.set_tuning(qtype::q4_K, too_much), doctest::Contains("unroll 9"), error);
}

TEST_CASE("batched mmvq broadcasts W over the activation batches as grouped-query attention") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    for (qtype t : {qtype::q4_K, qtype::q8_0, qtype::q6_K}) {
        for (int64_t w_batch : {1, 2, 6}) {
            CAPTURE(name(t));
            CAPTURE(w_batch);
            const int64_t rows = 19, k = short_k(t), ncols = 3, batch = 6;
            // Strided: W matrices a little apart, X and Y columns padded.
            const int64_t row_bytes = int64_t(row_size(t, k));
            const int64_t w_batch_stride = rows * row_bytes + 64;
            const int64_t x_col_stride = k + 32, x_batch_stride = ncols * x_col_stride + 96;
            const int64_t y_col_stride = rows + 5, y_batch_stride = ncols * y_col_stride + 7;
            std::vector<uint8_t> w(std::size_t(w_batch * w_batch_stride));
            for (int64_t m = 0; m < w_batch; ++m) {
                const auto matrix = testing::random_weights(t, rows, k, uint64_t(40 + m));
                std::memcpy(w.data() + m * w_batch_stride, matrix.data(), matrix.size());
            }
            const std::vector<float> x = testing::gaussian(batch * x_batch_stride, 41);
            buffer wd = device_copy(ctx, w), xd = device_copy(ctx, x);
            buffer scratch(ctx, vulkan::q8_1_activation_layout(k, ncols * batch).bytes);
            buffer y(ctx, std::size_t(batch * y_batch_stride) * sizeof(float));
            testing::poison_device(y);
            const vulkan::mmvq_shape shape{.rows = rows, .k = k, .ncols = ncols, .batch = batch, .w_batch = w_batch,
                                           .w_batch_stride = w_batch_stride, .x_col_stride = x_col_stride,
                                           .x_batch_stride = x_batch_stride, .y_col_stride = y_col_stride,
                                           .y_batch_stride = y_batch_stride};
            kernels.run(t, shape, wd.span(), xd.span(), scratch.span(), y.span());
            const std::vector<float> got = testing::copy_to_host(y, batch * y_batch_stride);
            for (int64_t b = 0; b < batch; ++b) {
                CAPTURE(b);
                const uint8_t* wb = w.data() + (b / (batch / w_batch)) * w_batch_stride;
                std::vector<float> xb(std::size_t(k * ncols)), yb(std::size_t(rows * ncols));
                for (int64_t c = 0; c < ncols; ++c) {
                    std::memcpy(xb.data() + c * k, x.data() + b * x_batch_stride + c * x_col_stride, std::size_t(k) * 4);
                    std::memcpy(yb.data() + c * rows, got.data() + b * y_batch_stride + c * y_col_stride, std::size_t(rows) * 4);
                }
                const std::vector<float> ref = testing::reference_matvec(t, wb, xb.data(), rows, k, ncols);
                const testing::error_report report = testing::compare(yb.data(), ref.data(), rows * ncols);
                CHECK_MESSAGE(report.all_finite_match(), report.describe(yb.data(), ref.data()));
                CHECK_MESSAGE(report.nmse < nmse_bound, report.describe(yb.data(), ref.data()));
            }
            // Y's padding between columns and batches stays untouched.
            int64_t padding_written = 0;
            for (int64_t i = 0; i < batch * y_batch_stride; ++i) {
                const int64_t in_batch = i % y_batch_stride, col = in_batch / y_col_stride, row = in_batch % y_col_stride;
                if ((col >= ncols || row >= rows) && !testing::is_poison(got[std::size_t(i)])) ++padding_written;
            }
            CHECK(padding_written == 0);
        }
    }
}

TEST_CASE("mmvq_id multiplies each activation column by the W slice its expert id names") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    for (qtype t : weight_qtypes())
        for (int64_t x_per_token : {1, 2}) {
            CAPTURE(name(t));
            CAPTURE(x_per_token);
            const int64_t rows = 23, k = short_k(t), experts = 5, tokens = 3, slots = 2;
            const int64_t expert_bytes = rows * int64_t(row_size(t, k));
            std::vector<uint8_t> w;
            for (int64_t e = 0; e < experts; ++e) {
                const auto m = testing::random_weights(t, rows, k, uint64_t(60 + e));
                w.insert(w.end(), m.begin(), m.end());
            }
            const std::vector<int32_t> ids = {4, 1, 0, 0, 2, 4};  // [token][slot]
            const std::vector<float> x = testing::gaussian(tokens * x_per_token * k, 61);
            buffer wd = device_copy(ctx, w), xd = device_copy(ctx, x), idd = device_copy(ctx, ids);
            buffer scratch(ctx, vulkan::q8_1_activation_layout(k, tokens * x_per_token).bytes);
            buffer y(ctx, std::size_t(tokens * slots * rows) * sizeof(float));
            testing::poison_device(y);
            const vulkan::mmvq_id_shape shape{.rows = rows, .k = k, .experts = experts, .tokens = tokens, .slots = slots,
                                              .x_per_token = x_per_token};
            kernels.run_id(t, shape, wd.span(), idd.span(), xd.span(), scratch.span(), y.span());
            std::vector<float> ref;
            for (int64_t tok = 0; tok < tokens; ++tok)
                for (int64_t s = 0; s < slots; ++s) {
                    const float* xc = x.data() + (tok * x_per_token + (x_per_token > 1 ? s : 0)) * k;
                    const auto col = testing::reference_matvec(t, w.data() + ids[std::size_t(tok * slots + s)] * expert_bytes,
                                                               xc, rows, k, 1);
                    ref.insert(ref.end(), col.begin(), col.end());
                }
            const testing::readback_report report = testing::compare_device(y, ref);
            CHECK_MESSAGE(report.complete(), report.describe(ref.data()));
            CHECK_MESSAGE(report.nmse < nmse_bound, report.describe(ref.data()));

            // The same column through plain mmvq on the expert's matrix gives the same bits.
            const int64_t e = ids[3];  // token 1, slot 1
            const std::vector<uint8_t> expert(w.begin() + e * expert_bytes, w.begin() + (e + 1) * expert_bytes);
            buffer we = device_copy(ctx, expert), y1(ctx, std::size_t(rows) * sizeof(float));
            kernels.run(t, {.rows = rows, .k = k}, we.span(), xd.span(std::size_t((x_per_token + (x_per_token > 1 ? 1 : 0)) * k) * 4),
                        scratch.span(), y1.span());
            const std::vector<float> plain = testing::copy_to_host(y1, rows);
            int64_t differ = 0;
            for (int64_t r = 0; r < rows; ++r) differ += !same_bits(plain[std::size_t(r)], report.out[std::size_t(3 * rows + r)]);
            CHECK(differ == 0);
        }
}

TEST_CASE("an expert id outside the W slices gives a NaN column and reads nothing") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    const qtype t = qtype::q4_K;
    const int64_t rows = 9, k = 256, experts = 2;
    const std::vector<uint8_t> w = testing::random_weights(t, rows * experts, k, 3);
    const std::vector<int32_t> ids = {1, -1, 2, 0};
    const std::vector<float> x = testing::gaussian(4 * k, 4);
    buffer wd = device_copy(ctx, w), xd = device_copy(ctx, x), idd = device_copy(ctx, ids);
    buffer scratch(ctx, vulkan::q8_1_activation_layout(k, 4).bytes);
    buffer y(ctx, std::size_t(4 * rows) * sizeof(float));
    testing::poison_device(y);
    kernels.run_id(t, {.rows = rows, .k = k, .experts = experts, .tokens = 4, .slots = 1}, wd.span(), idd.span(), xd.span(),
                   scratch.span(), y.span());
    const std::vector<float> got = testing::copy_to_host(y, 4 * rows);
    for (int64_t r = 0; r < rows; ++r) {
        CHECK(std::isfinite(got[std::size_t(r)]));
        CHECK(std::isnan(got[std::size_t(rows + r)]));
        CHECK(std::isnan(got[std::size_t(2 * rows + r)]));
        CHECK(std::isfinite(got[std::size_t(3 * rows + r)]));
        CHECK(!testing::is_poison(got[std::size_t(rows + r)]));
    }
}

TEST_CASE("recording into the caller's command buffer gives what run gives") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    const qtype t = qtype::q5_K;
    const int64_t rows = 50, k = 512, ncols = 2;
    const std::vector<uint8_t> w = testing::random_weights(t, rows, k, 8);
    const std::vector<float> x = testing::gaussian(k * ncols, 9);
    buffer wd = device_copy(ctx, w), xd = device_copy(ctx, x);
    buffer scratch(ctx, vulkan::q8_1_activation_layout(k, ncols).bytes);
    buffer y1(ctx, std::size_t(rows * ncols) * 4), y2(ctx, std::size_t(rows * ncols) * 4, memory::host_visible);
    kernels.run(t, {.rows = rows, .k = k, .ncols = ncols}, wd.span(), xd.span(), scratch.span(), y1.span());

    vk::raii::CommandBuffers cmds(ctx.device(), vk::CommandBufferAllocateInfo(ctx.command_pool(), vk::CommandBufferLevel::ePrimary, 1));
    vk::raii::CommandBuffer& cmd = cmds.front();
    cmd.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
    kernels.record(*cmd, t, {.rows = rows, .k = k, .ncols = ncols}, wd.span(), xd.span(), scratch.span(), y2.span());
    cmd.end();
    ctx.submit_and_wait(*cmd);
    const std::vector<float> a = testing::copy_to_host(y1, rows * ncols), b = testing::copy_to_host(y2, rows * ncols);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

TEST_CASE("bad shapes and buffers raise llmrt::error naming the value, before anything is recorded") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    vulkan::mmvq kernels(ctx);
    const qtype t = qtype::q4_K;
    const int64_t rows = 8, k = 512;
    buffer w(ctx, row_size(t, k) * rows), x(ctx, std::size_t(k) * 4 * 8), scratch(ctx, vulkan::q8_1_activation_layout(k, 8).bytes),
        y(ctx, std::size_t(rows) * 4 * 8);
    auto attempt = [&](vulkan::mmvq_shape s, vulkan::device_span ws) {
        ctx.run([&](vk::CommandBuffer cmd) { kernels.record(cmd, t, s, ws, x.span(), scratch.span(), y.span()); });
    };
    CHECK_THROWS_WITH_AS(attempt({.rows = rows, .k = k, .ncols = 9}, w.span()), doctest::Contains("ncols = 9"), error);
    CHECK_THROWS_WITH_AS(attempt({.rows = rows, .k = k, .ncols = 0}, w.span()), doctest::Contains("ncols = 0"), error);
    CHECK_THROWS_WITH_AS(attempt({.rows = rows, .k = 300}, w.span()), doctest::Contains("k = 300"), error);
    CHECK_THROWS_WITH_AS(attempt({.rows = rows, .k = k, .batch = 3, .w_batch = 2}, w.span()), doctest::Contains("2 matrices"), error);
    CHECK_THROWS_WITH_AS(attempt({.rows = rows * 2, .k = k}, w.span()), doctest::Contains("W holds"), error);
    CHECK_THROWS_WITH_AS(attempt({.rows = rows, .k = k}, w.span(16, w.size() - 32)), doctest::Contains("W holds"), error);
    CHECK_THROWS_WITH_AS(attempt({.rows = rows, .k = k}, {w.address() + 4, w.size() - 16}), doctest::Contains("aligned"), error);
    CHECK_THROWS_WITH_AS(attempt({.rows = rows, .k = k, .y_col_stride = 3}, w.span()), doctest::Contains("Y strides"), error);
    CHECK_THROWS_WITH_AS(attempt({.rows = rows, .k = k, .w_row_stride = 100}, w.span()), doctest::Contains("w_row_stride = 100"), error);
    CHECK_THROWS_AS(kernels.run(qtype::f32, {.rows = rows, .k = k}, w.span(), x.span(), scratch.span(), y.span()), error);
    CHECK_THROWS_WITH_AS(kernels.run_id(t, {.rows = rows, .k = k, .slots = 2, .x_per_token = 3}, w.span(), y.span(), x.span(),
                                        scratch.span(), y.span()),
                         doctest::Contains("x_per_token = 3"), error);
}

TEST_CASE("a context asked for a device no one has names the devices there are") {
    LLMRT_VULKAN_TEST_DEVICE(ctx);
    (void)ctx;
    CHECK_THROWS_WITH_AS(vulkan::context({.device = "no such device 1234"}), doctest::Contains("no such device 1234"), error);
    CHECK_THROWS_WITH_AS(vulkan::context({.device = "999"}), doctest::Contains("index 999"), error);
    const std::vector<vulkan::device_info> devices = vulkan::list_devices();
    CHECK(!devices.empty());
    bool usable = false;
    for (const auto& d : devices) usable = usable || d.missing.empty();
    CHECK(usable);
}
