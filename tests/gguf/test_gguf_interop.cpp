// llmrt's GGUF files and PyPI gguf's agree in both directions. Each side describes a file as a
// manifest (sample_gguf.hpp, gguf_manifest.py): the writer from what it was given, the reader from
// what it read; the two must match line by line.
//
// Needs the python3 found at configure time (LLMRT_PYTHON3) with the gguf and numpy modules; a
// missing module fails the test with a message saying so.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sample_gguf.hpp"
#include "scratch_dir.hpp"

#ifndef LLMRT_PYTHON3
#error "LLMRT_PYTHON3 must name the Python interpreter (tests/gguf/CMakeLists.txt defines it)"
#endif

using namespace llmrt;

namespace {

const std::string python = LLMRT_PYTHON3;
const std::filesystem::path scripts = std::filesystem::path(LLMRT_SOURCE_DIR) / "tests" / "gguf";

// s in single quotes for the shell.
std::string quoted(const std::string& s) {
    std::string q(1, '\'');
    for (char c : s) {
        if (c == '\'') q.append("'\\''");
        else q.push_back(c);
    }
    q.push_back('\'');
    return q;
}

// Runs a shell command; its exit status (128 + signal when killed, -1 when it could not start).
int run(const std::string& command) {
    std::fflush(stdout);
    const int status = std::system(command.c_str());
    if (status == -1) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

int run_script(const char* script, const std::filesystem::path& gguf_path, const std::filesystem::path& manifest) {
    // -B: no __pycache__ written into the source tree.
    return run(quoted(python) + " -B " + quoted((scripts / script).string()) + " " + quoted(gguf_path.string()) + " " +
               quoted(manifest.string()) + " 2>&1");
}

void require_python_gguf() {
    REQUIRE_MESSAGE(!python.empty(), "no python3 was found when CMake configured llmrt (find_package(Python3))");
    const int status = run(quoted(python) + " -c 'import gguf, numpy' 2>&1");
    REQUIRE_MESSAGE(status == 0, "the Python module gguf (or numpy) is missing for "
                                     << python << ": install it with `" << python << " -m pip install gguf numpy`");
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

void write_lines(const std::filesystem::path& path, const std::vector<std::string>& lines) {
    std::ofstream out(path);
    for (const auto& line : lines) out << line << '\n';
    REQUIRE(out.good());
}

void check_same_lines(const std::vector<std::string>& expected, const std::vector<std::string>& actual) {
    CHECK(actual.size() == expected.size());
    for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
        INFO("manifest line " << i + 1);
        CHECK(actual[i] == expected[i]);
    }
}

}  // namespace

TEST_CASE("a GGUF written by llmrt reads back through gguf's GGUFReader with the same metadata and tensor bytes, "
          "tensors of types llmrt cannot decode included") {
    require_python_gguf();
    for (const std::optional<uint32_t> alignment : {std::optional<uint32_t>{}, std::optional<uint32_t>{64}}) {
        CAPTURE(alignment.value_or(0));
        // q8_1 is left out: gguf's GGML_QUANT_SIZES gives it 40 bytes a block where ggml's
        // block_q8_1 has 36, so GGUFReader sizes it wrongly. It is an activation type that no
        // model file holds.
        auto w = llmrt_test::sample_writer(alignment, {qtype::q8_1});
        llmrt_test::add_undecodable_tensors(w);  // iq2_xxs, iq3_s, tq1_0, i32
        const auto gguf_path = llmrt_test::scratch_dir() / "llmrt_written.gguf";
        const auto manifest = llmrt_test::scratch_dir() / "llmrt_written.manifest";
        w.write(gguf_path);
        write_lines(manifest, llmrt_test::manifest(w));
        CHECK_MESSAGE(run_script("read_with_gguf.py", gguf_path, manifest) == 0,
                      "GGUFReader saw something else than llmrt wrote (differences printed above)");
    }
}

TEST_CASE("a GGUF written by gguf's GGUFWriter loads in llmrt with the same metadata and tensor bytes, tensors of "
          "types llmrt cannot decode listed") {
    require_python_gguf();
    const auto gguf_path = llmrt_test::scratch_dir() / "gguf_written.gguf";
    const auto manifest = llmrt_test::scratch_dir() / "gguf_written.manifest";
    REQUIRE(run_script("write_with_gguf.py", gguf_path, manifest) == 0);

    const auto f = gguf::file::open(gguf_path);
    check_same_lines(read_lines(manifest), llmrt_test::manifest(f));

    CHECK(f.alignment() == 64);
    CHECK(f.get<std::string>("general.architecture") == "llama");
    CHECK(f.get<uint32_t>("llama.block_count") == 2);
    CHECK(f.get<uint64_t>("llama.context_length") == (uint64_t(1) << 40) + 3);
    CHECK(f.get<std::vector<std::string>>("tokenizer.ggml.tokens") ==
          std::vector<std::string>{"<unk>", "<s>", "</s>", "\xe2\x96\x81" "a"});
    CHECK(f.get<std::vector<float>>("tokenizer.ggml.scores")[2] == 2.25f);
    CHECK(f.get<std::vector<gguf::array>>("test.array.nested")[1] == gguf::array(std::vector<int32_t>{3, 4, 5}));
    CHECK(f.tensor("f32.weight").ne == std::array<int64_t, 4>{8, 2, 3, 2});
    CHECK(f.tensor("q4_k.weight").type() == qtype::q4_K);
    for (const char* type : {"iq2_xxs", "iq3_s", "tq1_0"}) {
        CAPTURE(type);
        const auto& t = f.tensor(std::string(type) + ".weight");
        CHECK(std::string(t.type_name()) == type);
        CHECK(t.ne == std::array<int64_t, 4>{256, 3, 1, 1});
        CHECK_FALSE(t.decodable());
        CHECK_THROWS_AS((void)t.type(), error);
    }
}

TEST_CASE("llmrt's table of ggml types agrees with gguf's GGML_QUANT_SIZES on every type gguf knows") {
    require_python_gguf();
    const auto listing = llmrt_test::scratch_dir() / "gguf_types.txt";
    REQUIRE(run(quoted(python) + " -B " + quoted((scripts / "list_gguf_types.py").string()) + " " +
                quoted(listing.string()) + " 2>&1") == 0);
    const auto lines = read_lines(listing);
    CHECK(lines.size() >= 30);
    for (const std::string& line : lines) {
        CAPTURE(line);
        std::istringstream in(line);
        uint32_t id = 0, block_size = 0, type_size = 0;
        std::string name;
        REQUIRE(bool(in >> id >> name >> block_size >> type_size));
        const gguf::ggml_type_info* t = gguf::find_ggml_type(id);
        REQUIRE(t != nullptr);
        std::string ours = t->name;
        for (char& c : ours) c = char(std::toupper(static_cast<unsigned char>(c)));
        CHECK(ours == name);
        CHECK(t->block_size == block_size);
        // gguf gives q8_1 40 bytes a block; ggml's block_q8_1 has 36 (see above).
        if (id != 9) CHECK(t->type_size == type_size);
    }
}

TEST_CASE("gguf's q8_0, bf16 and mxfp4 quantizers and llmrt's give the same bytes") {
    require_python_gguf();
    const auto gguf_path = llmrt_test::scratch_dir() / "gguf_quantized.gguf";
    REQUIRE(run_script("write_with_gguf.py", gguf_path, llmrt_test::scratch_dir() / "gguf_quantized.manifest") == 0);
    const auto f = gguf::file::open(gguf_path);
    for (const char* type : {"q8_0", "bf16", "mxfp4"}) {
        CAPTURE(type);
        const auto& source = f.tensor(std::string(type) + ".source");
        const auto& quantized = f.tensor(std::string(type) + ".weight");
        REQUIRE(source.type() == qtype::f32);
        REQUIRE(source.ne == quantized.ne);
        std::vector<float> x(std::size_t(source.elements()));
        std::memcpy(x.data(), source.data, source.size);
        std::vector<std::byte> ours(quantized.size);
        quantize(quantized.type(), x.data(), ours.data(), source.elements());
        CHECK(std::memcmp(ours.data(), quantized.data, quantized.size) == 0);
    }
}
