// Reader for ggml's golden quantizer vectors (tests/data/ggml-golden/README.md).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <llmrt/llmrt.hpp>

namespace llmrt_test {

struct golden_file {
    uint32_t type = 0, n = 0, nrows_q = 0, nrows_r = 0, row_size = 0;
    std::vector<float> in, dq, rdq;
    std::vector<uint8_t> q, rb;
};

inline std::string golden_path(const char* type_name) {
    return std::string(LLMRT_GOLDEN_DIR) + "/golden_" + type_name + ".bin";
}

// Reads one golden file; llmrt::error when it is missing or shorter than its header says.
inline golden_file read_golden(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    llmrt::check(bool(in), llmrt::errc::io_error, [&] { return "cannot open " + path; });
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t pos = 0;
    auto take = [&](void* dst, std::size_t size) {
        llmrt::check(pos + size <= bytes.size(), llmrt::errc::corrupt_file,
                     [&] { return path + ": truncated at offset " + std::to_string(pos); });
        std::memcpy(dst, bytes.data() + pos, size);
        pos += size;
    };
    golden_file g;
    uint32_t magic = 0;
    take(&magic, 4);
    llmrt::check(magic == 0x4c4d5254u, llmrt::errc::corrupt_file, [&] { return path + ": bad magic"; });
    take(&g.type, 4);
    take(&g.n, 4);
    take(&g.nrows_q, 4);
    take(&g.nrows_r, 4);
    take(&g.row_size, 4);
    auto take_vec = [&](auto& v, std::size_t count) {
        v.resize(count);
        take(v.data(), count * sizeof(v[0]));
    };
    take_vec(g.in, std::size_t(g.nrows_q) * g.n);
    take_vec(g.q, std::size_t(g.nrows_q) * g.row_size);
    take_vec(g.dq, std::size_t(g.nrows_q) * g.n);
    take_vec(g.rb, std::size_t(g.nrows_r) * g.row_size);
    take_vec(g.rdq, std::size_t(g.nrows_r) * g.n);
    return g;
}

}  // namespace llmrt_test
