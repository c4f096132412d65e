// The CPU reference ops of the graph executor against naive formulas evaluated in double.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/cpu/ops.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/llmrt.hpp>
#include <llmrt/testing/generate.hpp>

using namespace llmrt;

namespace {

using testing::gaussian;

// Naive rope of one head in double: pairs per `order`, angle pos · base^(−2i/n_rot).
std::vector<double> naive_rope_head(const float* x, int head_dim, int n_rot, double base, int pos,
                                    graph::rope_order order) {
    std::vector<double> y(x, x + head_dim);
    for (int i = 0; i < n_rot / 2; ++i) {
        const double theta = pos * std::pow(base, -2.0 * i / n_rot);
        const int a = order == graph::rope_order::normal ? 2 * i : i;
        const int b = order == graph::rope_order::normal ? 2 * i + 1 : i + n_rot / 2;
        y[std::size_t(a)] = x[a] * std::cos(theta) - x[b] * std::sin(theta);
        y[std::size_t(b)] = x[a] * std::sin(theta) + x[b] * std::cos(theta);
    }
    return y;
}

void check_rope(graph::rope_order order) {
    const graph::rope_params p{3, 16, 12, 10000.0f, order};
    const int cols = 5;
    const std::vector<int32_t> pos{0, 1, 7, 100, 511};
    const auto x = gaussian(std::size_t(48 * cols), 11);
    std::vector<float> y(x.size());
    cpu::rope(x.data(), y.data(), pos.data(), cols, p);
    for (int c = 0; c < cols; ++c)
        for (int h = 0; h < p.n_head; ++h) {
            const std::size_t at = std::size_t(c * 48 + h * 16);
            const auto ref = naive_rope_head(x.data() + at, 16, 12, 10000.0, pos[std::size_t(c)], order);
            for (int i = 0; i < 16; ++i) {
                CAPTURE(c);
                CAPTURE(h);
                CAPTURE(i);
                CHECK(double(y[at + std::size_t(i)]) == doctest::Approx(ref[std::size_t(i)]).epsilon(1e-4).scale(1.0));
                if (i >= 12) CHECK(y[at + std::size_t(i)] == x[at + std::size_t(i)]);
            }
        }
}

}  // namespace

TEST_CASE("rms_norm divides each column by the root of its mean square plus eps") {
    const int n = 96, cols = 3;
    const float eps = 1e-5f;
    const auto x = gaussian(std::size_t(n * cols), 1, 3.0f);
    std::vector<float> y(x.size());
    cpu::rms_norm(x.data(), y.data(), n, cols, eps);
    for (int c = 0; c < cols; ++c) {
        double ss = 0;
        for (int i = 0; i < n; ++i) ss += double(x[std::size_t(c * n + i)]) * x[std::size_t(c * n + i)];
        const double scale = 1.0 / std::sqrt(ss / n + eps);
        for (int i = 0; i < n; ++i)
            CHECK(double(y[std::size_t(c * n + i)]) == doctest::Approx(x[std::size_t(c * n + i)] * scale).epsilon(1e-6));
    }
}

TEST_CASE("rope in normal order rotates adjacent pairs by pos times base^(-2i/n_rot)") {
    check_rope(graph::rope_order::normal);
}

TEST_CASE("rope in NeoX order rotates element i with element i + n_rot/2") { check_rope(graph::rope_order::neox); }

TEST_CASE("rope at position 0 leaves every element unchanged") {
    for (auto order : {graph::rope_order::normal, graph::rope_order::neox}) {
        const auto x = gaussian(64, 3);
        std::vector<float> y(64);
        const int32_t pos = 0;
        cpu::rope(x.data(), y.data(), &pos, 1, graph::rope_params{4, 16, 16, 10000.0f, order});
        CHECK(std::memcmp(x.data(), y.data(), 64 * sizeof(float)) == 0);
    }
}

