// The random llama models llmrt generates load in PyPI gguf's GGUFReader with the metadata,
// tensor names, types and shapes llmrt wrote, and gguf's dequantization of their embedding gives
// llmrt's values bit for bit.
//
// Needs the python3 found at configure time (LLMRT_PYTHON3) with gguf and numpy; a missing module
// fails the test saying so.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model_fixtures.hpp"

#ifndef LLMRT_PYTHON3
#error "LLMRT_PYTHON3 must name the Python interpreter (tests/model/CMakeLists.txt defines it)"
#endif

using namespace llmrt;

namespace {

const std::string python = LLMRT_PYTHON3;

std::string quoted(const std::string& s) {
    std::string q(1, '\'');
    for (char c : s) {
        if (c == '\'') q.append("'\\''");
        else q.push_back(c);
    }
    return q + '\'';
}

int run(const std::string& command) {
    std::fflush(stdout);
    const int status = std::system(command.c_str());
    if (status == -1 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

struct scratch {
    std::filesystem::path dir = std::filesystem::temp_directory_path() / ("llmrt_model_test_" + std::to_string(::getpid()));
    scratch() { std::filesystem::create_directories(dir); }
    ~scratch() {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
};

void check_with_python(const model::llama_shape& shape, qtype t) {
    REQUIRE_MESSAGE(!python.empty(), "no python3 was found when CMake configured llmrt");
    REQUIRE_MESSAGE(run(quoted(python) + " -c 'import gguf, numpy' 2>&1") == 0,
                    "the Python module gguf (or numpy) is missing: `" << python << " -m pip install gguf numpy`");
    scratch s;
    const auto path = s.dir / "model.gguf", expected = s.dir / "expected.txt", embd = s.dir / "token_embd.f32";
    const gguf::writer w = model::make_random_llama(shape, t, 5);
    w.write(path);

    // What llmrt wrote, and what llmrt reads back from the file on disk.
    const gguf::file f = gguf::file::open(path);
    std::ofstream lines(expected);
    for (const char* key : {"general.architecture", "llama.context_length", "llama.embedding_length", "llama.block_count",
                            "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
                            "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon", "tokenizer.ggml.model"}) {
        const gguf::value& v = f.metadata().at(key);
        lines << key << ' ';
        std::visit(
            [&](const auto& x) {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, std::string>) lines << x;
                else if constexpr (std::is_same_v<T, float>) lines << double(x);
                else if constexpr (std::is_integral_v<T>) lines << int64_t(x);
            },
            v);
        lines << '\n';
    }
    for (const auto& info : f.tensors()) {
        lines << "tensor " << info.name << ' ' << info.type_name();
        for (uint32_t d = 0; d < info.n_dims; ++d) lines << ' ' << info.ne[d];
        lines << '\n';
    }
    lines.close();
    const auto& te = f.tensor("token_embd.weight");
    std::vector<float> values(std::size_t(te.elements()));
    dequantize(te.type(), te.data, values.data(), te.elements());
    std::ofstream(embd, std::ios::binary).write(reinterpret_cast<const char*>(values.data()),
                                                std::streamsize(values.size() * sizeof(float)));

    const auto script = std::filesystem::path(LLMRT_SOURCE_DIR) / "tests" / "model" / "check_model_with_gguf.py";
    CHECK(run(quoted(python) + " -B " + quoted(script.string()) + " " + quoted(path.string()) + " " +
              quoted(expected.string()) + " " + quoted(embd.string()) + " 2>&1") == 0);

    // And the same file runs in llmrt.
    cpu::backend b;
    model::llama_model<cpu::backend> m(b, gguf::file::open(path), {.n_ctx = 16});
    const std::vector<int32_t> tok{1, 2}, pos{0, 1};
    CHECK(m.forward(tok, pos).size() == 2 * std::size_t(shape.n_vocab));
}

}  // namespace

TEST_CASE("a generated q8_0 llama model loads in gguf's GGUFReader as llmrt wrote it") {
    check_with_python(test::small_shape(qtype::q8_0), qtype::q8_0);
}

TEST_CASE("a generated q4_K llama model with a tied output loads in gguf's GGUFReader as llmrt wrote it") {
    auto shape = test::small_shape(qtype::q4_K);
    shape.tied_output = true;
    check_with_python(shape, qtype::q4_K);
}
