// A scratch folder for one test process, removed when the program ends.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace llmrt_test {

inline const std::filesystem::path& scratch_dir() {
    static const struct dir {
        std::filesystem::path path =
            std::filesystem::temp_directory_path() / ("llmrt_gguf_test_" + std::to_string(::getpid()));
        dir() { std::filesystem::create_directories(path); }
        ~dir() {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
    } d;
    return d.path;
}

}  // namespace llmrt_test
