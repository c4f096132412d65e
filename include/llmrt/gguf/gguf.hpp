// GGUF v3 files: the reader (llmrt::gguf::file), the writer (llmrt::gguf::writer) and ggml's type table.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/gguf/format.hpp"
#include "llmrt/gguf/ggml_types.hpp"
#include "llmrt/gguf/metadata.hpp"
#include "llmrt/gguf/reader.hpp"
#include "llmrt/gguf/value.hpp"
#include "llmrt/gguf/writer.hpp"
