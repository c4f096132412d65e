// Test helpers shared by the GGUF tests, the interop test and the fuzzer's seed generator:
// a writer filled with every value type and every element type's tensor, and the "manifest", a
// line-per-item text description of a GGUF that the C++ tests and tests/gguf/gguf_manifest.py
// both produce, so two readings of one file can be compared line by line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "llmrt/gguf/gguf.hpp"
#include "llmrt/quant/codec.hpp"
#include "llmrt/quant/types.hpp"

namespace llmrt_test {

using namespace llmrt;

// Bytes of n elements of t, quantized from a reproducible random row.
inline std::vector<std::byte> tensor_bytes(qtype t, int64_t rows, int64_t ne0, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(std::size_t(rows * ne0));
    for (float& v : x) v = dist(rng);
    std::vector<std::byte> out(row_size(t, ne0) * std::size_t(rows));
    quantize(t, x.data(), out.data(), rows * ne0);
    return out;
}

// A shape for the i-th type: ne[0] two blocks (16 elements for one-element blocks), then
// n_dims = 1 + i % 4 dimensions of 2, 3, 2.
inline std::vector<int64_t> sample_shape(qtype t, std::size_t i) {
    const int64_t bs = block_size(t);
    std::vector<int64_t> shape{bs == 1 ? 16 : 2 * bs};
    const int64_t rest[] = {2, 3, 2};
    for (std::size_t d = 0; d < i % 4; ++d) shape.push_back(rest[d]);
    return shape;
}

inline int64_t rows_of(const std::vector<int64_t>& shape) {
    int64_t rows = 1;
    for (std::size_t d = 1; d < shape.size(); ++d) rows *= shape[d];
    return rows;
}

// Metadata with every value type, extreme values, arrays of every element type (some empty)
// and nested arrays.
inline void add_sample_metadata(gguf::writer& w) {
    using namespace std::string_literals;
    w.set("general.architecture", "llama"s);
    w.set("test.uint8", uint8_t(255));
    w.set("test.int8", int8_t(-128));
    w.set("test.uint16", uint16_t(65535));
    w.set("test.int16", int16_t(-32768));
    w.set("test.uint32", uint32_t(4000000000u));
    w.set("test.int32", int32_t(-2000000000));
    w.set("test.float32", 3.25f);
    w.set("test.float32_negative_zero", -0.0f);
    w.set("test.float32_infinity", std::numeric_limits<float>::infinity());
    w.set("test.bool_true", true);
    w.set("test.bool_false", false);
    w.set("test.string", "h\xc3\xa9llo, w\xc3\xb6rld"s);
    w.set("test.string_empty", ""s);
    w.set("test.string_with_nul", "a\0b"s);
    w.set("test.uint64", std::numeric_limits<uint64_t>::max());
    w.set("test.int64", std::numeric_limits<int64_t>::min());
    w.set("test.float64", -1.0 / 3.0);
    w.set("test.array.uint8", std::vector<uint8_t>{0, 1, 255});
    w.set("test.array.int8", std::vector<int8_t>{-128, 0, 127});
    w.set("test.array.uint16", std::vector<uint16_t>{1, 65535});
    w.set("test.array.int16", std::vector<int16_t>{-32768, 32767});
    w.set("test.array.uint32", std::vector<uint32_t>{7, 0, 4294967295u});
    w.set("test.array.int32", std::vector<int32_t>{-1, 2, -3, 4});
    w.set("test.array.float32", std::vector<float>{0.5f, -1.25f, 1e-30f});
    w.set("test.array.bool", std::vector<bool>{true, false, true});
    w.set("test.array.string", std::vector<std::string>{"<s>", "", "\xe2\x96\x81the", "</s>"});
    w.set("test.array.uint64", std::vector<uint64_t>{0, std::numeric_limits<uint64_t>::max()});
    w.set("test.array.int64", std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 5});
    w.set("test.array.float64", std::vector<double>{1e300, -2.5});
    w.set("test.array.empty_uint32", std::vector<uint32_t>{});
    w.set("test.array.empty_string", std::vector<std::string>{});
    w.set("test.array.nested",
          std::vector<gguf::array>{gguf::array(std::vector<int32_t>{1, 2}), gguf::array(std::vector<std::string>{"x"}),
                                   gguf::array(std::vector<gguf::array>{gguf::array(std::vector<float>{1.5f})})});
    w.set("llama.block_count", uint32_t(2));
}

// Adds one tensor of every type in all_types (shapes from sample_shape), named "<type>.weight",
// except those listed in `skip`.
inline void add_sample_tensors(gguf::writer& w, std::initializer_list<qtype> skip = {}) {
    std::size_t i = 0;
    all_types::for_each([&](auto tag) {
        using B = typename decltype(tag)::type;
        for (qtype s : skip)
            if (s == B::id) return;
        const std::vector<int64_t> shape = sample_shape(B::id, i);
        const auto bytes = tensor_bytes(B::id, rows_of(shape), shape[0], uint32_t(100 + i));
        w.add_tensor(std::string(B::name) + ".weight", B::id, shape, bytes);
        ++i;
    });
}

