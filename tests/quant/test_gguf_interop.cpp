// PyPI's gguf package (ggml's own numpy dequantizers) reads llmrt's bytes as llmrt does.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include <llmrt/llmrt.hpp>

using namespace llmrt;

namespace {
template <class T>
void write_file(const std::filesystem::path& path, const std::vector<T>& data) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(T)));
    REQUIRE(out.good());
}
}  // namespace

TEST_CASE("gguf's numpy dequantization of llmrt's bytes equals llmrt's, for every type gguf knows") {
    const auto dir = std::filesystem::temp_directory_path() / ("llmrt-gguf-interop-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream index(dir / "index.txt");
    const int64_t rows = 6, n = 1024;
    std::mt19937 rng(99);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(std::size_t(rows * n));
    for (auto& v : x) v = normal(rng) * (1.0f + float(rng() % 4));
    x[5] = 0.0f;
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // a whole zero super-block

    all_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        std::vector<uint8_t> q(row_size(B::id, n) * rows);
        std::vector<float> dq(x.size());
        quantize(B::id, x.data(), q.data(), rows * n);
        dequantize(B::id, q.data(), dq.data(), rows * n);
        write_file(dir / (std::string(B::name) + ".q"), q);
        write_file(dir / (std::string(B::name) + ".f32"), dq);
        index << B::name << ' ' << uint32_t(B::id) << ' ' << rows << ' ' << n << '\n';
    });
    index.close();

    const std::string command = std::string(LLMRT_PYTHON) + " " + LLMRT_SOURCE_DIR +
                                "/tests/quant/gguf_dequantize_check.py " + dir.string() + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
    const int status = pclose(pipe);
    MESSAGE(output);
    CHECK(status == 0);
    CHECK(output.find("ok q4_K") != std::string::npos);
    std::filesystem::remove_all(dir);
}
