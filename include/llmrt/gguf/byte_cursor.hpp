// A bounds-checked read position in a byte span: the only way the GGUF reader touches file bytes.
// Every read first checks that the bytes exist (comparing against what is left, so no sum can
// overflow) and otherwise raises llmrt::error (errc::corrupt_file) naming the file and the offset.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "llmrt/core/error.hpp"

namespace llmrt::gguf::detail {

class byte_cursor {
public:
    byte_cursor(std::span<const std::byte> bytes, const std::string& source) : bytes_(bytes), source_(source) {}

    uint64_t offset() const noexcept { return pos_; }
    uint64_t size() const noexcept { return bytes_.size(); }
    uint64_t remaining() const noexcept { return bytes_.size() - pos_; }

    // What is being read ("key 'general.name'"), added to messages; empty for none.
    void set_context(std::string context) { context_ = std::move(context); }

    // Raises `code` (corrupt_file unless told): "<source>: [<context>: ]<what> at offset <at>".
    [[noreturn]] void fail(uint64_t at, const std::string& what, errc code = errc::corrupt_file) const {
        throw error(code, source_ + ": " + (context_.empty() ? "" : context_ + ": ") + what + " at offset " +
                              std::to_string(at));
    }

    // Fails unless n more bytes exist; `what` names the thing being read.
    void need(uint64_t n, const char* what) const {
        if (n > remaining())
            fail(pos_, std::string("truncated ") + what + ": needs " + std::to_string(n) + " bytes, the file has " +
                           std::to_string(remaining()) + " left");
    }

    template <class T>
    T read(const char* what) {
        static_assert(std::is_trivially_copyable_v<T>, "byte_cursor::read<T> copies bytes, so T must be trivially copyable");
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    // Copies n bytes to dst and moves past them.
    void copy_to(void* dst, uint64_t n, const char* what = "array elements") {
        need(n, what);
        if (n != 0) std::memcpy(dst, bytes_.data() + pos_, std::size_t(n));
        pos_ += n;
    }

    // A GGUF string: u64 length, then the bytes.
    std::string read_string(const char* what) {
        const uint64_t at = pos_;
        const uint64_t length = read<uint64_t>(what);
        if (length > remaining())
            fail(at, std::string(what) + " of " + std::to_string(length) + " bytes runs past the end of the file (" +
                         std::to_string(remaining()) + " bytes left)");
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), std::size_t(length));
        pos_ += length;
        return s;
    }

private:
    std::span<const std::byte> bytes_;
    const std::string& source_;
    std::string context_;
    uint64_t pos_ = 0;
};

}  // namespace llmrt::gguf::detail
