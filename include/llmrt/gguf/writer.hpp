// The GGUF writer: collects metadata and tensors, then writes a GGUF v3 file (or bytes) that
// llmrt's reader, ggml and PyPI's gguf read back.
//
//   llmrt::gguf::writer w;
//   w.set("general.architecture", std::string("llama"));
//   w.set("llama.block_count", uint32_t(32));
//   w.set("tokenizer.ggml.tokens", std::vector<std::string>{"<s>", "</s>"});
//   w.add_tensor("token_embd.weight", llmrt::qtype::q8_0, {4096, 32000}, bytes);
//   w.write("model.gguf");
//
// A tensor's type may be any type ggml defines (ggml_types.hpp), qtype(16) for iq2_xxs say: the
// writer sizes it from ggml's table and copies its bytes as they are, so a file holding types
// llmrt cannot decode can be copied or made.
//
// Keys keep the order in which they were first set; tensors keep the order in which they were
// added, each at the next multiple of the alignment, each followed by zero padding up to it
// (as ggml writes them). Bad input raises llmrt::error when it is added, not when it is written.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/core/qtype.hpp"
#include "llmrt/gguf/format.hpp"
#include "llmrt/gguf/ggml_types.hpp"
#include "llmrt/gguf/metadata.hpp"
#include "llmrt/gguf/value.hpp"
#include "llmrt/quant/codec.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::gguf {

class writer {
public:
    // A tensor to be written; ne[0] is the innermost dimension.
    struct tensor {
        std::string name;
        qtype type{};  // a ggml type id, maybe one outside llmrt's qtype list
        uint32_t n_dims = 0;
        std::array<int64_t, max_dims> ne{1, 1, 1, 1};
        std::span<const std::byte> bytes() const noexcept { return owned.empty() ? view : std::span(owned); }

        std::vector<std::byte> owned;     // add_tensor's copy
        std::span<const std::byte> view;  // add_tensor_view's caller-owned bytes
    };

    writer() = default;
    explicit writer(uint32_t data_alignment) { set_alignment(data_alignment); }

    // Sets a metadata key (see metadata::set). Arrays may nest up to max_array_depth levels;
    // general.alignment must be a uint32 power of two. llmrt::error (invalid_argument) otherwise.
    void set(std::string key, value v) {
        check(depth(v) <= max_array_depth, errc::invalid_argument, [&] {
            return "gguf writer: key '" + key + "' holds arrays nested deeper than " + std::to_string(max_array_depth) +
                   " levels";
        });
        if (key == alignment_key) {
            const uint32_t* a = std::get_if<uint32_t>(&v);
            check(a != nullptr, errc::invalid_argument,
                  [&] { return "gguf writer: general.alignment must be uint32, got " + describe(v); });
            check_alignment(*a);
            alignment_ = *a;
        }
        metadata_.set(std::move(key), std::move(v));
    }

    // Removes a metadata key; returns whether it was there. Removing general.alignment restores
    // the default alignment.
    bool erase(std::string_view key) {
        if (key == alignment_key) alignment_ = default_alignment;
        return metadata_.erase(key);
    }

    // Sets the data alignment and stores it as general.alignment.
    void set_alignment(uint32_t data_alignment) { set(alignment_key, data_alignment); }
    uint32_t alignment() const noexcept { return alignment_; }

    const gguf::metadata& metadata() const noexcept { return metadata_; }
    const std::vector<tensor>& tensors() const noexcept { return tensors_; }

    // Adds a tensor of `type` (any type ggml defines) with shape {ne[0], ne[1], ...} (at most four
    // dimensions, each at least 1, ne[0] a multiple of the type's block size) and exactly
    // ne[0] / block size * bytes per block * ne[1] * ... bytes, which are copied.
    void add_tensor(std::string name, qtype type, std::span<const int64_t> shape, std::span<const std::byte> bytes) {
        tensor t = describe_tensor(std::move(name), type, shape, bytes.size());
        t.owned.assign(bytes.begin(), bytes.end());
        push(std::move(t));
    }
    void add_tensor(std::string name, qtype type, std::initializer_list<int64_t> shape,
                    std::span<const std::byte> bytes) {
        add_tensor(std::move(name), type, std::span(shape.begin(), shape.size()), bytes);
    }

