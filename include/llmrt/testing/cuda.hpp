// Host helpers for testing CUDA kernels: poison a device output buffer before the launch, then
// copy it back and compare it with the CPU reference in one call.
//
//   float* d_y = ...;                                   // the kernel's output, n floats
//   llmrt::testing::poison_device(d_y, n);
//   my_kernel<<<grid, block>>>(..., d_y);
//   auto report = llmrt::testing::compare_device(d_y, ref.data(), n);   // synchronises
//   CHECK_MESSAGE(report.complete(), report.describe(ref.data()));
//   CHECK(report.nmse < 1e-6);
//
// Needs cuda_runtime.h (nvcc, or a host compiler with the CUDA include path and libcudart).
// A failed CUDA runtime call raises llmrt::error (errc::device_error) naming the call.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/testing/poison.hpp"
#include "llmrt/testing/readback.hpp"

namespace llmrt::testing {

// Raises llmrt::error (errc::device_error) when status is not cudaSuccess:
// "<call> failed: <cudaGetErrorName>: <cudaGetErrorString>".
inline void check_cuda(cudaError_t status, const char* call) {
    if (status == cudaSuccess) return;
    throw error(errc::device_error, std::string(call) + " failed: " + cudaGetErrorName(status) + ": " +
                                        cudaGetErrorString(status));
}

namespace detail {
inline void check_device_buffer(const void* device, int64_t n, const char* operation) {
    check(n >= 0, errc::invalid_argument,
          [&] { return std::string(operation) + ": negative element count " + std::to_string(n); });
    check(n == 0 || device != nullptr, errc::invalid_argument,
          [&] { return std::string(operation) + ": null device buffer for " + std::to_string(n) + " elements"; });
}
}  // namespace detail

// Fills n floats of device memory with poison_bits, ordered on `stream`; returns once the
// copy is done. (The 32-bit pattern is not one repeated byte, so cudaMemset cannot write it.)
inline void poison_device(float* device, int64_t n, cudaStream_t stream = nullptr) {
    detail::check_device_buffer(device, n, "testing::poison_device");
    if (n == 0) return;
    std::vector<float> host(static_cast<std::size_t>(n));
    poison(host.data(), n);
    check_cuda(cudaMemcpyAsync(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync (testing::poison_device)");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (testing::poison_device)");
}

// n floats copied from device memory after the work queued on `stream` is done.
inline std::vector<float> copy_to_host(const float* device, int64_t n, cudaStream_t stream = nullptr) {
    detail::check_device_buffer(device, n, "testing::copy_to_host");
    std::vector<float> host(static_cast<std::size_t>(n));
    if (n == 0) return host;
    check_cuda(cudaMemcpyAsync(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync (testing::copy_to_host)");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (testing::copy_to_host)");
    return host;
}

// Waits for `stream`, copies n floats back from `device` and compares them with the host
// reference ref: the error measures, the unwritten (still poisoned) indices and the host copy.
// A kernel fault surfaces here as llmrt::error naming the synchronising call.
inline readback_report compare_device(const float* device, const float* ref, int64_t n, cudaStream_t stream = nullptr) {
    check(n == 0 || ref != nullptr, errc::invalid_argument, "testing::compare_device: null reference");
    return compare_readback(copy_to_host(device, n, stream), ref, n);
}

// The same, for a reference held in a vector: ref.size() elements.
inline readback_report compare_device(const float* device, const std::vector<float>& ref, cudaStream_t stream = nullptr) {
    return compare_device(device, ref.data(), int64_t(ref.size()), stream);
}

// Device memory for a test, freed when it goes out of scope: count elements of T (and 16 bytes
// of slack past them, for kernels that load a last vector whole).
template <class T>
struct device_vector {
    T* ptr = nullptr;
    std::size_t count = 0;
    explicit device_vector(std::size_t n) : count(n) { check_cuda(cudaMalloc(&ptr, n * sizeof(T) + 16), "cudaMalloc"); }
    explicit device_vector(const std::vector<T>& host) : device_vector(host.size()) { upload(host); }
    device_vector(const device_vector&) = delete;
    device_vector& operator=(const device_vector&) = delete;
    ~device_vector() { cudaFree(ptr); }
    void upload(const std::vector<T>& host) {
        check_cuda(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    // The elements, once every launch before has finished.
    std::vector<T> download() const {
        std::vector<T> host(count);
        check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        check_cuda(cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
        return host;
    }
    void fill_bytes(int byte) { check_cuda(cudaMemset(ptr, byte, count * sizeof(T)), "cudaMemset"); }
};

}  // namespace llmrt::testing
