// Test inputs for the mat-vec shaders: random weight blocks with sane scales (every bit pattern of
// the quants, scales that keep the values finite and of ordinary size), seeded and reproducible.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/types.hpp"
#include "llmrt/testing/generate.hpp"

namespace llmrt::testing {

// Random bytes for every field, then the scale fields set: fp16 d in [0.001, 0.01], fp16 dmin in
// [0.0005, 0.005], fp16 m in [-0.005, 0.005], E8M0 e in 120..130 (2^-8 .. 2^2 with MXFP4's halving).
template <class B>
void set_sane_scales(B& block, uint64_t seed, uint64_t index) {
    auto draw = [&](uint64_t stream, float lo, float hi) {
        const double u = double(random_bits(seed, stream, index) >> 40) * 0x1p-24;
        return fp32_to_fp16(float(lo + (hi - lo) * u));
    };
    if constexpr (requires(B& b) { b.e; }) {
        block.e = uint8_t(120 + random_bits(seed, 101, index) % 11);
    } else {
        block.d = draw(102, 0.001f, 0.01f);
    }
    if constexpr (requires(B& b) { b.dmin; }) block.dmin = draw(103, 0.0005f, 0.005f);
    if constexpr (requires(B& b) { b.m; }) block.m = draw(104, -0.005f, 0.005f);  // Q4_1, Q5_1: x = d·q + m
}

// `count` blocks of B as bytes.
template <class B>
std::vector<uint8_t> random_blocks(int64_t count, uint64_t seed) {
    std::vector<uint8_t> bytes(std::size_t(count) * sizeof(B));
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(random_bits(seed, 100, i) >> 56);
    for (int64_t b = 0; b < count; ++b) {
        B block;
        std::memcpy(&block, bytes.data() + std::size_t(b) * sizeof(B), sizeof(B));
        set_sane_scales(block, seed, uint64_t(b));
        std::memcpy(bytes.data() + std::size_t(b) * sizeof(B), &block, sizeof(B));
    }
    return bytes;
}

// The same for a runtime type of weight_types.
inline std::vector<uint8_t> random_weights(qtype type, int64_t rows, int64_t k, uint64_t seed) {
    return dispatch<weight_types>(type, "testing::random_weights", [&](auto tag) {
        using B = typename decltype(tag)::type;
        return random_blocks<B>(rows * (k / B::block_size), seed);
    });
}

}  // namespace llmrt::testing
