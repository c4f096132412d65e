// gpt-oss's ops and options on the CPU backend (rope with YaRN, attention with sinks and a
// sliding window, swiglu_oai, add_id, expert_norm::softmax) against straightforward formulas in
// double, a gpt-oss-shaped block fused and unfused, and the builder refusing what it cannot run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/graph/executor.hpp>
#include <llmrt/testing/generate.hpp>

#include "oss_fixtures.hpp"

using namespace llmrt;
using testing::gaussian;
using test::oss_block;
using test::oss_rope;

namespace {

constexpr float poison = std::numeric_limits<float>::quiet_NaN();

// Attention of one query head over keys first..last (inclusive) in double, with an optional sink.
std::vector<double> naive_head(const float* q, const std::vector<float>& k, const std::vector<float>& v, int64_t kv_ne0,
                               int64_t g, int head_dim, float scale, int64_t first, int64_t last, const float* sink) {
    std::vector<double> s;
    double max = sink ? double(*sink) : -INFINITY;
    for (int64_t j = first; j <= last; ++j) {
        double dot = 0;
        for (int i = 0; i < head_dim; ++i) dot += double(q[i]) * k[std::size_t(j * kv_ne0 + g * head_dim + i)];
        s.push_back(dot * scale);
        max = std::max(max, s.back());
    }
    double sum = sink ? std::exp(double(*sink) - max) : 0.0;
    for (double& e : s) sum += (e = std::exp(e - max));
    std::vector<double> out(std::size_t(head_dim), 0.0);
    for (int64_t j = first; j <= last; ++j)
        for (int i = 0; i < head_dim; ++i)
            out[std::size_t(i)] += s[std::size_t(j - first)] / sum * v[std::size_t(j * kv_ne0 + g * head_dim + i)];
    return out;
}

}  // namespace

