// Hand-built GGUF bytes for the corruption tests, and a check that a parse fails with the right
// code at the right offset.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llmrt/gguf/gguf.hpp"

namespace llmrt_test {

// Appends GGUF fields little-endian; size() is the offset of the next field.
struct gguf_bytes {
    std::vector<std::byte> bytes;

    uint64_t size() const { return bytes.size(); }

    // resize + memcpy rather than insert: g++ 12 warns falsely (-Wstringop-overflow) on insert.
    template <class T>
    gguf_bytes& put(T v) {
        const std::size_t at = bytes.size();
        bytes.resize(at + sizeof(T));
        std::memcpy(bytes.data() + at, &v, sizeof(T));
        return *this;
    }
    gguf_bytes& u8(uint8_t v) { return put(v); }
    gguf_bytes& u32(uint32_t v) { return put(v); }
    gguf_bytes& u64(uint64_t v) { return put(v); }
    gguf_bytes& raw(std::string_view s) {
        const std::size_t at = bytes.size();
        bytes.resize(at + s.size());
        if (!s.empty()) std::memcpy(bytes.data() + at, s.data(), s.size());
        return *this;
    }
    gguf_bytes& str(std::string_view s) { return u64(s.size()).raw(s); }
    gguf_bytes& zeros(std::size_t n) {
        bytes.resize(bytes.size() + n);
        return *this;
    }
    gguf_bytes& pad_to(std::size_t alignment) { return zeros((alignment - size() % alignment) % alignment); }

    // Magic, version, counts: 24 bytes.
    gguf_bytes& header(uint64_t tensor_count, uint64_t kv_count, uint32_t version = 3) {
        return raw("GGUF").u32(version).u64(tensor_count).u64(kv_count);
    }
    gguf_bytes& kv_u32(std::string_view key, uint32_t v) {
        return str(key).u32(uint32_t(llmrt::gguf::value_type::uint32)).u32(v);
    }
    gguf_bytes& tensor_info(std::string_view name, std::initializer_list<uint64_t> ne, llmrt::qtype type,
                            uint64_t offset) {
        str(name).u32(uint32_t(ne.size()));
        for (uint64_t d : ne) u64(d);
        return u32(uint32_t(type)).u64(offset);
    }
};

// Parses a copy of `bytes` in a heap block of exactly their size (so AddressSanitizer sees any
// read past the end).
inline llmrt::gguf::file parse_exact(std::span<const std::byte> bytes, std::string source = "test.gguf") {
    auto copy = std::vector<std::byte>(bytes.begin(), bytes.end());
    return llmrt::gguf::file::from_bytes(std::move(copy), std::move(source));
}

// The number after the last "at offset " in a message, if any.
inline std::optional<uint64_t> offset_in(std::string_view message) {
    const auto at = message.rfind("at offset ");
    if (at == std::string_view::npos) return std::nullopt;
    uint64_t n = 0;
    std::size_t i = at + 10;
    if (i >= message.size() || message[i] < '0' || message[i] > '9') return std::nullopt;
    for (; i < message.size() && message[i] >= '0' && message[i] <= '9'; ++i) n = n * 10 + uint64_t(message[i] - '0');
    return n;
}

// Checks that parsing `bytes` raises llmrt::error with `code`, whose message names the file, the
// byte offset `offset` and contains `fragment`.
inline void check_rejected(std::span<const std::byte> bytes, uint64_t offset, std::string_view fragment,
                           llmrt::errc code = llmrt::errc::corrupt_file) {
    try {
        parse_exact(bytes);
        FAIL("parsing succeeded; expected an error at offset " << offset << " mentioning '" << fragment << "'");
    } catch (const llmrt::error& e) {
        const std::string message = e.what();
        INFO("message: " << message);
        CHECK(e.code() == code);
        CHECK(message.find("test.gguf: ") != std::string::npos);
        CHECK(offset_in(message) == std::optional<uint64_t>(offset));
        CHECK(message.find(fragment) != std::string::npos);
    }
}
inline void check_rejected(const gguf_bytes& b, uint64_t offset, std::string_view fragment,
                           llmrt::errc code = llmrt::errc::corrupt_file) {
    check_rejected(b.bytes, offset, fragment, code);
}

}  // namespace llmrt_test