    // As add_tensor, but keeps a view of `bytes`, which the caller keeps alive until the file
    // has been written.
    void add_tensor_view(std::string name, qtype type, std::span<const int64_t> shape,
                         std::span<const std::byte> bytes) {
        tensor t = describe_tensor(std::move(name), type, shape, bytes.size());
        t.view = bytes;
        push(std::move(t));
    }
    void add_tensor_view(std::string name, qtype type, std::initializer_list<int64_t> shape,
                         std::span<const std::byte> bytes) {
        add_tensor_view(std::move(name), type, std::span(shape.begin(), shape.size()), bytes);
    }

    // The whole file as bytes.
    std::vector<std::byte> to_bytes() const {
        std::vector<std::byte> out = header();
        for (const tensor& t : tensors_) {
            const auto b = t.bytes();
            out.insert(out.end(), b.begin(), b.end());
            out.resize(out.size() + padding(b.size()));
        }
        return out;
    }

    // Writes the file to `path`; llmrt::error (io_error) naming the path when that fails, in
    // which case the partial file is removed.
    void write(const std::filesystem::path& path) const {
        std::FILE* out = std::fopen(path.c_str(), "wb");
        if (out == nullptr) fail_io(path, "cannot create");
        const auto put = [&](const void* data, std::size_t n) {
            if (n != 0 && std::fwrite(data, 1, n, out) != n) {
                const int saved = errno;
                std::fclose(out);
                std::error_code ignored;
                std::filesystem::remove(path, ignored);
                errno = saved;
                fail_io(path, "cannot write");
            }
        };
        const std::vector<std::byte> head = header();
        put(head.data(), head.size());
        const std::vector<std::byte> zeros(alignment_);
        for (const tensor& t : tensors_) {
            const auto b = t.bytes();
            put(b.data(), b.size());
            put(zeros.data(), padding(b.size()));
        }
        if (std::fclose(out) != 0) {
            std::error_code ignored;
            std::filesystem::remove(path, ignored);
            fail_io(path, "cannot finish writing");
        }
    }

private:
    static void check_alignment(uint32_t a) {
        check(a != 0 && (a & (a - 1)) == 0, errc::invalid_argument,
              [&] { return "gguf writer: alignment " + std::to_string(a) + " is not a power of two"; });
    }
    [[noreturn]] static void fail_io(const std::filesystem::path& path, const char* what) {
        throw error(errc::io_error, path.string() + ": " + what + ": " + std::strerror(errno));
    }

    // How many arrays deep v goes (0 for a scalar).
    static int depth(const value& v) {
        const auto* a = std::get_if<array>(&v);
        return a ? depth(*a) : 0;
    }
    static int depth(const array& a) {
        int inner = 0;
        if (const auto* items = a.get_if<array>())
            for (const array& x : *items) inner = std::max(inner, depth(x));
        return 1 + inner;
    }

