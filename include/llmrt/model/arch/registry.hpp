// The architectures llmrt loads, by general.architecture.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <array>
#include <string>
#include <string_view>

#include "llmrt/model/arch/architecture.hpp"
#include "llmrt/model/arch/gpt_oss.hpp"
#include "llmrt/model/arch/llama.hpp"
#include "llmrt/model/arch/qwen2.hpp"
#include "llmrt/model/arch/qwen3.hpp"
#include "llmrt/model/arch/qwen3moe.hpp"

namespace llmrt::model {

inline constexpr std::array<const architecture*, 5> architectures{&arch::llama, &arch::qwen2, &arch::qwen3,
                                                                   &arch::qwen3moe, &arch::gpt_oss};

// The architecture called `name`, or nullptr.
inline const architecture* find_architecture(std::string_view name) noexcept {
    for (const architecture* a : architectures)
        if (a->name == name) return a;
    return nullptr;
}

// "llama", "qwen2", "qwen3", "qwen3moe", "gpt-oss" (for messages).
inline std::string architecture_names() {
    std::string s;
    for (const architecture* a : architectures) s += (s.empty() ? "\"" : ", \"") + std::string(a->name) + "\"";
    return s;
}

}  // namespace llmrt::model