// Types ggml defines that llmrt cannot decode and has no plan to, with a shape of whole blocks
// for each: the tensors of the listing tests.
struct undecodable_sample {
    uint32_t id;
    const char* name;
    std::vector<int64_t> shape;
};
inline const std::vector<undecodable_sample>& undecodable_samples() {
    static const std::vector<undecodable_sample> samples{
        {16, "iq2_xxs", {256, 2}}, {21, "iq3_s", {512}}, {34, "tq1_0", {256, 1, 3}}, {26, "i32", {5, 3}}};
    return samples;
}

// Bytes a tensor of ggml type `id` and `shape` takes, from ggml's table.
inline std::size_t ggml_bytes(uint32_t id, const std::vector<int64_t>& shape) {
    const gguf::ggml_type_info& t = gguf::ggml_types.at(id);
    return std::size_t(shape[0] / t.block_size * t.type_size * rows_of(shape));
}

// Adds one tensor of each undecodable_samples() type, named "<type>.weight", of random bytes.
inline void add_undecodable_tensors(gguf::writer& w, uint32_t seed = 5) {
    std::mt19937 rng(seed);
    for (const auto& s : undecodable_samples()) {
        std::vector<std::byte> bytes(ggml_bytes(s.id, s.shape));
        for (std::byte& b : bytes) b = std::byte(rng());
        w.add_tensor(std::string(s.name) + ".weight", qtype(s.id), s.shape, bytes);
    }
}

// The sample file; with an alignment, general.alignment is set first.
inline gguf::writer sample_writer(std::optional<uint32_t> alignment = std::nullopt,
                                  std::initializer_list<qtype> skip_types = {}) {
    gguf::writer w;
    if (alignment) w.set_alignment(*alignment);
    add_sample_metadata(w);
    add_sample_tensors(w, skip_types);
    return w;
}

// ---- Manifest ----

// FNV-1a, 64 bit: a checksum the Python side computes the same way.
inline uint64_t fnv1a64(std::span<const std::byte> bytes) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (std::byte b : bytes) {
        h ^= uint64_t(b);
        h *= 0x100000001b3ull;
    }
    return h;
}

inline std::string hex(const void* data, std::size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

// Floats by their bits (little-endian bytes in hex), so NaN and -0 compare exactly.
inline std::string canonical(const gguf::array& a);
template <class T>
std::string canonical_scalar(const T& v) {
    const std::string type = gguf::type_name(gguf::value_type_of<T>);
    if constexpr (std::is_same_v<T, std::string>) return type + ":" + hex(v.data(), v.size());
    else if constexpr (std::is_same_v<T, gguf::array>) return canonical(v);
    else if constexpr (std::is_same_v<T, bool>) return type + ":" + (v ? "1" : "0");
    else if constexpr (std::is_floating_point_v<T>) return type + ":" + hex(&v, sizeof(T));
    else return type + ":" + std::to_string(v);
}
inline std::string canonical(const gguf::array& a) {
    std::string s = std::string("array<") + gguf::type_name(a.element_type()) + ">[";
    std::visit(
        [&](const auto& items) {
            bool first = true;
            for (const auto& x : items) {
                using E = typename std::decay_t<decltype(items)>::value_type;
                s += first ? "" : ",";
                s += canonical_scalar<E>(E(x));
                first = false;
            }
        },
        a.items);
    return s + "]";
}
inline std::string canonical(const gguf::value& v) {
    return std::visit([](const auto& x) { return canonical_scalar(x); }, v);
}

struct manifest_tensor {
    std::string name;
    uint32_t type_id;
    uint32_t n_dims;
    std::array<int64_t, 4> ne;
    uint64_t offset;
    std::span<const std::byte> bytes;
};

inline std::vector<std::string> manifest(uint32_t alignment, const gguf::metadata& meta,
                                         const std::vector<manifest_tensor>& tensors) {
    std::vector<std::string> lines{"alignment " + std::to_string(alignment)};
    for (const auto& [key, v] : meta) lines.push_back("kv " + key + " " + canonical(v));
    for (const auto& t : tensors) {
        std::string ne;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            if (d) ne += ',';
            ne += std::to_string(t.ne[d]);
        }
        char checksum[17];
        std::snprintf(checksum, sizeof(checksum), "%016llx", static_cast<unsigned long long>(fnv1a64(t.bytes)));
        lines.push_back("tensor " + t.name + " " + std::to_string(t.type_id) + " [" + ne + "] " +
                        std::to_string(t.offset) + " " + std::to_string(t.bytes.size()) + " " + checksum);
    }
    return lines;
}

// What a reader saw.
inline std::vector<std::string> manifest(const gguf::file& f) {
    std::vector<manifest_tensor> tensors;
    for (const auto& t : f.tensors()) tensors.push_back({t.name, t.type_id, t.n_dims, t.ne, t.offset, t.bytes()});
    return manifest(f.alignment(), f.metadata(), tensors);
}

// What a writer was given; offsets follow the layout GGUF writers use (each tensor at the next
// multiple of the alignment after the previous one).
inline std::vector<std::string> manifest(const gguf::writer& w) {
    std::vector<manifest_tensor> tensors;
    uint64_t offset = 0;
    for (const auto& t : w.tensors()) {
        tensors.push_back({t.name, uint32_t(t.type), t.n_dims, t.ne, offset, t.bytes()});
        offset += (t.bytes().size() + w.alignment() - 1) / w.alignment() * w.alignment();
    }
    return manifest(w.alignment(), w.metadata(), tensors);
}

}  // namespace llmrt_test
