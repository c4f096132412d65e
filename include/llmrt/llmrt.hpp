// llmrt: quantized LLM kernels and the small runtime around them.
// This umbrella includes everything that needs no GPU toolchain.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/core/error.hpp"
#include "llmrt/core/float_convert.hpp"
#include "llmrt/core/qtype.hpp"
#include "llmrt/cpu/matvec.hpp"
#include "llmrt/gguf/gguf.hpp"
#include "llmrt/graph/executor.hpp"
#include "llmrt/cpu/backend.hpp"
#include "llmrt/model/model.hpp"
#include "llmrt/quant/codec.hpp"
#include "llmrt/quant/dispatch.hpp"
#include "llmrt/quant/types.hpp"
#include "llmrt/sample/sample.hpp"
