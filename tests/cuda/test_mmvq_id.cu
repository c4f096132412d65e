// mmvq_id_prepared's fused forms on the device, for every weight type, rows not a multiple of the
// 16-row tile, an invalid id among the valid ones, Y poisoned first: two products' experts side
// by side in one launch with their biases (an experts step's gate and up), and the epilogue that
// adds a token's weighted slots (the experts' down with its weighted_sum; and with the norm step
// after it chained), and the one that finishes the swiglu of gate and up side by side (the experts'
// gate/up carrying it). Each result against the unfused launches it replaces: mmvq_id per product,
// add_id's float add, swiglu_round, weighted_sum's order of float operations, add_rms_norm_mul,
// bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "llmrt/cuda/mmvq.cuh"
#include "llmrt/cuda/ops/norm.cuh"
#include "support.cuh"

using namespace llmrt_cuda_test;
namespace cuda = llmrt::cuda;
using llmrt::testing::distribution;

namespace {

constexpr int64_t rows = 33, n_experts = 5, n_tokens = 3, n_used = 2;
const std::vector<int32_t> ids = {4, 0, 2, 2, 1, n_experts};  // the last one is invalid

// The records of x (n_tokens columns of k) as mmvq_id quantizes them.
struct prepared_x {
    device_buffer d_x, scratch;
    cuda::prepared_activations records;
    prepared_x(const std::vector<float>& x, int64_t k, int64_t x_cols)
        : d_x(x.size() * sizeof(float)),
          scratch(cuda::mmvq_id_scratch_bytes(cuda::input_columns{nullptr, k, x_cols, 0, n_tokens})) {
        d_x.upload(x);
        const cuda::input_columns xv{d_x.as<const float>(), k, x_cols, 0, n_tokens};
        records = cuda::quantize_id_activations(xv, scratch.ptr, scratch.bytes, nullptr);
    }
};

// Two products' experts side by side (gate's, then up's: 2 · n_experts matrices of `rows`, as
// the CUDA backend uploads them), their biases, one activation column per token and the ids.
template <class B>
struct side_by_side {
    int64_t rows, k = test_ks<B>()[1];
    std::vector<uint8_t> w;
    std::vector<float> bias, x;
    device_buffer d_w, d_ids, d_bias;
    prepared_x px;
    cuda::expert_ids_view iv;
    cuda::qmatrix_view both;
    side_by_side(int64_t rows_, uint64_t seed)
        : rows(rows_),
          w(random_blocks<B>(2 * n_experts * rows_ * (k / B::block_size), seed)),
          bias(llmrt::testing::generate(distribution::gaussian, 2 * n_experts * rows_, seed + 1)),
          x(llmrt::testing::generate(distribution::heavy_tailed, n_tokens * k, seed + 2)),
          d_w(w.size()),
          d_ids(ids.size() * sizeof(int32_t)),
          d_bias(bias.size() * sizeof(float)),
          px(x, k, 1) {
        d_w.upload(w);
        d_ids.upload(ids);
        d_bias.upload(bias);
        iv = cuda::expert_ids_view{d_ids.as<const int32_t>(), n_tokens, n_used};
        both.type = B::id;
        both.data = d_w.ptr;
        both.rows = rows;
        both.k = k;
        both.batch2 = 2 * n_experts;
    }
};

// One product's experts (the experts' down: `rows` each), one activation column per slot, the
// slots' weights, Y and the weighted sums, counters for the row tiles and one per token (the norm
// a weighted sum may carry), zero; weighted_sum() is the epilogue that adds the slots into out.
template <class B>
struct down_experts {
    int64_t rows, k = test_ks<B>()[1], tiles;
    std::vector<uint8_t> w;
    std::vector<float> x, weights;
    device_buffer d_w, d_ids, d_weights;
    prepared_x px;
    cuda::expert_ids_view iv;
    cuda::qmatrix_view experts;
    device_buffer d_y, d_out, d_counters;
    cuda::output_columns yv;
    down_experts(int64_t rows_, const std::vector<int32_t>& id_list, uint64_t seed)
        : rows(rows_),
          tiles((rows_ + 15) / 16),
          w(random_blocks<B>(n_experts * rows_ * (k / B::block_size), seed)),
          x(llmrt::testing::generate(distribution::heavy_tailed, n_tokens * n_used * k, seed + 1)),
          weights(llmrt::testing::generate(distribution::gaussian, n_tokens * n_used, seed + 2)),
          d_w(w.size()),
          d_ids(id_list.size() * sizeof(int32_t)),
          d_weights(weights.size() * sizeof(float)),
          px(x, k, n_used),  // one column per slot, as the down projection reads
          d_y(std::size_t(n_tokens * n_used * rows_) * sizeof(float)),
          d_out(std::size_t(n_tokens * rows_) * sizeof(float)),
          d_counters(std::size_t((tiles + 1) * n_tokens) * sizeof(int32_t)) {
        d_w.upload(w);
        d_ids.upload(id_list);
        d_weights.upload(weights);
        iv = cuda::expert_ids_view{d_ids.as<const int32_t>(), n_tokens, n_used};
        experts.type = B::id;
        experts.data = d_w.ptr;
        experts.rows = rows;
        experts.k = k;
        experts.batch2 = n_experts;
        check_cuda(cudaMemset(d_counters.ptr, 0, d_counters.bytes), "cudaMemset");
        yv = cuda::output_columns{d_y.as<float>(), rows, n_used, 0, n_tokens};
    }
    cuda::mmvq_epilogue weighted_sum() const {
        cuda::mmvq_epilogue e;
        e.kind = cuda::mmvq_finish::weighted_sum;
        e.weights = d_weights.as<const float>();
        e.out = d_out.as<float>();
        e.out_stride = rows;
        e.slots = int32_t(n_used);
        e.counters = d_counters.as<int32_t>();
        return e;
    }
};

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("two products side by side with biases give each slot its expert's product plus its bias", B,
                          two_products_side_by_side) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const side_by_side<B> f(rows, 81);
    const int64_t k = f.k, row_bytes = int64_t(llmrt::row_size(B::id, k));
    const std::vector<float>& bias = f.bias;
    const auto& [px, iv, both] = std::tie(f.px, f.iv, f.both);
    const device_buffer& d_w = f.d_w;
    const device_buffer& d_bias = f.d_bias;
    const int64_t count = n_tokens * 2 * n_used * rows;
    device_buffer d_y(std::size_t(count) * sizeof(float));
    const cuda::output_columns yv{d_y.as<float>(), rows, 2 * n_used, 0, n_tokens};
    llmrt::testing::poison_device(yv.data, count);
    cuda::mmvq_id_prepared(both, px.records, iv, yv, nullptr, {}, 2, d_bias.as<const float>());
    check_cuda(cudaDeviceSynchronize(), "mmvq_id_prepared");
    const std::vector<float> y = d_y.download<float>(std::size_t(count));
    REQUIRE(llmrt::testing::unwritten(y.data(), count).empty());

