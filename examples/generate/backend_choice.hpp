// Which backends this program was built with, and how a name on the command line becomes one.
// Shared by llmrt-generate and llmrt-compare.
//
//   cpu         the reference backend (quantized weights meet Q8_1-rounded activations, as on GPUs)
//   cpu:f32     float activations for every weight type
//   cpu:q8_1    the default, spelled out
//   cpu:ggml    ggml's CPU integer dot (activations in the type's vec_dot_type)
//
// The CUDA and Vulkan backends join here when they exist: a branch in with_backend and a name in
// backends_by_preference, each behind its LLMRT_* build switch.
#pragma once

#include <string>
#include <vector>

#include <llmrt/cpu/backend.hpp>
#include <llmrt/core/error.hpp>

namespace llmrt_examples {

// Backend names in the order "best present" picks them: CUDA, then Vulkan, then the CPU.
inline std::vector<std::string> backends_by_preference() { return {"cpu"}; }

inline std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

// Makes the backend `spec` names and calls f(backend, description).
template <class F>
void with_backend(const std::string& spec, F&& f) {
    const std::string kind = spec.substr(0, spec.find(':'));
    const std::string variant = spec.find(':') == std::string::npos ? "" : spec.substr(spec.find(':') + 1);
    if (kind == "cpu") {
        llmrt::cpu::backend_options o;
        if (variant == "f32") {
            o.quantized_activations = llmrt::cpu::activation_format::f32;
        } else if (variant == "ggml") {
            o.quantized_activations = llmrt::cpu::activation_format::ggml;
        } else if (!variant.empty() && variant != "q8_1") {
            throw llmrt::error(llmrt::errc::invalid_argument,
                               "backend '" + spec + "': the CPU backend's variants are cpu:q8_1, cpu:f32 and cpu:ggml");
        }
        llmrt::cpu::backend b(o);
        f(b, "cpu (" + std::string(llmrt::cpu::to_string(o.quantized_activations)) +
                 " activations for quantized weights, single-threaded reference)");
        return;
    }
    throw llmrt::error(llmrt::errc::missing_feature, "backend '" + spec + "' is not available in this build (available: " +
                                                         joined(backends_by_preference()) + ")");
}

}  // namespace llmrt_examples
