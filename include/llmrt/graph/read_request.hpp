// One destination of a read that waits once for several (executor::read_together): bytes of
// tensor t from byte_offset on, to dst. Its own header, so that a backend's program can take a
// list of them without the executor.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <span>
#include <type_traits>

#include "llmrt/graph/node.hpp"

namespace llmrt::graph {

struct read_request {
    tensor t;
    std::size_t byte_offset = 0;
    void* dst = nullptr;
    std::size_t bytes = 0;

    // The whole of values, from the tensor's first byte.
    template <class T>
    static read_request of(tensor t, std::span<T> values) {
        static_assert(std::is_trivially_copyable_v<T>, "read_request::of: T must be trivially copyable");
        return {t, 0, values.data(), values.size_bytes()};
    }
};

}  // namespace llmrt::graph
