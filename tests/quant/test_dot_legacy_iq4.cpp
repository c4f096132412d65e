// The ggml-paired CPU dot products of the nibble32 family's types (llmrt/quant/layout.hpp; every
// such type of llmrt::weight_types): Q4_0, Q5_0 and IQ4_NL with Q8_0 activations, Q4_1 and Q5_1
// with Q8_1, and IQ4_XS with Q8_K.
//
// Ground truth: the dot, in double, of the dequantized weights (bit-exact with ggml, see
// test_golden.cpp) and the dequantized activations. vec_dot's integer sums are exact, and every
// float operation it does rounds once: at most 3 per block or sub-block for the scales, one per
// block or sub-block for the running sum. So
//     |vec_dot − truth| ≤ (sub-blocks + 4) · 2⁻²⁴ · M,
// with M = Σ|w·a|; the dequantized values themselves are exact products, except Q8_K's d·q and
// Q4_1/Q5_1's q·d + m, which round once (the +4 covers them).
//
// Q4_1 and Q5_1 take the minimum's share from the activation's s = fp16(d·Σq), stored rounded
// from the unrounded d, instead of from the dequantized activations: truth gets the exact
// difference Σ m·(s − fp16(d)·Σq) added, checked itself to be a small share. Those dots also
// compute q·d and m apart before adding them, so their M is Σ(|w| + 3|m|)·|a|, which bounds
// Σ(|q·d| + |m|)·|a|.
//
// The bound sits far below one term (about M/n) at every length tested, so a mis-indexed or
// mis-scaled weight fails.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <llmrt/llmrt.hpp>
#include <llmrt/testing/generate.hpp>

#include "golden.hpp"

using namespace llmrt;

namespace {

// Types with an fp16 minimum (x = d·q + m): Q4_1, Q5_1.
template <class B>
constexpr bool is_affine = block_layout<B>::value.m >= 0;

template <class F>
void for_each_dot_type(F&& f) {
    weight_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        if constexpr (nibble32_block<B>) {
            SUBCASE(B::name) { f(tag); }
        }
    });
}

template <class Block>
std::vector<float> dequantized(const std::vector<Block>& blocks) {
    std::vector<float> out(blocks.size() * std::size_t(Block::block_size));
    dequantize_row(blocks.data(), out.data(), int64_t(out.size()));
    return out;
}

struct reference {
    double value = 0.0;       // Σ w·a, plus Q4_1/Q5_1's correction for s
    double magnitude = 0.0;   // M (see the top of the file)
    double correction = 0.0;  // Q4_1/Q5_1: Σ m·(s − fp16(d)·Σq)
    double s_share = 0.0;     // Q4_1/Q5_1: Σ |m·s|
};

// The truth for weights w and activations a of the type's vec_dot_type.
template <class B>
reference reference_dot(const std::vector<B>& w, const std::vector<typename B::vec_dot_type>& a) {
    const std::vector<float> wf = dequantized(w), af = dequantized(a);
    reference r;
    for (std::size_t i = 0; i < wf.size(); ++i) {
        const double p = double(wf[i]) * double(af[i]);
        r.value += p;
        double scale = std::fabs(double(wf[i]));
        if constexpr (is_affine<B>) scale += 3.0 * std::fabs(double(fp16_to_fp32(w[i / 32].m)));
        r.magnitude += scale * std::fabs(double(af[i]));
    }
    if constexpr (is_affine<B>) {
        for (std::size_t b = 0; b < w.size(); ++b) {
            int sum_q = 0;
            for (int8_t q : a[b].qs) sum_q += q;
            const double m = fp16_to_fp32(w[b].m), s = fp16_to_fp32(a[b].s);
            r.correction += m * (s - double(fp16_to_fp32(a[b].d)) * sum_q);
            r.s_share += std::fabs(m * s);
        }
        r.value += r.correction;
    }
    return r;
}

