// llmrt::error: the one exception type the library throws.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <exception>
#include <string>
#include <utility>

namespace llmrt {

// What kind of failure an error reports; the message says what exactly was wrong.
enum class errc : int {
    invalid_argument = 1,  // a value out of its allowed range (n not a multiple of a block, ...)
    unsupported_type,      // a qtype that is unknown or not handled by this operation
    shape_mismatch,        // tensor shapes that do not fit together
    corrupt_file,          // a file whose contents contradict its own header or its length
    io_error,              // the operating system refused a file operation
    device_error,          // a CUDA or Vulkan call failed
    missing_feature,       // the device lacks a feature the operation needs
    out_of_memory,         // an allocation failed
};

inline const char* to_string(errc code) noexcept {
    switch (code) {
        case errc::invalid_argument: return "invalid argument";
        case errc::unsupported_type: return "unsupported type";
        case errc::shape_mismatch: return "shape mismatch";
        case errc::corrupt_file: return "corrupt file";
        case errc::io_error: return "I/O error";
        case errc::device_error: return "device error";
        case errc::missing_feature: return "missing feature";
        case errc::out_of_memory: return "out of memory";
    }
    return "unknown error";
}

class error : public std::exception {
public:
    error(errc code, std::string message)
        : code_(code), message_(std::string("llmrt: ") + std::move(message)) {}

    errc code() const noexcept { return code_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    errc code_;
    std::string message_;
};

// Throws when `condition` is false; the message is built only on failure.
template <class MakeMessage>
inline void check(bool condition, errc code, MakeMessage&& make_message) {
    if (!condition) throw error(code, std::forward<MakeMessage>(make_message)());
}

inline void check(bool condition, errc code, const char* message) {
    if (!condition) throw error(code, message);
}

}  // namespace llmrt
