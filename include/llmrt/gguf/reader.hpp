// The GGUF reader: a file's metadata and tensor infos, parsed once and checked against the file's
// length, with pointers to the tensor bytes in place (mmap or a caller's memory; nothing copied).
//
//   auto f = llmrt::gguf::file::open("model.gguf");                     // mmap
//   const auto layers = f.metadata().get<uint32_t>("llama.block_count");
//   const auto& w = f.tensor("blk.0.attn_q.weight");                      // w.type(), w.ne, w.data
//
// Every offset, count and size is checked before it is used, with overflow-safe arithmetic: a
// corrupt or truncated file raises llmrt::error (errc::corrupt_file) whose message names the
// source and the byte offset, and no byte outside the span is ever read.
//
// Every tensor of a type ggml defines is listed (ggml_types.hpp sizes it), whether or not llmrt
// can decode it: its name, shape, type id and name, offset and bytes read without error, and only
// asking for its qtype (tensor_info::type()) raises errc::unsupported_type, naming the tensor and
// the type. A type id ggml does not define raises errc::unsupported_type at open, naming the
// tensor, the id and its offset.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <new>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/core/qtype.hpp"
#include "llmrt/gguf/byte_cursor.hpp"
#include "llmrt/gguf/format.hpp"
#include "llmrt/gguf/ggml_types.hpp"
#include "llmrt/gguf/mapped_file.hpp"
#include "llmrt/gguf/metadata.hpp"
#include "llmrt/gguf/value.hpp"
#include "llmrt/quant/codec.hpp"
#include "llmrt/quant/dispatch.hpp"

namespace llmrt::gguf {

// One tensor as the file describes it. ne[0] is the innermost (contiguous) dimension, as in
// ggml; dimensions past n_dims are 1.
struct tensor_info {
    std::string name;
    uint32_t type_id = 0;           // ggml's type id, as the file holds it (ggml_types.hpp)
    uint32_t n_dims = 0;
    std::array<int64_t, max_dims> ne{1, 1, 1, 1};
    uint64_t offset = 0;            // from the start of the data section
    std::size_t size = 0;           // bytes: ne[0] / block size * bytes per block * ne[1] * ne[2] * ne[3]
    const std::byte* data = nullptr;  // the bytes in the mapped file or the caller's span

    int64_t elements() const noexcept { return ne[0] * ne[1] * ne[2] * ne[3]; }
    std::span<const std::byte> bytes() const noexcept { return {data, size}; }

    // ggml's name of the type ("q4_K", "iq2_xxs"), whether or not llmrt can decode it.
    const char* type_name() const noexcept { return ggml_type_name(type_id); }
    // Whether llmrt can decode the tensor: its type is in llmrt::all_types.
    bool decodable() const { return is_in<all_types>(qtype(type_id)); }
    // "type iq2_xxs (ggml type id 16), which llmrt cannot decode (it decodes ...)": what the
    // errors about using an undecodable tensor say of it.
    std::string undecodable_type() const {
        return std::string("type ") + type_name() + " (ggml type id " + std::to_string(type_id) +
               "), which llmrt cannot decode (it decodes " + llmrt::detail::type_names(all_types{}) + ")";
    }
    // The type as llmrt's qtype, to decode or compute with the tensor. llmrt::error
    // (errc::unsupported_type) naming the tensor and the type when llmrt cannot decode it.
    qtype type() const {
        check(decodable(), errc::unsupported_type, [&] { return "tensor '" + name + "' has " + undecodable_type(); });
        return qtype(type_id);
    }
};

class file;

namespace detail {
inline void parse(file& f, std::span<const std::byte> bytes);
}

class file {
public:
    // Maps the file at `path` and parses it. llmrt::error: io_error when it cannot be mapped,
    // corrupt_file / unsupported_type as described above.
    static file open(const std::filesystem::path& path) {
        file f;
        f.source_ = path.string();
        f.storage_ = mapped_file(path);
        detail::parse(f, std::get<mapped_file>(f.storage_).bytes());
        return f;
    }

    // Parses bytes the caller owns and keeps alive for as long as the file and its tensor
    // pointers are used. `source` names the bytes in error messages.
    static file view(std::span<const std::byte> bytes, std::string source = "gguf in memory") {
        file f;
        f.source_ = std::move(source);
        detail::parse(f, bytes);
        return f;
    }

