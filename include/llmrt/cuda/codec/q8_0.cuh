// Q8_0 on the device (layout in llmrt/quant/q8_0.hpp): d (fp16) at 0, qs[32] int8 at 2.
//
// Canonical order, per 32-block b with I = Σ qs·qx:  acc = fma(dw·dx, I, acc).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>

#include "llmrt/cuda/codec/block32.cuh"
#include "llmrt/quant/q8_0.hpp"

namespace llmrt::cuda {

namespace detail {

struct q8_0_bits {
    static constexpr int align = 2;
    static constexpr int d_at = int(offsetof(q8_0, d)), qs_at = int(offsetof(q8_0, qs));  // llmrt::q8_0
    static constexpr bool paired_fragments = false;
    __device__ __forceinline__ static float scale(const uint8_t* block, int) { return ptx::load_fp16(block + d_at); }
    __device__ __forceinline__ static void values(const uint8_t* block, int, uint32_t (&v)[8]) {
        ptx::load_words<align>(block + qs_at, v);
    }
    static constexpr int a_parts = 1;
    template <int Residue>
    __device__ __forceinline__ static void a_fragment(const uint8_t* block, int, int t, uint32_t (&w)[2]) {
        w[0] = ptx::load_u32_at<align, ptx::residue_after(Residue, qs_at)>(block + qs_at + 4 * t);
        w[1] = ptx::load_u32_at<align, ptx::residue_after(Residue, qs_at + 16)>(block + qs_at + 16 + 4 * t);
    }
};

}  // namespace detail

// dot_part and mma_step: codec/block32.cuh.
template <>
struct device_codec<q8_0> : detail::block32_codec<q8_0, detail::q8_0_bits> {
    __device__ static float dot_q8_1(const q8_0& w, const q8_1* x) {
        const detail::q8_1_words xq = detail::load_q8_1(x[0]);
        const uint8_t* qs = reinterpret_cast<const uint8_t*>(w.qs);
        int sum = 0;
#pragma unroll
        for (int j = 0; j < 8; ++j) sum = __dp4a(int(detail::bytes_to_u32(qs + 4 * j)), xq.q[j], sum);
        return detail::mul_rn(detail::mul_rn(__half2float(__ushort_as_half(w.d)), xq.d), detail::to_float(sum));
    }
};

}  // namespace llmrt::cuda
