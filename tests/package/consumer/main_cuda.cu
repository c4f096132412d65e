// Compiles against llmrt::cuda from an installed package: a kernel of the consumer's own that
// dots one Q8_0 weight block with one Q8_1 activation block through llmrt's device codec, and
// the same on the host through the reference codecs. Without a GPU it says so and succeeds: the
// point is that the installed headers compile and link with nvcc.
#include <llmrt/cuda/codecs.cuh>
#include <llmrt/llmrt.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

__global__ void dot_one_block(const llmrt::q8_0* w, const llmrt::q8_1* x, float* y) {
    *y = llmrt::cuda::dot_q8_1(*w, x);
}

int main() {
    std::vector<float> wf(32), xf(32), wd(32), xd(32);
    for (int i = 0; i < 32; ++i) wf[i] = float(i % 7) - 3.0f, xf[i] = 0.25f * float(i % 5) - 0.5f;
    llmrt::q8_0 w{};
    llmrt::q8_1 x{};
    llmrt::quantize_row(wf.data(), &w, 32);
    llmrt::quantize_row(xf.data(), &x, 32);
    llmrt::dequantize_row(&w, wd.data(), 32);
    llmrt::dequantize_row(&x, xd.data(), 32);
    double expected = 0.0;
    for (int i = 0; i < 32; ++i) expected += double(wd[i]) * double(xd[i]);

    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("llmrt::cuda from the installed package: compiled and linked; no CUDA device to run on\n");
        return 0;
    }
    llmrt::q8_0* dw = nullptr;
    llmrt::q8_1* dx = nullptr;
    float* dy = nullptr;
    float y = 0.0f;
    bool ok = cudaMalloc(&dw, sizeof w) == cudaSuccess && cudaMalloc(&dx, sizeof x) == cudaSuccess &&
              cudaMalloc(&dy, sizeof y) == cudaSuccess &&
              cudaMemcpy(dw, &w, sizeof w, cudaMemcpyHostToDevice) == cudaSuccess &&
              cudaMemcpy(dx, &x, sizeof x, cudaMemcpyHostToDevice) == cudaSuccess;
    if (ok) {
        dot_one_block<<<1, 1>>>(dw, dx, dy);
        ok = cudaMemcpy(&y, dy, sizeof y, cudaMemcpyDeviceToHost) == cudaSuccess;
    }
    cudaFree(dw), cudaFree(dx), cudaFree(dy);
    std::printf("llmrt::cuda from the installed package: device dot %g, host %g\n", double(y), expected);
    return ok && std::fabs(double(y) - expected) <= 1e-4 * (1.0 + std::fabs(expected)) ? 0 : 1;
}
