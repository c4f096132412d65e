// Quantizes and dequantizes through the public API, as any user program would.
#include <llmrt/llmrt.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
    const int64_t n = 512;
    std::vector<float> x(n), y(n);
    for (int64_t i = 0; i < n; ++i) x[i] = std::sin(0.37f * float(i));
    for (llmrt::qtype t : {llmrt::qtype::q4_K, llmrt::qtype::q8_0, llmrt::qtype::mxfp4}) {
        std::vector<unsigned char> q(llmrt::row_size(t, n));
        llmrt::quantize(t, x.data(), q.data(), n);
        llmrt::dequantize(t, q.data(), y.data(), n);
        double se = 0;
        for (int64_t i = 0; i < n; ++i) se += (x[i] - y[i]) * (x[i] - y[i]);
        const double rmse = std::sqrt(se / double(n));
        std::printf("%s: %zu bytes, rmse %.4f\n", llmrt::name(t), q.size(), rmse);
        if (!(rmse < 0.2)) return 1;
    }
    try {
        llmrt::row_size(llmrt::qtype::q4_K, 100);
        return 1;
    } catch (const llmrt::error& e) {
        std::printf("rejected as expected: %s\n", e.what());
    }
    return 0;
}
