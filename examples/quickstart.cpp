// llmrt quickstart: quantize a random matrix into every weight type, run the CPU reference
// mat-vec, and print what each type costs and how close it stays to float.
//
//   llmrt-quickstart [rows] [k]
#include <llmrt/llmrt.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

// A whole number in [1, max] with nothing after it, or an llmrt::error naming the argument.
static int64_t positive(const char* text, const char* what, int64_t max) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < 1 || v > max)
        throw llmrt::error(llmrt::errc::invalid_argument, std::string(what) + " must be a whole number in [1, " +
                                                              std::to_string(max) + "], got '" + text + "'");
    return v;
}

int main(int argc, char** argv) {
    const int64_t ncols = 4;
    try {
        if (argc > 3) throw llmrt::error(llmrt::errc::invalid_argument, "usage: llmrt-quickstart [rows] [k]");
        const int64_t rows = argc > 1 ? positive(argv[1], "rows", 65536) : 512;
        const int64_t k = argc > 2 ? positive(argv[2], "k", 65536) : 4096;
        if (k % 256 != 0)  // the K-quants' block
            throw llmrt::error(llmrt::errc::invalid_argument, "k must be a multiple of 256, got " + std::to_string(k));

        std::mt19937 rng(42);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> w(std::size_t(rows * k)), x(std::size_t(k * ncols));
        for (auto& v : w) v = normal(rng);
        for (auto& v : x) v = normal(rng);

        // The float result every quantized type is measured against.
        std::vector<float> y_ref(std::size_t(rows * ncols)), y(y_ref.size());
        llmrt::cpu::matvec(llmrt::qtype::f32, w.data(), x.data(), y_ref.data(), {rows, k, ncols});
        double ref_power = 0;
        for (float v : y_ref) ref_power += double(v) * v;

        std::printf("W: %lld x %lld Gaussian, X: %lld columns; y = W·x on the CPU reference\n\n", (long long)rows,
                    (long long)k, (long long)ncols);
        std::printf("%-6s %16s %12s %22s\n", "type", "bits per weight", "bytes", "relative error of y");
        llmrt::weight_types::for_each([&](auto tag) {
            using B = typename decltype(tag)::type;
            constexpr llmrt::qtype t = B::id;
            const std::size_t row_bytes = llmrt::row_size(t, k);
            std::vector<unsigned char> wq(row_bytes * std::size_t(rows));
            for (int64_t r = 0; r < rows; ++r) llmrt::quantize(t, w.data() + r * k, wq.data() + r * row_bytes, k);

            // What a GPU kernel computes: activations rounded through Q8_1, integer-friendly weights.
            llmrt::cpu::matvec(t, wq.data(), x.data(), y.data(), {rows, k, ncols}, llmrt::cpu::activation_format::q8_1);
            double err = 0;
            for (std::size_t i = 0; i < y.size(); ++i) err += (double(y[i]) - y_ref[i]) * (double(y[i]) - y_ref[i]);
            std::printf("%-6s %16.4f %12zu %21.3f%%\n", B::name, llmrt::quant_traits<B>::bits_per_weight, wq.size(),
                        100.0 * std::sqrt(err / ref_power));
        });
        std::printf("\n(f32 would take %zu bytes)\n", llmrt::row_size(llmrt::qtype::f32, k) * std::size_t(rows));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());  // llmrt::error's message starts "llmrt: "
        return 1;
    }
    return 0;
}