// Checks vec_dot(w, a) against the truth; `what` names the case.
template <class B>
void check_dot(const std::vector<B>& w, const std::vector<typename B::vec_dot_type>& a, const std::string& what) {
    const int64_t n = int64_t(w.size()) * B::block_size;
    const reference r = reference_dot(w, a);
    const float got = vec_dot(w.data(), a.data(), n);
    const int64_t float_sums = n / 32;  // blocks of 32, or IQ4_XS's sub-blocks
    const double bound = double(float_sums + 4) * std::ldexp(1.0, -24) * r.magnitude;
    INFO(std::string(B::name) << ", " << what << ", n = " << n << ": vec_dot " << got << ", truth " << r.value << ", bound " << bound
                 << ", M " << r.magnitude << ", s correction " << r.correction);
    if (r.magnitude == 0.0) {  // all weights zero (a short row of zero_blocks)
        CHECK(got == 0.0f);
        return;
    }
    CHECK(std::fabs(double(got) - r.value) <= bound);
    // One term is about M/n; the bound must stay well below it for the check to mean something.
    CHECK(bound * double(n) < 0.05 * r.magnitude);
    // Q4_1/Q5_1: the correction is s's fp16 rounding (2⁻¹¹) and that of d (2⁻¹¹), no more.
    if constexpr (is_affine<B>) CHECK(std::fabs(r.correction) <= std::ldexp(1.0, -10) * 1.01 * r.s_share);
}

}  // namespace

TEST_CASE("vec_dot equals the exact dot of the dequantized weights and activations") {
    for_each_dot_type([](auto tag) {
        using B = typename decltype(tag)::type;
        using A = typename B::vec_dot_type;
        constexpr int64_t bs = B::block_size;
        for (const int64_t n : {bs, 2 * bs, 11 * bs, int64_t(4096)}) {
            for (const auto dist : testing::all_distributions) {
                for (uint64_t seed = 1; seed <= 4; ++seed) {
                    const std::vector<float> wf = testing::generate(dist, n, seed);
                    const std::vector<float> af = testing::gaussian(n, seed ^ 0x5bd1e995u);
                    std::vector<B> w(std::size_t(n / bs));
                    std::vector<A> a(std::size_t(n / A::block_size));
                    quantize_row(wf.data(), w.data(), n);
                    quantize_row(af.data(), a.data(), n);
                    check_dot(w, a, std::string(testing::to_string(dist)) + " weights, seed " + std::to_string(seed));
                }
            }
        }
    });
}

TEST_CASE("vec_dot on ggml's random block bytes (every code and scale code) equals the exact dot") {
    for_each_dot_type([](auto tag) {
        using B = typename decltype(tag)::type;
        using A = typename B::vec_dot_type;
        const llmrt_test::golden_file g = llmrt_test::read_golden(llmrt_test::golden_path(B::name));
        REQUIRE(g.row_size == row_size(B::id, g.n));
        for (uint32_t r = 0; r < g.nrows_r; ++r) {
            std::vector<B> w(std::size_t(g.n / B::block_size));
            std::memcpy(w.data(), g.rb.data() + std::size_t(r) * g.row_size, g.row_size);
            const std::vector<float> af = testing::gaussian(g.n, 40 + r);
            std::vector<A> a(std::size_t(g.n / A::block_size));
            quantize_row(af.data(), a.data(), g.n);
            check_dot(w, a, "random row " + std::to_string(r));
        }
    });
}

TEST_CASE("an all-zero row dots to zero") {
    for_each_dot_type([](auto tag) {
        using B = typename decltype(tag)::type;
        using A = typename B::vec_dot_type;
        const int64_t n = 512;
        const std::vector<float> zeros(std::size_t(n), 0.0f);
        const std::vector<float> act = testing::gaussian(n, 3);
        std::vector<B> w(std::size_t(n / B::block_size));
        std::vector<A> a(std::size_t(n / A::block_size));
        quantize_row(zeros.data(), w.data(), n);
        quantize_row(act.data(), a.data(), n);
        for (float v : dequantized(w)) REQUIRE(v == 0.0f);
        CHECK(vec_dot(w.data(), a.data(), n) == 0.0f);
    });
}