TEST_CASE("rope with linear scaling and frequency factors turns pair i by pos·base^(-2i/n_rot)/factor_i·freq_scale") {
    for (auto order : {graph::rope_order::normal, graph::rope_order::neox}) {
        CAPTURE(int(order));
        graph::rope_params p{2, 16, 12, 10000.0f, order, 0.25f};
        const std::vector<float> factors{1.0f, 1.5f, 2.0f, 4.0f, 8.0f, 32.0f};
        const std::vector<int32_t> pos{0, 3, 1000};
        const auto x = gaussian(std::size_t(32 * 3), 12);
        std::vector<float> y(x.size());
        cpu::rope(x.data(), y.data(), pos.data(), 3, p, factors.data());
        for (int c = 0; c < 3; ++c)
            for (int h = 0; h < 2; ++h) {
                const float* xh = x.data() + c * 32 + h * 16;
                for (int i = 0; i < 6; ++i) {
                    const double theta = pos[std::size_t(c)] * std::pow(10000.0, -2.0 * i / 12) / factors[std::size_t(i)] * 0.25;
                    const int a = order == graph::rope_order::normal ? 2 * i : i;
                    const int b = order == graph::rope_order::normal ? 2 * i + 1 : i + 6;
                    CHECK(double(y[std::size_t(c * 32 + h * 16 + a)]) ==
                          doctest::Approx(xh[a] * std::cos(theta) - xh[b] * std::sin(theta)).epsilon(1e-4).scale(1.0));
                    CHECK(double(y[std::size_t(c * 32 + h * 16 + b)]) ==
                          doctest::Approx(xh[a] * std::sin(theta) + xh[b] * std::cos(theta)).epsilon(1e-4).scale(1.0));
                }
            }
        // freq_scale 1 and factors of 1 give the bits of plain rope.
        p.freq_scale = 1.0f;
        const std::vector<float> ones(6, 1.0f);
        std::vector<float> plain(x.size()), with_ones(x.size());
        cpu::rope(x.data(), plain.data(), pos.data(), 3, p);
        cpu::rope(x.data(), with_ones.data(), pos.data(), 3, p, ones.data());
        CHECK(std::memcmp(plain.data(), with_ones.data(), plain.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("a grouped rms_norm normalizes each group on its own, and mul and add repeat a shorter weight down the column") {
    const int64_t group = 16, n = 64, max_batch = 3;
    const auto w = gaussian(std::size_t(group), 21);
    graph::graph g(max_batch);
    const auto x = g.input("x", qtype::f32, n);
    const auto normed = g.rms_norm(x, 1e-6f, group);
    const auto weight = g.weight("w", qtype::f32, group, 1, w.data());
    const auto scaled = g.mul(normed, weight);
    const auto shifted = g.add(normed, weight);
    g.mark_output(scaled);
    g.mark_output(shifted);
    CHECK_THROWS_AS(g.rms_norm(x, 1e-6f, 24), llmrt::error);  // 24 does not divide 64
    cpu::backend b;
    graph::executor<cpu::backend> ex(b, g);
    const auto in = gaussian(std::size_t(n * max_batch), 22, 3.0f);
    ex.write(x, std::span<const float>(in));
    ex.run(max_batch);
    std::vector<float> got_mul(in.size()), got_add(in.size());
    ex.read(scaled, std::span<float>(got_mul));
    ex.read(shifted, std::span<float>(got_add));
    for (int64_t at = 0; at < n * max_batch; at += group) {
        double ss = 0;
        for (int64_t i = 0; i < group; ++i) ss += double(in[std::size_t(at + i)]) * in[std::size_t(at + i)];
        const double scale = 1.0 / std::sqrt(ss / double(group) + 1e-6);
        for (int64_t i = 0; i < group; ++i) {
            const double normed_value = in[std::size_t(at + i)] * scale;
            CHECK(double(got_mul[std::size_t(at + i)]) == doctest::Approx(normed_value * w[std::size_t(i)]).epsilon(1e-5));
            CHECK(double(got_add[std::size_t(at + i)]) == doctest::Approx(normed_value + w[std::size_t(i)]).epsilon(1e-5));
        }
    }
}

TEST_CASE("softmax gives exp(x - max) normalized to sum one per column") {
    const int n = 37, cols = 4;
    auto x = gaussian(std::size_t(n * cols), 5, 4.0f);
    x[3] = 80.0f;  // a value whose exp overflows float unless the max is subtracted
    std::vector<float> y(x.size());
    cpu::softmax(x.data(), y.data(), n, cols);
    for (int c = 0; c < cols; ++c) {
        double max = -INFINITY, sum = 0;
        for (int i = 0; i < n; ++i) max = std::max(max, double(x[std::size_t(c * n + i)]));
        for (int i = 0; i < n; ++i) sum += std::exp(x[std::size_t(c * n + i)] - max);
        double total = 0;
        for (int i = 0; i < n; ++i) {
            const double ref = std::exp(x[std::size_t(c * n + i)] - max) / sum;
            CHECK(double(y[std::size_t(c * n + i)]) == doctest::Approx(ref).epsilon(1e-5).scale(1e-7));
            total += y[std::size_t(c * n + i)];
        }
        CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("silu and swiglu follow x·sigmoid(x) and silu(gate)·up") {
    const auto g = gaussian(200, 7, 3.0f), u = gaussian(200, 8);
    std::vector<float> s(200), w(200);
    cpu::silu(g.data(), s.data(), 200);
    cpu::swiglu(g.data(), u.data(), w.data(), 200);
    for (std::size_t i = 0; i < 200; ++i) {
        const double silu = g[i] / (1.0 + std::exp(-double(g[i])));
        CHECK(double(s[i]) == doctest::Approx(silu).epsilon(1e-6).scale(1e-6));
        CHECK(double(w[i]) == doctest::Approx(silu * u[i]).epsilon(1e-6).scale(1e-6));
    }
}

TEST_CASE("causal attention with grouped-query heads matches the naive formula over positions 0..p") {
    const graph::attention_params p{4, 2, 8, 1.0f / std::sqrt(8.0f)};
    const int n_ctx = 12, kv_ne0 = 16, q_ne0 = 32;
    for (qtype kv_type : {qtype::f32, qtype::f16}) {
        const std::string kv_name = name(kv_type);
        CAPTURE(kv_name);
        const auto kf = gaussian(std::size_t(kv_ne0 * n_ctx), 21), vf = gaussian(std::size_t(kv_ne0 * n_ctx), 22);
        // The caches as stored, and the floats the op reads back from them.
        std::vector<std::byte> k(row_size(kv_type, kv_ne0 * n_ctx)), v(k.size());
        quantize(kv_type, kf.data(), k.data(), kv_ne0 * n_ctx);
        quantize(kv_type, vf.data(), v.data(), kv_ne0 * n_ctx);
        std::vector<float> kr(kf.size()), vr(vf.size());
        dequantize(kv_type, k.data(), kr.data(), kv_ne0 * n_ctx);
        dequantize(kv_type, v.data(), vr.data(), kv_ne0 * n_ctx);

        const std::vector<int32_t> pos{0, 4, 5, 11};
        const int cols = 4;
        const auto q = gaussian(std::size_t(q_ne0 * cols), 23, 2.0f);
        std::vector<float> out(q.size()), scores(n_ctx);
        cpu::attention(q.data(), kv_type, k.data(), v.data(), n_ctx, pos.data(), out.data(), cols, p, scores.data());
        for (int c = 0; c < cols; ++c)
            for (int h = 0; h < 4; ++h) {
                const int g = h / 2;  // two query heads per kv head
                const int n_keys = pos[std::size_t(c)] + 1;
                std::vector<double> s(static_cast<std::size_t>(n_keys));
                double max = -INFINITY, sum = 0;
                for (int j = 0; j < n_keys; ++j) {
                    double dot = 0;
                    for (int i = 0; i < 8; ++i)
                        dot += double(q[std::size_t(c * q_ne0 + h * 8 + i)]) * kr[std::size_t(j * kv_ne0 + g * 8 + i)];
                    s[std::size_t(j)] = dot * p.scale;
                    max = std::max(max, s[std::size_t(j)]);
                }
                for (auto& e : s) sum += (e = std::exp(e - max));
                for (int i = 0; i < 8; ++i) {
                    double ref = 0;
                    for (int j = 0; j < n_keys; ++j) ref += s[std::size_t(j)] / sum * vr[std::size_t(j * kv_ne0 + g * 8 + i)];
                    CHECK(double(out[std::size_t(c * q_ne0 + h * 8 + i)]) == doctest::Approx(ref).epsilon(1e-5).scale(1.0));
                }
            }
    }
}

TEST_CASE("attention never reads cache columns past the query's position") {
    const graph::attention_params p{2, 1, 8, 0.35f};
    const int n_ctx = 8;
    auto k = gaussian(8 * n_ctx, 31), v = gaussian(8 * n_ctx, 32);
    const auto q = gaussian(16, 33);
    const int32_t pos = 3;
    std::vector<float> before(16), after(16), scores(n_ctx);
    cpu::attention(q.data(), qtype::f32, k.data(), v.data(), n_ctx, &pos, before.data(), 1, p, scores.data());
    for (int j = 4; j < n_ctx; ++j)
        for (int i = 0; i < 8; ++i) k[std::size_t(j * 8 + i)] = v[std::size_t(j * 8 + i)] = NAN;
    cpu::attention(q.data(), qtype::f32, k.data(), v.data(), n_ctx, &pos, after.data(), 1, p, scores.data());
    CHECK(std::memcmp(before.data(), after.data(), sizeof(float) * 16) == 0);
}

TEST_CASE("get_rows dequantizes the rows of a quantized table that the ids name") {
    const int ne0 = 64, n_rows = 10;
    const auto table = gaussian(std::size_t(ne0 * n_rows), 41);
    std::vector<std::byte> q(row_size(qtype::q8_0, ne0) * n_rows);
    for (int r = 0; r < n_rows; ++r)
        quantize(qtype::q8_0, table.data() + r * ne0, q.data() + std::size_t(r) * row_size(qtype::q8_0, ne0), ne0);
    const std::vector<int32_t> ids{9, 0, 9, 4};
    std::vector<float> y(std::size_t(ne0) * ids.size()), ref(static_cast<std::size_t>(ne0));
    cpu::get_rows(qtype::q8_0, q.data(), ne0, n_rows, ids.data(), y.data(), 4);
    for (std::size_t c = 0; c < ids.size(); ++c) {
        dequantize(qtype::q8_0, q.data() + std::size_t(ids[c]) * row_size(qtype::q8_0, ne0), ref.data(), ne0);
        CHECK(std::memcmp(y.data() + c * ne0, ref.data(), ne0 * sizeof(float)) == 0);
    }
    const int32_t bad = n_rows;
    CHECK_THROWS_AS(cpu::get_rows(qtype::q8_0, q.data(), ne0, n_rows, &bad, y.data(), 1), llmrt::error);
}

TEST_CASE("set_rows writes each source column into the cache column of its position") {
    const int ne0 = 6, n_ctx = 5;
    const auto src = gaussian(ne0 * 2, 51);
    const std::vector<int32_t> pos{3, 1};
    std::vector<float> cache(std::size_t(ne0 * n_ctx), -7.0f);
    cpu::set_rows(qtype::f32, cache.data(), ne0, n_ctx, src.data(), pos.data(), 2);
    for (int j = 0; j < n_ctx; ++j)
        for (int i = 0; i < ne0; ++i) {
            const float expected = j == 3 ? src[std::size_t(i)] : j == 1 ? src[std::size_t(ne0 + i)] : -7.0f;
            CHECK(cache[std::size_t(j * ne0 + i)] == expected);
        }
    std::vector<uint16_t> half(std::size_t(ne0 * n_ctx));
    cpu::set_rows(qtype::f16, half.data(), ne0, n_ctx, src.data(), pos.data(), 2);
    CHECK(half[std::size_t(3 * ne0)] == fp32_to_fp16(src[0]));
    const int32_t outside = n_ctx;
    CHECK_THROWS_AS(cpu::set_rows(qtype::f32, cache.data(), ne0, n_ctx, src.data(), &outside, 1), llmrt::error);
}

TEST_CASE("argmax returns the first index of the largest element of each column") {
    const std::vector<float> x{1, 5, 5, 2, /**/ -3, -1, -2, -1};
    std::vector<int32_t> y(2);
    cpu::argmax(x.data(), y.data(), 4, 2);
    CHECK(y[0] == 1);
    CHECK(y[1] == 1);
}

TEST_CASE("top_probability is softmax's value at each column's largest element") {
    const std::vector<float> x{1, 5, 5, 2, /**/ -3, -1, -2, -1, /**/ 0, 0, 0, 0};
    std::vector<float> y(3, NAN), soft(x.size());
    cpu::top_probability(x.data(), y.data(), 4, 3);
    cpu::softmax(x.data(), soft.data(), 4, 3);
    CHECK(y[0] == soft[1]);
    CHECK(y[1] == soft[5]);
    CHECK(y[2] == 0.25f);
    CHECK(y[0] == doctest::Approx(1.0 / (2.0 + std::exp(-4.0) + std::exp(-3.0))).epsilon(1e-6));  // 1, 5, 5, 2
}

TEST_CASE("cpu::mul_mat gives the bits of cpu::matvec for every type, activation format and column count") {
    const int64_t rows = 7, k = 256;
    const auto wf = gaussian(std::size_t(rows * k), 61);
    all_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        if constexpr (B::id == qtype::q8_1 || B::id == qtype::q8_K) return;  // activation types, not weights
        std::vector<std::byte> w(row_size(B::id, k) * rows);
        for (int64_t r = 0; r < rows; ++r)
            quantize(B::id, wf.data() + r * k, w.data() + std::size_t(r) * row_size(B::id, k), k);
        for (auto act : {cpu::activation_format::f32, cpu::activation_format::q8_1, cpu::activation_format::ggml}) {
            if (act == cpu::activation_format::ggml && !weight_block<B>) continue;
            for (int64_t ncols : {1, 3, 8, 9}) {
                CAPTURE(B::name);
                CAPTURE(cpu::to_string(act));
                CAPTURE(ncols);
                const auto x = gaussian(std::size_t(k * ncols), uint32_t(70 + ncols));
                std::vector<float> ref(std::size_t(rows * ncols)), y(ref.size(), NAN);
                cpu::matvec(B::id, w.data(), x.data(), ref.data(), {rows, k, ncols}, act);
                std::vector<std::byte> scratch(cpu::mul_mat_scratch_bytes(B::id, k, ncols, act));
                cpu::mul_mat(B::id, w.data(), x.data(), y.data(), {rows, k, ncols}, act, scratch.data(), scratch.size());
                CHECK(std::memcmp(ref.data(), y.data(), ref.size() * sizeof(float)) == 0);
            }
        }
    });
}

TEST_CASE("cpu::mul_mat refuses scratch smaller than it needs") {
    std::vector<std::byte> w(row_size(qtype::q8_0, 64) * 2);
    std::vector<float> x(64), y(2);
    std::vector<std::byte> scratch(cpu::mul_mat_scratch_bytes(qtype::q8_0, 64, 1, cpu::activation_format::q8_1) - 1);
    CHECK_THROWS_AS(cpu::mul_mat(qtype::q8_0, w.data(), x.data(), y.data(), {2, 64, 1}, cpu::activation_format::q8_1,
                                 scratch.data(), scratch.size()),
                    llmrt::error);
}