    // Each product alone (mmvq_id on its half of the experts), then add_id's float add.
    for (int64_t half = 0; half < 2; ++half) {
        CAPTURE(half);
        cuda::qmatrix_view one = both;
        one.data = static_cast<const uint8_t*>(d_w.ptr) + half * n_experts * rows * row_bytes;
        one.batch2 = n_experts;
        device_buffer d_alone(std::size_t(n_tokens * n_used * rows) * sizeof(float));
        const cuda::output_columns av{d_alone.as<float>(), rows, n_used, 0, n_tokens};
        cuda::mmvq_id_prepared(one, px.records, iv, av, nullptr);
        const std::vector<float> alone = d_alone.download<float>(std::size_t(n_tokens * n_used * rows));
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int64_t s = 0; s < n_used; ++s) {
                const int32_t id = ids[std::size_t(t * n_used + s)];
                const float* got = y.data() + (t * 2 * n_used + half * n_used + s) * rows;
                for (int64_t r = 0; r < rows; ++r) {
                    CAPTURE(t);
                    CAPTURE(s);
                    CAPTURE(r);
                    if (id >= n_experts) {
                        CHECK(std::isnan(got[r]));
                        continue;
                    }
                    const float want = alone[std::size_t((t * n_used + s) * rows + r)] + bias[std::size_t((half * n_experts + id) * rows + r)];
                    CHECK(bits_equal(&got[r], &want, 1));
                }
            }
    }
}
TEST_CASE_TEMPLATE_APPLY(two_products_side_by_side, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("the weighted-sum epilogue adds each token's slots in slot order, and leaves its counters at zero", B,
                          weighted_sum_epilogue) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    const down_experts<B> f(rows, ids, 91);
    const auto& [weights, px, iv, experts, yv, tiles] = std::tie(f.weights, f.px, f.iv, f.experts, f.yv, f.tiles);
    const device_buffer& d_y = f.d_y;
    const device_buffer& d_out = f.d_out;
    const device_buffer& d_counters = f.d_counters;
    const cuda::mmvq_epilogue e = f.weighted_sum();
    for (int run = 0; run < 2; ++run) {  // the second run finds the counters the first left
        CAPTURE(run);
        llmrt::testing::poison_device(yv.data, n_tokens * n_used * rows);
        llmrt::testing::poison_device(d_out.as<float>(), n_tokens * rows);
        cuda::mmvq_id_prepared(experts, px.records, iv, yv, nullptr, {}, 1, nullptr, e);
        check_cuda(cudaDeviceSynchronize(), "mmvq_id_prepared");
        const std::vector<float> y = d_y.download<float>(std::size_t(n_tokens * n_used * rows));
        const std::vector<float> out = d_out.download<float>(std::size_t(n_tokens * rows));
        REQUIRE(llmrt::testing::unwritten(out.data(), int64_t(out.size())).empty());
        for (int64_t t = 0; t < n_tokens; ++t)
            for (int64_t r = 0; r < rows; ++r) {
                // weighted_sum's order: ((w₀y₀ + w₁y₁) + ...), each product rounded to float
                float want = weights[std::size_t(t * n_used)] * y[std::size_t(t * n_used * rows + r)];
                for (int64_t s = 1; s < n_used; ++s)
                    want = want + weights[std::size_t(t * n_used + s)] * y[std::size_t((t * n_used + s) * rows + r)];
                const float got = out[std::size_t(t * rows + r)];
                CAPTURE(t);
                CAPTURE(r);
                if (std::isnan(want)) CHECK(std::isnan(got));  // the token with the invalid id
                else CHECK(bits_equal(&got, &want, 1));
            }
        const std::vector<int32_t> counters = d_counters.download<int32_t>(std::size_t(tiles * n_tokens));
        for (int32_t c : counters) CHECK(c == 0);
    }
}
TEST_CASE_TEMPLATE_APPLY(weighted_sum_epilogue, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("the swiglu-slots epilogue gives each slot the swiglu step's values and records, and leaves its counters at zero",
                          B, swiglu_slots_epilogue) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    // Whole 32-row blocks (the epilogue's unit), an odd number of them: 3 blocks of 6 row tiles.
    constexpr int64_t slot_rows = 96;
    const side_by_side<B> f(slot_rows, 101);
    const auto& [px, iv, both] = std::tie(f.px, f.iv, f.both);
    const device_buffer& d_bias = f.d_bias;
    const int64_t stack = 2 * n_used * slot_rows, h_len = n_used * slot_rows;  // a token's column of each
    const std::size_t record_bytes = std::size_t(cuda::activation_batch_bytes(slot_rows, 1) * n_tokens * n_used);
    device_buffer d_y(std::size_t(n_tokens * stack) * sizeof(float)), d_h(std::size_t(n_tokens * h_len) * sizeof(float)),
        d_records(record_bytes), d_want_h(d_h.bytes), d_want_records(record_bytes),
        d_counters(std::size_t(n_tokens * h_len / 32) * sizeof(int32_t));
    check_cuda(cudaMemset(d_counters.ptr, 0, d_counters.bytes), "cudaMemset");
    const cuda::output_columns yv{d_y.as<float>(), slot_rows, 2 * n_used, 0, n_tokens};
    for (const bool oai : {false, true}) {
        const cuda::ops::gated_activation act{oai, oai ? 1.702f : 0.0f, oai ? 7.0f : 0.0f};
        cuda::mmvq_epilogue e;
        e.kind = cuda::mmvq_finish::swiglu_slots;
        e.half = int32_t(slot_rows);
        e.slots = int32_t(n_used);
        e.h = d_h.as<float>();
        e.out_stride = h_len;
        e.records = static_cast<uint8_t*>(d_records.ptr);
        e.counters = d_counters.as<int32_t>();
        e.oai = oai ? 1 : 0;
        e.alpha = act.alpha;
        e.limit = act.limit;
        for (int run = 0; run < 2; ++run) {  // the second run finds the counters the first left
            CAPTURE(oai);
            CAPTURE(run);
            llmrt::testing::poison_device(yv.data, n_tokens * stack);
            llmrt::testing::poison_device(e.h, n_tokens * h_len);
            check_cuda(cudaMemset(d_records.ptr, 0xA5, record_bytes), "cudaMemset");
            cuda::mmvq_id_prepared(both, px.records, iv, yv, nullptr, {}, 2, d_bias.as<const float>(), e);
            check_cuda(cudaDeviceSynchronize(), "mmvq_id_prepared");
            // The swiglu step on the stack the launch stored: gate's slots, then up's, per token.
            cuda::ops::swiglu_round(d_y.as<const float>(), stack, d_y.as<const float>() + h_len, stack, d_want_h.as<float>(),
                                    d_want_records.ptr, h_len, n_tokens, nullptr, {}, act, 1);
            check_cuda(cudaDeviceSynchronize(), "swiglu_round");
            const std::vector<float> h = d_h.download<float>(std::size_t(n_tokens * h_len));
            const std::vector<float> want_h = d_want_h.download<float>(std::size_t(n_tokens * h_len));
            REQUIRE(llmrt::testing::unwritten(h.data(), int64_t(h.size())).empty());
            CHECK(bits_equal(h.data(), want_h.data(), h.size()));
            const std::vector<uint8_t> records = d_records.download<uint8_t>(record_bytes);
            const std::vector<uint8_t> want_records = d_want_records.download<uint8_t>(record_bytes);
            CHECK(records == want_records);
            const std::vector<int32_t> counters = d_counters.download<int32_t>(std::size_t(n_tokens * h_len / 32));
            for (int32_t c : counters) CHECK(c == 0);
        }
    }
}
TEST_CASE_TEMPLATE_APPLY(swiglu_slots_epilogue, llmrt_cuda_test::weight_type_tuple);

