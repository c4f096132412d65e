// The CUDA helpers of llmrt/testing/cuda.hpp: poison a device buffer, copy back and compare in one
// call, and CUDA runtime failures as llmrt::error. The cases that need a GPU are skipped, with the
// reason printed, where cudaGetDeviceCount finds none.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "llmrt/testing.hpp"
#include "llmrt/testing/cuda.hpp"

using namespace llmrt::testing;

namespace {

// cudaGetDeviceCount's verdict, asked once.
struct device_probe {
    cudaError_t status = cudaSuccess;
    int count = 0;
    device_probe() { status = cudaGetDeviceCount(&count); }
    bool present() const { return status == cudaSuccess && count > 0; }
};
const device_probe& probe() {
    static const device_probe p;
    return p;
}
bool no_device() { return !probe().present(); }

// y[i] = 2·x[i] for the elements with i % stride == 0: stride 1 writes all, stride 2 skips the odd ones.
__global__ void double_every(const float* x, float* y, int n, int stride) {
    const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n && i % stride == 0) y[i] = 2.0f * x[i];
}

// A device buffer of n floats, freed on scope exit.
struct device_floats {
    float* ptr = nullptr;
    explicit device_floats(int64_t n) { check_cuda(cudaMalloc(&ptr, std::size_t(n) * sizeof(float)), "cudaMalloc"); }
    ~device_floats() { cudaFree(ptr); }
    device_floats(const device_floats&) = delete;
    device_floats& operator=(const device_floats&) = delete;
};

// Runs double_every on x and returns the device output, poisoned before the launch.
void run_double_every(const std::vector<float>& x, const device_floats& d_x, const device_floats& d_y, int stride) {
    const int n = int(x.size());
    check_cuda(cudaMemcpy(d_x.ptr, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    poison_device(d_y.ptr, n);
    double_every<<<(n + 127) / 128, 128>>>(d_x.ptr, d_y.ptr, n, stride);
    check_cuda(cudaGetLastError(), "double_every launch");
}

}  // namespace

TEST_CASE("the CUDA device probe says whether the device cases run") {
    if (no_device())
        MESSAGE((std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(probe().status) + ", count " +
                std::to_string(probe().count) + "): the device cases are skipped"));
    CHECK((probe().status == cudaSuccess || probe().count == 0));
}

TEST_CASE("a failed CUDA runtime call becomes llmrt::error with device_error naming the call") {
    try {
        check_cuda(cudaErrorMemoryAllocation, "cudaMalloc (a test)");
        FAIL_CHECK("check_cuda did not throw");
    } catch (const llmrt::error& e) {
        CHECK(e.code() == llmrt::errc::device_error);
        const std::string what = e.what();
        CHECK(what.find("cudaMalloc (a test) failed") != std::string::npos);
        CHECK(what.find("cudaErrorMemoryAllocation") != std::string::npos);
    }
    CHECK_NOTHROW(check_cuda(cudaSuccess, "nothing"));
}

TEST_CASE("poison_device fills a device buffer with poison_bits" * doctest::skip(no_device())) {
    const int64_t n = 1000;
    device_floats d_y(n);
    poison_device(d_y.ptr, n);
    const std::vector<float> back = copy_to_host(d_y.ptr, n);
    CHECK(unwritten(back.data(), n).size() == std::size_t(n));
}

TEST_CASE("compare_device of a kernel that writes every element matches the reference exactly" *
          doctest::skip(no_device())) {
    const std::vector<float> x = gaussian(1000, 61);
    std::vector<float> ref(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) ref[i] = 2.0f * x[i];
    device_floats d_x(1000), d_y(1000);
    run_double_every(x, d_x, d_y, 1);
    const readback_report r = compare_device(d_y.ptr, ref);
    CHECK(r.complete());
    CHECK(r.nmse == 0.0);
    CHECK(r.max_abs_error == 0.0);
}

TEST_CASE("compare_device reports the elements a kernel skipped with their indices" * doctest::skip(no_device())) {
    const std::vector<float> x = uniform(301, 62);
    std::vector<float> ref(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) ref[i] = 2.0f * x[i];
    device_floats d_x(301), d_y(301);
    run_double_every(x, d_x, d_y, 2);
    const readback_report r = compare_device(d_y.ptr, ref.data(), 301);
    REQUIRE(r.unwritten.size() == 150);
    CHECK(r.unwritten.front() == 1);
    CHECK(r.unwritten.back() == 299);
    CHECK(r.nan_count == 150);
    CHECK_FALSE(r.complete());
    CHECK(r.describe(ref.data()).find("[1] got unwritten (poison)") != std::string::npos);
}

TEST_CASE("copying from an address that is not device memory raises llmrt::error" * doctest::skip(no_device())) {
    const float* bogus = reinterpret_cast<const float*>(uintptr_t(0x10));
    CHECK_THROWS_AS(copy_to_host(bogus, 4), llmrt::error);
    CHECK_THROWS_AS(copy_to_host(nullptr, 4), llmrt::error);
    CHECK(copy_to_host(nullptr, 0).empty());
}