    // Parses bytes it takes ownership of.
    static file from_bytes(std::vector<std::byte> bytes, std::string source = "gguf in memory") {
        file f;
        f.source_ = std::move(source);
        f.storage_ = std::move(bytes);
        const auto& owned = std::get<std::vector<std::byte>>(f.storage_);
        detail::parse(f, owned);
        return f;
    }

    file(file&&) noexcept = default;
    file& operator=(file&&) noexcept = default;

    const std::string& source() const noexcept { return source_; }
    uint32_t version() const noexcept { return version_; }
    uint32_t alignment() const noexcept { return alignment_; }
    // Where the data section starts in the file.
    uint64_t data_offset() const noexcept { return data_offset_; }
    // The whole file.
    std::span<const std::byte> bytes() const noexcept { return bytes_; }

    const gguf::metadata& metadata() const noexcept { return metadata_; }
    template <class T>
    const T& get(std::string_view key) const {
        return metadata_.get<T>(key);
    }
    template <class T>
    T get_or(std::string_view key, T fallback) const {
        return metadata_.get_or<T>(key, std::move(fallback));
    }

    // Tensor infos in file order.
    const std::vector<tensor_info>& tensors() const noexcept { return tensors_; }
    const tensor_info* find_tensor(std::string_view name) const {
        const auto it = tensor_index_.find(name);
        return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
    }
    // The tensor called `name`; llmrt::error (errc::invalid_argument) when there is none.
    const tensor_info& tensor(std::string_view name) const {
        const tensor_info* t = find_tensor(name);
        check(t != nullptr, errc::invalid_argument,
              [&] { return source_ + ": no tensor named '" + std::string(name) + "'"; });
        return *t;
    }

private:
    file() = default;
    friend void detail::parse(file& f, std::span<const std::byte> bytes);

    std::variant<std::monostate, mapped_file, std::vector<std::byte>> storage_;
    std::string source_;
    std::span<const std::byte> bytes_;
    uint32_t version_ = 0;
    uint32_t alignment_ = default_alignment;
    uint64_t data_offset_ = 0;
    gguf::metadata metadata_;
    std::vector<tensor_info> tensors_;
    std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

namespace detail {

// a * b, or false when it does not fit in uint64_t.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t& product) { return !__builtin_mul_overflow(a, b, &product); }

// Bytes the smallest encoding of one element of type t takes.
inline uint64_t min_encoded_size(value_type t) {
    return visit_type(t, [](auto tag) -> uint64_t {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, std::string>) return 8;       // length
        else if constexpr (std::is_same_v<T, array>) return 4 + 8;    // element type, count
        else return sizeof(T);
    });
}

// Reads metadata values. (The member templates come before the functions that use them: clang 14
// otherwise warns, -Wundefined-inline, about their use inside generic lambdas.)
class metadata_parser {
    byte_cursor& c_;

    template <class T>
    T read_scalar() {
        if constexpr (std::is_same_v<T, std::string>) {
            return c_.read_string("string value");
        } else if constexpr (std::is_same_v<T, bool>) {
            const uint64_t at = c_.offset();
            const uint8_t b = c_.read<uint8_t>("bool value");
            if (b > 1) c_.fail(at, "bool value " + std::to_string(b) + " (must be 0 or 1)");
            return b != 0;
        } else {
            return c_.read<T>("value");
        }
    }

    // An array at nesting depth `depth` (1 for an array that is itself a key's value).
    array read_array(int depth) {
        const uint64_t at = c_.offset();
        const auto element = value_type(read_type_id("array element type"));
        if (element == value_type::array && depth >= max_array_depth)
            c_.fail(at, "arrays nested deeper than " + std::to_string(max_array_depth) + " levels");
        const uint64_t count_at = c_.offset();
        const uint64_t count = c_.read<uint64_t>("array length");
        const uint64_t min_size = min_encoded_size(element);
        // Checked before anything is allocated: a huge count in a small file fails here.
        if (count > c_.remaining() / min_size)
            c_.fail(count_at, "array of " + std::to_string(count) + " " + type_name(element) +
                                  " elements needs at least " + std::to_string(min_size) + " bytes each, the file has " +
                                  std::to_string(c_.remaining()) + " bytes left");
        return visit_type(element, [&](auto tag) -> array {
            using E = typename decltype(tag)::type;
            std::vector<E> items;
            if constexpr (std::is_arithmetic_v<E> && !std::is_same_v<E, bool>) {
                // Fixed-size elements: the count check above proved the bytes exist.
                items.resize(std::size_t(count));
                c_.copy_to(items.data(), count * sizeof(E));
            } else {
                // Variable-size elements: grow as they parse, so memory follows the bytes actually read.
                items.reserve(std::size_t(std::min<uint64_t>(count, 4096)));
                for (uint64_t i = 0; i < count; ++i) {
                    if constexpr (std::is_same_v<E, array>) items.push_back(read_array(depth + 1));
                    else items.push_back(read_scalar<E>());
                }
            }
            return array(std::move(items));
        });
    }

public:
    explicit metadata_parser(byte_cursor& c) : c_(c) {}

