// Shared pieces of the CUDA tests: the device probe that decides whether a case runs, a device
// buffer, and random weight blocks that exercise every bit pattern.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "llmrt/core/float_convert.hpp"
#include "llmrt/quant/types.hpp"
#include "llmrt/testing.hpp"
#include "llmrt/testing/cuda.hpp"

namespace llmrt_cuda_test {

// The weight types every CUDA test runs over: llmrt::weight_types as the std::tuple that doctest's
// TEST_CASE_TEMPLATE_APPLY takes (a test case per type, named after it), so a type added to the
// list is tested with no edit here.
template <class List>
struct as_tuple;
template <class... Ts>
struct as_tuple<llmrt::type_list<Ts...>> {
    using type = std::tuple<Ts...>;
};
using weight_type_tuple = as_tuple<llmrt::weight_types>::type;

using llmrt::testing::check_cuda;

// cudaGetDeviceCount's verdict, asked once.
struct device_probe {
    cudaError_t status = cudaSuccess;
    int count = 0;
    device_probe() { status = cudaGetDeviceCount(&count); }
    bool present() const { return status == cudaSuccess && count > 0; }
    std::string why_absent() const {
        return std::string("skipped: no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(status) + ", count " +
               std::to_string(count) + ")";
    }
};
inline const device_probe& probe() {
    static const device_probe p;
    return p;
}

// Ends the test case, passing, with a message when no device is present.
#define LLMRT_CUDA_TEST_NEEDS_DEVICE()                         \
    do {                                                       \
        if (!::llmrt_cuda_test::probe().present()) {           \
            MESSAGE(::llmrt_cuda_test::probe().why_absent());  \
            return;                                            \
        }                                                      \
    } while (0)

// Device memory of `bytes` bytes, freed on scope exit.
struct device_buffer {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    explicit device_buffer(std::size_t n) : bytes(n) {
        check_cuda(cudaMalloc(&ptr, n == 0 ? 1 : n), "cudaMalloc");
    }
    ~device_buffer() { cudaFree(ptr); }
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;

    template <class T>
    T* as() const { return static_cast<T*>(ptr); }
    template <class T>
    void upload(const std::vector<T>& host, std::size_t offset_bytes = 0) {
        check_cuda(cudaMemcpy(static_cast<uint8_t*>(ptr) + offset_bytes, host.data(), host.size() * sizeof(T),
                              cudaMemcpyHostToDevice),
                   "cudaMemcpy to device");
    }
    template <class T>
    std::vector<T> download(std::size_t count, std::size_t offset_bytes = 0) const {
        std::vector<T> host(count);
        check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        check_cuda(cudaMemcpy(host.data(), static_cast<const uint8_t*>(ptr) + offset_bytes, count * sizeof(T),
                              cudaMemcpyDeviceToHost),
                   "cudaMemcpy to host");
        return host;
    }
};

// A small finite fp16 in [0.5, 1.5)·2^-7, so sums of a few thousand products stay far from overflow.
inline uint16_t small_scale(uint64_t bits) {
    return llmrt::fp32_to_fp16(float(0.5 + double(bits >> 40) * 0x1p-24) * 0x1p-7f);
}

// Random bytes for `count` blocks of B, then sane scale fields: every fp16 d/dmin small and
// finite, every E8M0 exponent in 120..130. Every other bit pattern occurs.
template <class B>
std::vector<uint8_t> random_blocks(int64_t count, uint64_t seed) {
    std::vector<uint8_t> bytes(std::size_t(count) * sizeof(B));
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = uint8_t(llmrt::testing::random_bits(seed, 7, i) >> 56);
    for (int64_t b = 0; b < count; ++b) {
        uint8_t* block = bytes.data() + std::size_t(b) * sizeof(B);
        auto set_fp16 = [&](std::size_t offset, uint64_t salt) {
            const uint16_t h = small_scale(llmrt::testing::random_bits(seed, 8 + salt, uint64_t(b)));
            std::memcpy(block + offset, &h, 2);
        };
        if constexpr (std::is_same_v<B, llmrt::q8_0>) {
            set_fp16(offsetof(llmrt::q8_0, d), 0);
        } else if constexpr (std::is_same_v<B, llmrt::mxfp4>) {
            block[0] = uint8_t(120 + llmrt::testing::random_bits(seed, 9, uint64_t(b)) % 11);
        } else if constexpr (std::is_same_v<B, llmrt::q2_K>) {
            set_fp16(offsetof(llmrt::q2_K, d), 0);
            set_fp16(offsetof(llmrt::q2_K, dmin), 1);
        } else if constexpr (std::is_same_v<B, llmrt::q3_K>) {
            set_fp16(offsetof(llmrt::q3_K, d), 0);
        } else if constexpr (std::is_same_v<B, llmrt::q4_K>) {
            set_fp16(offsetof(llmrt::q4_K, d), 0);
            set_fp16(offsetof(llmrt::q4_K, dmin), 1);
        } else if constexpr (std::is_same_v<B, llmrt::q5_K>) {
            set_fp16(offsetof(llmrt::q5_K, d), 0);
            set_fp16(offsetof(llmrt::q5_K, dmin), 1);
        } else if constexpr (std::is_same_v<B, llmrt::q6_K>) {
            set_fp16(offsetof(llmrt::q6_K, d), 0);
        } else if constexpr (llmrt::nibble32_block<B>) {
            constexpr llmrt::nibble32_layout L = llmrt::block_layout<B>::value;
            set_fp16(std::size_t(L.d), 0);
            if constexpr (L.m >= 0) set_fp16(std::size_t(L.m), 1);
        } else {
            static_assert(llmrt::detail::always_false<B>, "random_blocks: add this type's scale fields");
        }
    }
    return bytes;
}

// The block sizes k takes in the tests: multiples of the block size that are not multiples of
// the 256-element substep (for 32-element types), of mmvq's k-split unit (1, 2 or 4 substeps) or
// of a warp's share of it.
template <class B>
std::vector<int64_t> test_ks() {
    // The last k has 17 substeps: 9 units of 2 (MXFP4), enough for the largest k-split (8 warps),
    // unevenly shared. For 256-element types, 33 substeps: 9 units of 4 (Q2_K, Q3_K), the same.
    if constexpr (B::block_size == 32) return {32, 32 * 11, 256 * 3, 256 * 4 + 32 * 5, 256 * 16 + 32 * 3};
    else return {256, 256 * 3, 256 * 5, 256 * 17, 256 * 33};
}
inline const std::vector<int64_t>& test_rows() {
    static const std::vector<int64_t> rows = {1, 7, 33, 257};
    return rows;
}

inline bool bits_equal(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace llmrt_cuda_test
