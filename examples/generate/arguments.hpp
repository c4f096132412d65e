// Command-line values of the example programs (llmrt-generate, llmrt-speculative): a bad value
// raises llmrt::error naming the option and the text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <llmrt/core/error.hpp>

namespace llmrt_examples {

inline int32_t to_int(const std::string& option, const std::string& text) {
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 0 || v > INT32_MAX)
        throw llmrt::error(llmrt::errc::invalid_argument, option + " needs a non-negative integer, got '" + text + "'");
    return int32_t(v);
}

// Token ids separated by commas, as --prompt takes them.
inline std::vector<int32_t> to_ids(const std::string& text) {
    std::vector<int32_t> ids;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t comma = std::min(text.find(',', at), text.size());
        ids.push_back(to_int("--prompt", text.substr(at, comma - at)));
        at = comma + 1;
    }
    return ids;
}

}  // namespace llmrt_examples
