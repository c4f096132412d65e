// The loader tests' edits of a model file: a copy without one tensor or with a metadata key
// changed, and the message of the error that loading it raises.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <span>
#include <string>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/gguf/gguf.hpp>
#include <llmrt/model/model.hpp>

namespace llmrt::test {

// A copy of `w` without the tensor `skip` and with `edit` applied.
inline gguf::writer rebuilt(const gguf::writer& w, const std::string& skip = "",
                            const std::function<void(gguf::writer&)>& edit = {}) {
    gguf::writer out;
    for (const auto& [key, value] : w.metadata()) out.set(key, value);
    for (const auto& t : w.tensors())
        if (t.name != skip) out.add_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims), t.bytes());
    if (edit) edit(out);
    return out;
}

// The message of the llmrt::error that loading w on the CPU raises (empty when it loads).
inline std::string load_error(const gguf::writer& w, model::llama_options options = {.n_ctx = 16}) {
    cpu::backend b;
    try {
        model::llama_model<cpu::backend> m(b, gguf::file::from_bytes(w.to_bytes()), options);
    } catch (const llmrt::error& e) {
        return e.what();
    }
    return "";
}

// Whether `message` contains `part` (the message is logged with a failing check).
inline bool mentions(const std::string& message, const std::string& part) {
    INFO("message: " << message);
    return message.find(part) != std::string::npos;
}

}  // namespace llmrt::test
