// The ggml-paired CPU dot products of Q3_K and Q6_K weights with Q8_K activations.
//
// Ground truth: the dot, in double, of the dequantized weights (dequantize_block agrees with
// ggml bit for bit) and the dequantized Q8_K activations. The integer part of vec_dot is
// exact; its float part rounds d = fp16(d)·d8, each d·lane and each running sum, so
// |vec_dot − truth| ≤ (blocks + 16)·2⁻²³·Σ|w·a|. That bound is far below one term
// (≈ Σ|w·a|/n) for every length tested, so a single mis-indexed or mis-scaled weight fails.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <llmrt/llmrt.hpp>

using namespace llmrt;

namespace {

template <class B>
struct dot_case {
    std::vector<B> w;
    std::vector<q8_K> a;
    int64_t n = 0;
};

// Gaussian weights and activations of length n, quantized; seed fixed per (type, length).
template <class B>
dot_case<B> random_case(int64_t n, float weight_sigma, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float> wf(static_cast<std::size_t>(n)), af(static_cast<std::size_t>(n));
    for (float& v : wf) v = weight_sigma * gauss(rng);
    for (float& v : af) v = gauss(rng);
    dot_case<B> c;
    c.n = n;
    c.w.resize(std::size_t(n / 256));
    c.a.resize(std::size_t(n / 256));
    quantize_row(wf.data(), c.w.data(), n);
    quantize_row(af.data(), c.a.data(), n);
    return c;
}

template <class B>
std::vector<float> dequantized(const std::vector<B>& blocks) {
    std::vector<float> out(blocks.size() * 256);
    for (std::size_t i = 0; i < blocks.size(); ++i) dequantize_block(blocks[i], out.data() + 256 * i);
    return out;
}

struct double_dot {
    double value = 0.0;      // Σ w·a
    double magnitude = 0.0;  // Σ |w·a|, the scale of the float rounding error
};

template <class B>
double_dot reference_dot(const dot_case<B>& c) {
    const std::vector<float> w = dequantized(c.w), a = dequantized(c.a);
    double_dot r;
    for (std::size_t i = 0; i < w.size(); ++i) {
        const double p = double(w[i]) * double(a[i]);
        r.value += p;
        r.magnitude += std::fabs(p);
    }
    return r;
}

double rounding_bound(int64_t n, double magnitude) { return double(n / 256 + 16) * std::ldexp(1.0, -23) * magnitude; }

// Changes the stored quant of element e, by the type's own layout, without touching others.
void change_quant(q3_K& b, int e, bool high_bit) {
    if (high_bit)
        b.hmask[e % 32] = uint8_t(b.hmask[e % 32] ^ (1 << (e / 32)));
    else
        b.qs[32 * (e / 128) + e % 32] = uint8_t(b.qs[32 * (e / 128) + e % 32] ^ (1 << (2 * ((e % 128) / 32))));
}
void change_quant(q6_K& b, int e, bool high_bit) {
    const int c = e / 128, t = (e % 128) / 32, l = e % 32;
    if (high_bit)
        b.qh[32 * c + l] = uint8_t(b.qh[32 * c + l] ^ (1 << (2 * t)));
    else
        b.ql[64 * c + l + 32 * (t & 1)] = uint8_t(b.ql[64 * c + l + 32 * (t & 1)] ^ (1 << (4 * (t / 2))));
}

}  // namespace

TEST_CASE_TEMPLATE("vec_dot with q8_K activations equals the double dot of the dequantized values", B, q3_K, q6_K) {
    const int64_t lengths[] = {256, 512, 1280, 4096, 11008};
    const float sigmas[] = {1.0f, 1e-3f, 37.0f};
    uint32_t seed = 1000u * uint32_t(B::id);
    for (const int64_t n : lengths)
        for (const float sigma : sigmas) {
            const dot_case<B> c = random_case<B>(n, sigma, ++seed);
            const double_dot ref = reference_dot(c);
            const float got = vec_dot(c.w.data(), c.a.data(), n);
            INFO(B::name << " n = " << n << ", weight sigma = " << sigma << ", seed " << seed << ": vec_dot " << got
                         << ", double dot " << ref.value << ", sum |w a| " << ref.magnitude);
            REQUIRE(ref.magnitude > 0.0);
            CHECK(std::fabs(double(got) - ref.value) <= rounding_bound(n, ref.magnitude));
        }
}

TEST_CASE_TEMPLATE("vec_dot of an empty row is zero", B, q3_K, q6_K) {
    CHECK(vec_dot(static_cast<const B*>(nullptr), static_cast<const q8_K*>(nullptr), 0) == 0.0f);
}

TEST_CASE_TEMPLATE("changing one stored quant changes vec_dot by exactly that weight's product", B, q3_K, q6_K) {
    const int64_t n = 512;
    dot_case<B> c = random_case<B>(n, 1.0f, 77u + uint32_t(B::id));
    const std::vector<float> a = dequantized(c.a);
    std::mt19937 rng(5u);
    int checked = 0;
    for (int trial = 0; trial < 64; ++trial) {
        const int e = int(rng() % uint32_t(n));
        const bool high_bit = trial % 2 == 1;
        const std::vector<float> before = dequantized(c.w);
        const float dot_before = vec_dot(c.w.data(), c.a.data(), n);
        change_quant(c.w[std::size_t(e / 256)], e % 256, high_bit);
        const std::vector<float> after = dequantized(c.w);
        const float dot_after = vec_dot(c.w.data(), c.a.data(), n);

        // The edit moved exactly element e (unless its sub-scale is zero).
        for (int64_t i = 0; i < n; ++i)
            if (i != e) REQUIRE(std::memcmp(&before[std::size_t(i)], &after[std::size_t(i)], sizeof(float)) == 0);
        const double expected = (double(after[std::size_t(e)]) - double(before[std::size_t(e)])) * double(a[std::size_t(e)]);
        const double magnitude = reference_dot(c).magnitude;
        const double tolerance = 2.0 * rounding_bound(n, magnitude);
        if (std::fabs(expected) <= 10.0 * tolerance) continue;  // zero sub-scale or zero activation
        ++checked;
        INFO(B::name << " element " << e << (high_bit ? " high bit" : " low bit") << ": vec_dot moved by "
                     << double(dot_after) - double(dot_before) << ", the weight's product moved by " << expected);
        CHECK(dot_after != dot_before);
        CHECK(std::fabs((double(dot_after) - double(dot_before)) - expected) <= tolerance);
    }
    CHECK(checked >= 48);
}
