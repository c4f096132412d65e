// Counter-based random numbers: the uniform for (seed, position, stream) is a pure function of
// those three values, so a run is reproducible from its seed, and rolling back after a partially
// accepted draft needs no RNG state at all (the position is the counter).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <array>
#include <cstdint>

namespace llmrt::sample {

using philox_counter = std::array<uint32_t, 4>;
using philox_key = std::array<uint32_t, 2>;

// Philox-4x32 with 10 rounds (Salmon, Moraes, Dror, Shaw, SC'11). Each round:
//   (hi0, lo0) = M0·c0, (hi1, lo1) = M1·c2   (32×32 → 64-bit products)
//   c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0),  then k += (W0, W1)  (Weyl key schedule)
constexpr philox_counter philox4x32_10(philox_counter c, philox_key k) noexcept {
    constexpr uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
    constexpr uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
        const uint64_t p0 = uint64_t(m0) * c[0];
        const uint64_t p1 = uint64_t(m1) * c[2];
        c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
        k[0] += w0;
        k[1] += w1;
    }
    return c;
}

// Which consumer a draw belongs to. Different streams at the same position are independent.
// The target's token at sequence position t is always drawn from (seed, t, target_sample):
// plain decoding, sample-and-compare verification and the bonus token of speculative sampling
// therefore draw the same number for the same position.
enum class rng_stream : uint32_t {
    target_sample = 0,  // the target sampler chain's draw for the token at a position
    accept_coin = 1,    // speculative sampling: the coin r of the min(1, p/q) test
    residual = 2,       // speculative sampling: the draw from norm(max(0, p − q)) after a rejection
    draft_sample = 3,   // a sampling draft model's own draw
};

// A uniform double in [0, 1) with 53 random bits: counter = (position lo, position hi, stream,
// 0), key = (seed lo, seed hi).
constexpr double uniform01(uint64_t seed, uint64_t position, rng_stream stream) noexcept {
    const philox_counter out = philox4x32_10(
        {uint32_t(position), uint32_t(position >> 32), uint32_t(stream), 0u}, {uint32_t(seed), uint32_t(seed >> 32)});
    const uint64_t bits = ((uint64_t(out[0]) << 32) | out[1]) >> 11;
    return double(bits) * 0x1.0p-53;
}

}  // namespace llmrt::sample