    uint32_t read_type_id(const char* what) {
        const uint64_t at = c_.offset();
        const uint32_t raw = c_.read<uint32_t>(what);
        if (raw >= value_type_count)
            c_.fail(at, "unknown " + std::string(what) + " " + std::to_string(raw) + " (GGUF knows 0.." +
                            std::to_string(value_type_count - 1) + ")");
        return raw;
    }

    // One value of GGUF type t; `depth` counts the arrays it lies in.
    value read_value(value_type t, int depth) {
        return visit_type(t, [&](auto tag) -> value {
            using T = typename decltype(tag)::type;
            if constexpr (std::is_same_v<T, array>) return read_array(depth + 1);
            else return read_scalar<T>();
        });
    }
};

inline void parse(file& f, std::span<const std::byte> bytes) {
    try {
        byte_cursor c(bytes, f.source_);
        f.bytes_ = bytes;

        // Header.
        c.need(sizeof(magic), "GGUF magic");
        if (std::memcmp(bytes.data(), magic, sizeof(magic)) != 0) c.fail(0, "bad magic (not a GGUF file)");
        c.read<uint32_t>("GGUF magic");
        f.version_ = c.read<uint32_t>("GGUF version");
        if (f.version_ < oldest_readable_version || f.version_ > version)
            c.fail(4, "unsupported GGUF version " + std::to_string(f.version_) +
                          (f.version_ > 0xffff ? " (a big-endian file?)" : "") + "; llmrt reads versions " +
                          std::to_string(oldest_readable_version) + " to " + std::to_string(version));
        const uint64_t tensor_count = c.read<uint64_t>("tensor count");
        const uint64_t kv_count = c.read<uint64_t>("key/value count");
        if (tensor_count > c.remaining() / min_tensor_info_bytes)
            c.fail(8, "tensor count " + std::to_string(tensor_count) + " cannot fit in the " +
                          std::to_string(c.remaining()) + " bytes after the header");
        if (kv_count > c.remaining() / min_kv_bytes ||
            kv_count * min_kv_bytes > c.remaining() - tensor_count * min_tensor_info_bytes)
            c.fail(16, "key/value count " + std::to_string(kv_count) + " with " + std::to_string(tensor_count) +
                           " tensors cannot fit in the " + std::to_string(c.remaining()) + " bytes after the header");

        // Metadata.
        metadata_parser p(c);
        for (uint64_t i = 0; i < kv_count; ++i) {
            const uint64_t key_at = c.offset();
            std::string key = c.read_string("key");
            c.set_context("key '" + key + "'");
            const auto type = value_type(p.read_type_id("value type"));
            const uint64_t value_at = c.offset();
            value v = p.read_value(type, 0);
            if (key == alignment_key) {
                const uint32_t* a = std::get_if<uint32_t>(&v);
                if (a == nullptr) c.fail(value_at, "general.alignment holds " + describe(v) + ", not uint32");
                if (*a == 0 || (*a & (*a - 1)) != 0)
                    c.fail(value_at, "alignment " + std::to_string(*a) + " is not a power of two");
                f.alignment_ = *a;
            }
            if (!f.metadata_.insert(std::move(key), std::move(v))) c.fail(key_at, "duplicate key");
            c.set_context("");
        }

        // Tensor infos.
        std::vector<uint64_t> offset_at;  // where each tensor's offset field lies, for messages
        f.tensors_.reserve(std::size_t(tensor_count));
        offset_at.reserve(std::size_t(tensor_count));
        for (uint64_t i = 0; i < tensor_count; ++i) {
            tensor_info t;
            const uint64_t name_at = c.offset();
            t.name = c.read_string("tensor name");
            c.set_context("tensor '" + t.name + "'");
            const uint64_t dims_at = c.offset();
            t.n_dims = c.read<uint32_t>("tensor n_dims");
            if (t.n_dims > max_dims)
                c.fail(dims_at, "n_dims " + std::to_string(t.n_dims) + " exceeds " + std::to_string(max_dims));
            uint64_t elements = 1;
            for (uint32_t d = 0; d < t.n_dims; ++d) {
                const uint64_t ne_at = c.offset();
                const uint64_t ne = c.read<uint64_t>("tensor dimension");
                if (ne == 0) c.fail(ne_at, "dimension ne[" + std::to_string(d) + "] is 0");
                if (!checked_mul(elements, ne, elements) || elements > uint64_t(std::numeric_limits<int64_t>::max()))
                    c.fail(ne_at, "element count overflows at ne[" + std::to_string(d) + "] = " + std::to_string(ne));
                t.ne[d] = int64_t(ne);
            }
            const uint64_t type_at = c.offset();
            t.type_id = c.read<uint32_t>("tensor type");
            const ggml_type_info* type = find_ggml_type(t.type_id);
            if (type == nullptr) c.fail(type_at, describe_undefined_ggml_type(t.type_id), errc::unsupported_type);
            const uint64_t bs = type->block_size;
            if (uint64_t(t.ne[0]) % bs != 0)
                c.fail(type_at, std::string("ne[0] = ") + std::to_string(t.ne[0]) + " is not a multiple of " +
                                    type->name + "'s block size " + std::to_string(bs));
            uint64_t size = 0;
            if (!type->tensor_bytes(t.ne, size) || size > std::numeric_limits<std::size_t>::max())
                c.fail(type_at, "byte size overflows");
            t.size = std::size_t(size);
            offset_at.push_back(c.offset());
            t.offset = c.read<uint64_t>("tensor data offset");
            if (!f.tensor_index_.emplace(t.name, f.tensors_.size()).second)
                c.fail(name_at, "duplicate tensor name");
            f.tensors_.push_back(std::move(t));
            c.set_context("");
        }

        // Data section: starts at the next multiple of the alignment. The end of the tensor
        // infos is at most the span size, so adding the padding cannot overflow.
        const uint64_t a = f.alignment_;
        f.data_offset_ = c.offset() + (a - c.offset() % a) % a;
        const uint64_t data_size = c.size() > f.data_offset_ ? c.size() - f.data_offset_ : 0;
        for (std::size_t i = 0; i < f.tensors_.size(); ++i) {
            const tensor_info& t = f.tensors_[i];
            c.set_context("tensor '" + t.name + "'");
            if (t.offset % a != 0)
                c.fail(offset_at[i], "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                                         std::to_string(a));
            if (t.offset > data_size || t.size > data_size - t.offset)
                c.fail(offset_at[i], "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.size) +
                                         " bytes) runs past the end of the data section (" + std::to_string(data_size) +
                                         " bytes from file offset " + std::to_string(f.data_offset_) + ")");
        }
        c.set_context("");
        std::vector<std::size_t> order(f.tensors_.size());
        std::iota(order.begin(), order.end(), std::size_t(0));
        std::sort(order.begin(), order.end(),
                  [&](std::size_t x, std::size_t y) { return f.tensors_[x].offset < f.tensors_[y].offset; });
        for (std::size_t k = 1; k < order.size(); ++k) {
            const tensor_info& prev = f.tensors_[order[k - 1]];
            const tensor_info& next = f.tensors_[order[k]];
            // Both ends were checked against data_size above, so this sum cannot overflow.
            if (prev.offset + prev.size > next.offset)
                c.fail(offset_at[order[k]], "tensor '" + next.name + "' data at " + std::to_string(next.offset) +
                                                " overlaps tensor '" + prev.name + "' data [" +
                                                std::to_string(prev.offset) + ", " +
                                                std::to_string(prev.offset + prev.size) + ")");
        }
        for (tensor_info& t : f.tensors_) t.data = bytes.data() + f.data_offset_ + t.offset;
    } catch (const std::bad_alloc&) {
        throw error(errc::out_of_memory, f.source_ + ": out of memory while reading GGUF metadata");
    }
}

}  // namespace detail

}  // namespace llmrt::gguf
