// Counting replacements of the global allocation functions (kept in a translation unit of their
// own, so that no caller sees malloc and free through inlining).
#include "count_allocations.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> allocations{0};

void* counted(std::size_t n, std::size_t alignment) {
    ++allocations;
    n = n ? n : 1;
    void* p = alignment <= alignof(std::max_align_t) ? std::malloc(n)
                                                     : std::aligned_alloc(alignment, (n + alignment - 1) / alignment * alignment);
    if (!p) throw std::bad_alloc();
    return p;
}
}  // namespace

long llmrt::test::allocation_count() noexcept { return allocations.load(); }

void* operator new(std::size_t n) { return counted(n, 0); }
void* operator new[](std::size_t n) { return counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted(n, std::size_t(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