    tensor describe_tensor(std::string name, qtype type, std::span<const int64_t> shape, std::size_t n_bytes) const {
        const auto where = [&] { return "gguf writer: tensor '" + name + "'"; };
        check(!tensor_index_.contains(name), errc::invalid_argument, [&] { return where() + " was already added"; });
        const ggml_type_info* info = find_ggml_type(uint32_t(type));
        check(info != nullptr, errc::unsupported_type,
              [&] { return where() + ": " + describe_undefined_ggml_type(uint32_t(type)); });
        const int64_t bs = info->block_size;
        check(shape.size() <= max_dims, errc::invalid_argument,
              [&] { return where() + " has " + std::to_string(shape.size()) + " dimensions, at most 4"; });
        tensor t;
        t.name = std::move(name);
        t.type = type;
        t.n_dims = uint32_t(shape.size());
        uint64_t elements = 1;
        for (std::size_t d = 0; d < shape.size(); ++d) {
            check(shape[d] >= 1 && !__builtin_mul_overflow(elements, uint64_t(shape[d]), &elements) &&
                      elements <= uint64_t(INT64_MAX),
                  errc::invalid_argument, [&] {
                      return "gguf writer: tensor '" + t.name + "': dimension ne[" + std::to_string(d) + "] = " +
                             std::to_string(shape[d]) + " is not positive or makes the element count overflow";
                  });
            t.ne[d] = shape[d];
        }
        check(t.ne[0] % bs == 0, errc::invalid_argument, [&] {
            return "gguf writer: tensor '" + t.name + "': ne[0] = " + std::to_string(t.ne[0]) +
                   " is not a multiple of " + info->name + "'s block size " + std::to_string(bs);
        });
        uint64_t expected = 0;
        check(info->tensor_bytes(t.ne, expected), errc::invalid_argument, [&] {
            return "gguf writer: tensor '" + t.name + "' of " + info->name + " with shape [" + shape_string(t) +
                   "]: byte size overflows 64 bits";
        });
        check(n_bytes == expected, errc::shape_mismatch, [&] {
            return "gguf writer: tensor '" + t.name + "' of " + info->name + " with shape [" + shape_string(t) +
                   "] needs " + std::to_string(expected) + " bytes, got " + std::to_string(n_bytes);
        });
        return t;
    }
    static std::string shape_string(const tensor& t) {
        std::string s;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            if (d) s += ", ";
            s += std::to_string(t.ne[d]);
        }
        return s;
    }

    void push(tensor t) {
        tensor_index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }

    std::size_t padding(std::size_t n) const { return (alignment_ - n % alignment_) % alignment_; }

    template <class T>
    static void put(std::vector<std::byte>& out, const T& v) {
        static_assert(std::is_trivially_copyable_v<T>, "gguf writer: put<T> copies bytes");
        const auto* p = reinterpret_cast<const std::byte*>(&v);
        out.insert(out.end(), p, p + sizeof(T));
    }
    static void put_string(std::vector<std::byte>& out, std::string_view s) {
        put(out, uint64_t(s.size()));
        const auto* p = reinterpret_cast<const std::byte*>(s.data());
        out.insert(out.end(), p, p + s.size());
    }
    template <class T>
    static void put_element(std::vector<std::byte>& out, const T& v) {
        if constexpr (std::is_same_v<T, std::string>) put_string(out, v);
        else if constexpr (std::is_same_v<T, array>) put_array(out, v);
        else if constexpr (std::is_same_v<T, bool>) put(out, uint8_t(v ? 1 : 0));
        else put(out, v);
    }
    static void put_array(std::vector<std::byte>& out, const array& a) {
        put(out, uint32_t(a.element_type()));
        put(out, uint64_t(a.size()));
        std::visit(
            [&](const auto& items) {
                using E = typename std::decay_t<decltype(items)>::value_type;
                if constexpr (std::is_arithmetic_v<E> && !std::is_same_v<E, bool>) {
                    const auto* p = reinterpret_cast<const std::byte*>(items.data());
                    out.insert(out.end(), p, p + items.size() * sizeof(E));
                } else {
                    for (const auto& x : items) put_element<E>(out, x);
                }
            },
            a.items);
    }

    // Header, metadata, tensor infos and the padding up to the data section.
    std::vector<std::byte> header() const {
        std::vector<std::byte> out;
        const auto* m = reinterpret_cast<const std::byte*>(magic);
        out.insert(out.end(), m, m + sizeof(magic));
        put(out, version);
        put(out, uint64_t(tensors_.size()));
        put(out, uint64_t(metadata_.size()));
        for (const auto& [key, v] : metadata_) {
            put_string(out, key);
            put(out, uint32_t(type_of(v)));
            std::visit([&](const auto& x) { put_element(out, x); }, v);
        }
        uint64_t offset = 0;
        for (const tensor& t : tensors_) {
            put_string(out, t.name);
            put(out, t.n_dims);
            for (uint32_t d = 0; d < t.n_dims; ++d) put(out, uint64_t(t.ne[d]));
            put(out, uint32_t(t.type));
            put(out, offset);
            offset += t.bytes().size() + padding(t.bytes().size());
        }
        out.resize(out.size() + padding(out.size()));
        return out;
    }

    gguf::metadata metadata_;
    uint32_t alignment_ = default_alignment;
    std::vector<tensor> tensors_;
    std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

}  // namespace llmrt::gguf
