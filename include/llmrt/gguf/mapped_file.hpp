// A read-only memory map of a whole file (POSIX mmap), released when the owner goes away.
// Move-only; the mapped address does not change when the object moves.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <utility>

#include "llmrt/core/error.hpp"

namespace llmrt::gguf {

class mapped_file {
public:
    mapped_file() = default;

    // Maps `path` read-only; llmrt::error (errc::io_error) naming the path and the system's reason
    // when it cannot be opened or mapped. An empty file maps to an empty span.
    explicit mapped_file(const std::filesystem::path& path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail(path, "cannot open");
        struct stat st {};
        if (::fstat(fd, &st) != 0) {
            const int saved = errno;
            ::close(fd);
            errno = saved;
            fail(path, "cannot stat");
        }
        if (!S_ISREG(st.st_mode)) {
            ::close(fd);
            throw error(errc::io_error, path.string() + ": not a regular file");
        }
        size_ = std::size_t(st.st_size);
        if (size_ > 0) {
            void* addr = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (addr == MAP_FAILED) {
                const int saved = errno;
                ::close(fd);
                errno = saved;
                size_ = 0;
                fail(path, "cannot mmap");
            }
            data_ = static_cast<const std::byte*>(addr);
        }
        ::close(fd);  // the mapping keeps the file's pages reachable
    }

    mapped_file(mapped_file&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    mapped_file& operator=(mapped_file&& other) noexcept {
        if (this != &other) {
            unmap();
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;
    ~mapped_file() { unmap(); }

    std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }

private:
    [[noreturn]] static void fail(const std::filesystem::path& path, const char* what) {
        throw error(errc::io_error, path.string() + ": " + what + ": " + std::strerror(errno));
    }
    void unmap() noexcept {
        if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
        data_ = nullptr;
        size_ = 0;
    }

    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace llmrt::gguf