TEST_CASE("rope with ext_factor 0 and attn_factor 1 gives plain rope's bits, whatever the corr dims") {
    graph::rope_params plain{4, 16, 16, 10000.0f, graph::rope_order::neox, 0.5f};
    graph::rope_params yarn_off = plain;
    yarn_off.corr_low = 3.0f;
    yarn_off.corr_high = 9.0f;
    CHECK_FALSE(yarn_off.yarn());
    const std::vector<int32_t> pos{0, 5, 4000};
    const auto x = gaussian(64 * 3, 41);
    std::vector<float> a(x.size()), b(x.size());
    cpu::rope(x.data(), a.data(), pos.data(), 3, plain);
    cpu::rope(x.data(), b.data(), pos.data(), 3, yarn_off);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("yarn_corr_dims floors and ceils n_rot·ln(n_ctx_orig/(beta·2π))/(2·ln base) and clamps them to 0..n_rot-1") {
    auto dim = [](double n_rot, double n_ctx, double beta, double base) {
        return n_rot * std::log(n_ctx / (beta * 2 * 3.14159265358979323846)) / (2 * std::log(base));
    };
    const graph::yarn_dims d = graph::yarn_corr_dims(64, 4096, 150000.0f);
    CHECK(d.low == float(std::floor(dim(64, 4096, 32, 150000))));
    CHECK(d.high == float(std::ceil(dim(64, 4096, 1, 150000))));
    CHECK(d.low == 8.0f);
    CHECK(d.high == 18.0f);
    const graph::yarn_dims clamped = graph::yarn_corr_dims(8, 100000000, 10.0f, 1e-9f, 1e-12f);
    CHECK(clamped.low > 0.0f);
    CHECK(clamped.high == 7.0f);
    CHECK(graph::yarn_corr_dims(64, 4, 150000.0f).low == 0.0f);  // a negative dim clamps at 0
}

TEST_CASE("rope with YaRN mixes the interpolated and extrapolated angles by the ramp and scales cos and sin") {
    const graph::rope_params p = oss_rope(2, 32);
    const std::vector<int32_t> pos{0, 1, 37, 3000};
    const auto x = gaussian(64 * 4, 42);
    std::vector<float> y(x.size(), poison);
    cpu::rope(x.data(), y.data(), pos.data(), 4, p);
    const double mscale = double(p.attn_factor) * (1.0 + 0.1 * std::log(32.0));
    for (int c = 0; c < 4; ++c)
        for (int h = 0; h < 2; ++h)
            for (int i = 0; i < 16; ++i) {
                const double extrap = pos[std::size_t(c)] * std::pow(150000.0, -2.0 * i / 32);
                const double interp = extrap / 32;
                const double ramp = 1 - std::clamp((i - double(p.corr_low)) / (double(p.corr_high) - p.corr_low), 0.0, 1.0);
                const double theta = interp * (1 - ramp) + extrap * ramp;
                const float* xh = x.data() + c * 64 + h * 32;
                const float* yh = y.data() + c * 64 + h * 32;
                CAPTURE(c);
                CAPTURE(i);
                CHECK(double(yh[i]) ==
                      doctest::Approx((xh[i] * std::cos(theta) - xh[i + 16] * std::sin(theta)) * mscale).epsilon(1e-4).scale(1.0));
                CHECK(double(yh[i + 16]) ==
                      doctest::Approx((xh[i] * std::sin(theta) + xh[i + 16] * std::cos(theta)) * mscale).epsilon(1e-4).scale(1.0));
            }
}

TEST_CASE("attention with sinks counts exp(sink - max) in each head's softmax sum") {
    const graph::attention_params p{4, 2, 8, 1.0f / std::sqrt(8.0f)};
    const int64_t n_ctx = 10, kv_ne0 = 16, q_ne0 = 32;
    const auto k = gaussian(std::size_t(kv_ne0 * n_ctx), 51), v = gaussian(std::size_t(kv_ne0 * n_ctx), 52);
    const auto q = gaussian(std::size_t(q_ne0 * 3), 53, 2.0f);
    // A sink far above the scores (most of the weight goes nowhere), one far below, two near.
    const std::vector<float> sinks{6.0f, -30.0f, 0.3f, -0.7f};
    const std::vector<int32_t> pos{0, 4, 9};
    std::vector<float> out(q.size(), poison), scores(static_cast<std::size_t>(n_ctx));
    cpu::attention(q.data(), qtype::f32, k.data(), v.data(), n_ctx, pos.data(), out.data(), 3, p, scores.data(), sinks.data());
    for (int c = 0; c < 3; ++c)
        for (int h = 0; h < 4; ++h) {
            const auto ref = naive_head(q.data() + c * q_ne0 + h * 8, k, v, kv_ne0, h / 2, 8, p.scale, 0,
                                        pos[std::size_t(c)], &sinks[std::size_t(h)]);
            for (int i = 0; i < 8; ++i)
                CHECK(double(out[std::size_t(c * q_ne0 + h * 8 + i)]) == doctest::Approx(ref[std::size_t(i)]).epsilon(1e-5).scale(1.0));
        }
}

TEST_CASE("attention with a window sees only the keys at positions p - window + 1 .. p") {
    graph::attention_params p{2, 1, 8, 0.35f};
    p.window = 3;
    const int64_t n_ctx = 12;
    auto k = gaussian(std::size_t(8 * n_ctx), 61), v = gaussian(std::size_t(8 * n_ctx), 62);
    const auto q = gaussian(16 * 4, 63);
    const std::vector<int32_t> pos{0, 2, 3, 11};
    std::vector<float> out(q.size(), poison), scores(static_cast<std::size_t>(n_ctx));
    cpu::attention(q.data(), qtype::f32, k.data(), v.data(), n_ctx, pos.data(), out.data(), 4, p, scores.data());
    for (int c = 0; c < 4; ++c)
        for (int h = 0; h < 2; ++h) {
            const int64_t last = pos[std::size_t(c)], first = std::max<int64_t>(0, last - 2);
            const auto ref = naive_head(q.data() + c * 16 + h * 8, k, v, 8, 0, 8, p.scale, first, last, nullptr);
            for (int i = 0; i < 8; ++i)
                CHECK(double(out[std::size_t(c * 16 + h * 8 + i)]) == doctest::Approx(ref[std::size_t(i)]).epsilon(1e-5).scale(1.0));
        }
    // Keys before the window are never read; a window past the position is no window at all.
    const int32_t at = 11;
    std::vector<float> before(16), after(16), unwindowed(16), wide(16);
    cpu::attention(q.data(), qtype::f32, k.data(), v.data(), n_ctx, &at, before.data(), 1, p, scores.data());
    std::fill(k.begin(), k.begin() + 8 * 9, poison);
    std::fill(v.begin(), v.begin() + 8 * 9, poison);
    cpu::attention(q.data(), qtype::f32, k.data(), v.data(), n_ctx, &at, after.data(), 1, p, scores.data());
    CHECK(std::memcmp(before.data(), after.data(), sizeof(float) * 16) == 0);
    p.window = 0;
    const int32_t early = 2;
    cpu::attention(q.data(), qtype::f32, k.data() + 8 * 9, v.data() + 8 * 9, 3, &early, unwindowed.data(), 1, p, scores.data());
    p.window = 50;
    cpu::attention(q.data(), qtype::f32, k.data() + 8 * 9, v.data() + 8 * 9, 3, &early, wide.data(), 1, p, scores.data());
    CHECK(std::memcmp(unwindowed.data(), wide.data(), sizeof(float) * 16) == 0);
}

TEST_CASE("swiglu_oai clamps gate above and up both ways at the limit, then g·sigmoid(alpha·g)·(up + 1)") {
    auto gate = gaussian(300, 71, 6.0f), up = gaussian(300, 72, 6.0f);
    gate[0] = 50.0f;
    gate[1] = -50.0f;
    up[2] = 9.0f;
    up[3] = -9.0f;
    std::vector<float> y(300, poison);
    cpu::swiglu_oai(gate.data(), up.data(), y.data(), 300, 1.702f, 7.0f);
    for (std::size_t i = 0; i < 300; ++i) {
        const double g = std::min(double(gate[i]), 7.0), u = std::clamp(double(up[i]), -7.0, 7.0);
        CHECK(double(y[i]) == doctest::Approx(g / (1 + std::exp(-1.702 * g)) * (u + 1)).epsilon(1e-6).scale(1e-6));
    }
    const float seven = 7.0f;
    float at_limit = poison;
    cpu::swiglu_oai(&seven, up.data(), &at_limit, 1, 1.702f, 7.0f);
    CHECK(y[0] == at_limit);  // a gate past the limit is the limit
}

TEST_CASE("add_id adds to each slot the bias column of the expert its id names") {
    const int64_t rows = 5, n_expert = 4, k = 2, cols = 3;
    const auto x = gaussian(std::size_t(rows * k * cols), 81), b = gaussian(std::size_t(rows * n_expert), 82);
    const std::vector<int32_t> ids{3, 0, /**/ 1, 1, /**/ 2, 3};
    std::vector<float> y(x.size(), poison);
    cpu::add_id(x.data(), b.data(), ids.data(), y.data(), rows, n_expert, k, cols);
    for (int64_t c = 0; c < cols; ++c)
        for (int64_t s = 0; s < k; ++s)
            for (int64_t r = 0; r < rows; ++r) {
                const auto at = std::size_t((c * k + s) * rows + r);
                CHECK(y[at] == x[at] + b[std::size_t(ids[std::size_t(c * k + s)] * rows + r)]);
            }
    const std::vector<int32_t> bad{0, 4};
    CHECK_THROWS_WITH_AS(cpu::add_id(x.data(), b.data(), bad.data(), y.data(), rows, n_expert, k, 1),
                         doctest::Contains("add_id: id 4 of token 0"), llmrt::error);
}

TEST_CASE("expert_weights with expert_norm::softmax gives the softmax of the chosen values, summing to one") {
    const int64_t n = 6, k = 3;
    const std::vector<float> logits{0.1f, 3.0f, -2.0f, 2.5f, 40.0f, 0.0f, /**/ -1.0f, -1.0f, -1.0f, 5.0f, 5.0f, 5.0f};
    const std::vector<int32_t> ids{4, 1, 3, /**/ 3, 0, 5};
    std::vector<float> w(6, poison);
    cpu::expert_weights(logits.data(), ids.data(), w.data(), n, k, 2, graph::expert_norm::softmax);
    for (int c = 0; c < 2; ++c) {
        double max = -INFINITY, sum = 0, total = 0;
        for (int j = 0; j < k; ++j) max = std::max(max, double(logits[std::size_t(c * n + ids[std::size_t(c * k + j)])]));
        for (int j = 0; j < k; ++j) sum += std::exp(logits[std::size_t(c * n + ids[std::size_t(c * k + j)])] - max);
        for (int j = 0; j < k; ++j) {
            const double ref = std::exp(logits[std::size_t(c * n + ids[std::size_t(c * k + j)])] - max) / sum;
            CHECK(double(w[std::size_t(c * k + j)]) == doctest::Approx(ref).epsilon(1e-6).scale(1e-7));
            total += w[std::size_t(c * k + j)];
        }
        CHECK(total == doctest::Approx(1.0).epsilon(1e-6));
    }
    CHECK(std::string(graph::to_string(graph::expert_norm::softmax)) == "softmax");
}

TEST_CASE("a gpt-oss block on the CPU backend gives the same bits fused and unfused, in one batch and token by token") {
    oss_block b(6);
    const auto fused = b.run(6, true, false);
    CHECK(b.rope_cache_steps == 1);  // the YaRN ropes and the cache writes are one step
    CHECK(fused == b.run(6, false, false));
    CHECK(fused == b.run(6, true, true));
    for (float v : fused) CHECK(std::isfinite(v));
}

TEST_CASE("the builder refuses gpt-oss operands of the wrong shape and options out of range, naming them") {
    graph::graph g(2);
    const auto x = g.input("x", qtype::f32, 32);
    const auto pos = g.input("pos", graph::i32_type, 1);
    const auto kc = g.state("k", qtype::f16, 16, 8);
    const auto vc = g.state("v", qtype::f16, 16, 8);
    const std::vector<float> w(256, 0.5f);
    const graph::attention_params ap{4, 2, 8, 0.3f};
    CHECK_THROWS_WITH_AS(g.attention(x, kc, vc, pos, ap, g.weight("sinks3", qtype::f32, 3, 1, w.data())),
                         doctest::Contains("attention: sinks 'sinks3'"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.attention(x, kc, vc, pos, ap, x), doctest::Contains("must be an f32 weight of n_head = 4"),
                         llmrt::error);
    graph::attention_params negative = ap;
    negative.window = -1;
    CHECK_THROWS_WITH_AS(g.attention(x, kc, vc, pos, negative), doctest::Contains("attention: window -1"), llmrt::error);
    CHECK_NOTHROW(g.attention(x, kc, vc, pos, ap, g.weight("sinks", qtype::f32, 4, 1, w.data())));

    graph::rope_params rp{4, 8, 8, 10000.0f, graph::rope_order::neox};
    rp.ext_factor = -1.0f;
    CHECK_THROWS_WITH_AS(g.rope(x, pos, rp), doctest::Contains("rope: YaRN's ext_factor"), llmrt::error);
    rp.ext_factor = 1.0f;
    rp.attn_factor = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH_AS(g.rope(x, pos, rp), doctest::Contains("must be finite"), llmrt::error);

    const auto y = g.input("y", qtype::f32, 16);
    CHECK_THROWS_WITH_AS(g.swiglu_oai(x, y, 1.702f, 7.0f), doctest::Contains("swiglu_oai: gate 'x'"), llmrt::error);
    CHECK_THROWS_WITH_AS(g.swiglu_oai(x, x, 1.702f, 0.0f), doctest::Contains("swiglu_oai: alpha"), llmrt::error);

    const auto ids = g.top_k(x, 2);
    CHECK_THROWS_WITH_AS(g.add_id(x, g.weight("b", qtype::f32, 8, 4, w.data()), ids), doctest::Contains("add_id: bias 'b'"),
                         llmrt::error);
    CHECK_THROWS_WITH_AS(g.add_id(x, g.weight("b16", qtype::f32, 16, 4, w.data()), x), doctest::Contains("add_id: ids 'x'"),
                         llmrt::error);
    const auto added = g.add_id(x, g.weight("b16", qtype::f32, 16, 4, w.data()), ids);
    CHECK(g[added].n_expert == 4);
}

TEST_CASE("add_id ids from a graph input outside the bias's experts raise llmrt::error naming them") {
    graph::graph g(2);
    const auto x = g.input("x", qtype::f32, 8);
    const auto ids = g.input("ids", graph::i32_type, 2);
    const std::vector<float> b(12, 0.5f);
    g.mark_output(g.add_id(x, g.weight("b", qtype::f32, 4, 3, b.data()), ids));
    cpu::backend be;
    graph::executor ex(be, std::move(g));
    ex.write(x, std::span<const float>(std::vector<float>(16, 1.0f)));
    ex.write(ids, std::span<const int32_t>(std::vector<int32_t>{0, 2, 1, 2}));
    CHECK_NOTHROW(ex.run(2));
    ex.write(ids, std::span<const int32_t>(std::vector<int32_t>{0, 2, 3, 2}));
    CHECK_THROWS_WITH_AS(ex.run(2), doctest::Contains("add_id: id 3 of token 1"), llmrt::error);
}

TEST_CASE("the CPU backend runs every graph of gpt-oss's ops and options that the GPU backends refuse") {
    for (const test::oss_feature& f : test::oss_features()) {
        CAPTURE(f.name);
        cpu::backend b;
        graph::executor<cpu::backend> ex(b, f.build());
        CHECK_NOTHROW(ex.run(2));
    }
}