TEST_CASE_TEMPLATE_DEFINE("the weighted-sum epilogue with the norm after it chained gives the bits of weighted_sum, then the norm step",
                          B, weighted_sum_norm_epilogue) {
    LLMRT_CUDA_TEST_NEEDS_DEVICE();
    constexpr int64_t out_rows = 96;  // the norm's columns: whole 32-value blocks
    const std::vector<int32_t> valid_ids = {4, 0, 2, 2, 1, 3};
    const down_experts<B> f(out_rows, valid_ids, 121);
    const auto& [px, iv, experts, yv, tiles] = std::tie(f.px, f.iv, f.experts, f.yv, f.tiles);
    const device_buffer& d_out = f.d_out;
    const device_buffer& d_counters = f.d_counters;
    const std::vector<float> residual = llmrt::testing::generate(distribution::gaussian, n_tokens * out_rows, 124);
    const std::vector<float> norm_w = llmrt::testing::generate(distribution::gaussian, out_rows, 125);
    device_buffer d_residual(residual.size() * sizeof(float)), d_norm_w(norm_w.size() * sizeof(float));
    d_residual.upload(residual);
    d_norm_w.upload(norm_w);
    const auto n = std::size_t(n_tokens * out_rows);
    const std::size_t record_bytes = std::size_t(cuda::activation_batch_bytes(out_rows, 1) * n_tokens);
    device_buffer d_sum(n * sizeof(float)), d_norm(n * sizeof(float)), d_product(n * sizeof(float)),
        d_sum_ref(n * sizeof(float)), d_norm_ref(n * sizeof(float)), d_product_ref(n * sizeof(float)), d_records(record_bytes),
        d_records_ref(record_bytes);
    cuda::mmvq_epilogue e = f.weighted_sum();
    e.length = int32_t(out_rows);
    e.addend = d_residual.as<const float>();
    e.addend_stride = out_rows;
    e.sum = d_sum.as<float>();
    e.norm = d_norm.as<float>();
    e.product = d_product.as<float>();
    e.weight = d_norm_w.as<const float>();
    e.eps = 1e-6f;
    e.records = static_cast<uint8_t*>(d_records.ptr);
    e.chunk_cols = 8;  // the next matvec's chunks of 8 tokens
    e.cols = n_tokens;
    for (int run = 0; run < 2; ++run) {  // the second run finds the counters the first left
        CAPTURE(run);
        for (float* p : {d_out.as<float>(), d_sum.as<float>(), d_norm.as<float>(), d_product.as<float>()})
            llmrt::testing::poison_device(p, int64_t(n));
        check_cuda(cudaMemset(d_records.ptr, 0xA5, record_bytes), "cudaMemset");
        cuda::mmvq_id_prepared(experts, px.records, iv, yv, nullptr, {}, 1, nullptr, e);
        check_cuda(cudaDeviceSynchronize(), "mmvq_id_prepared");
        // The norm step on its own, on the weighted sums the launch stored.
        cuda::ops::add_rms_norm_mul(d_residual.as<const float>(), d_out.as<const float>(), d_sum_ref.as<float>(),
                                    d_norm_ref.as<float>(), d_norm_w.as<const float>(), d_product_ref.as<float>(), out_rows,
                                    n_tokens, e.eps, nullptr, {}, d_records_ref.ptr, true, 8);
        check_cuda(cudaDeviceSynchronize(), "add_rms_norm_mul");
        for (const auto& [got, want] : {std::pair{&d_sum, &d_sum_ref}, std::pair{&d_norm, &d_norm_ref},
                                         std::pair{&d_product, &d_product_ref}}) {
            const std::vector<float> g = got->template download<float>(n), r = want->template download<float>(n);
            REQUIRE(llmrt::testing::unwritten(g.data(), int64_t(n)).empty());
            CHECK(bits_equal(g.data(), r.data(), n));
        }
        CHECK(d_records.download<uint8_t>(record_bytes) == d_records_ref.download<uint8_t>(record_bytes));
        for (int32_t c : d_counters.download<int32_t>(std::size_t((tiles + 1) * n_tokens))) CHECK(c == 0);
    }
}
TEST_CASE_TEMPLATE_APPLY(weighted_sum_norm_epilogue, llmrt_cuda_test::weight_type_tuple);
