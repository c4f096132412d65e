// The message of the llmrt::error a call raises, for tests that read what an error says.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "llmrt/core/error.hpp"

namespace llmrt_test {

// The message of the llmrt::error that f raises with `code`, or "" when it raises none (a failed check).
template <class F>
std::string error_message(F&& f, llmrt::errc code) {
    try {
        f();
    } catch (const llmrt::error& e) {
        CHECK(e.code() == code);
        return e.what();
    }
    FAIL("no llmrt::error raised");
    return "";
}

}  // namespace llmrt_test
