// llmrt's unit-testing toolkit: error measures, seeded input generators, output poisoning and the
// CPU references for kernels, and model doubles for llmrt::sample. Host-only and free of test
// frameworks; the doctest adapter (llmrt/testing/doctest.hpp) and the CUDA helpers
// (llmrt/testing/cuda.hpp) are included apart.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/testing/generate.hpp"
#include "llmrt/testing/measures.hpp"
#include "llmrt/testing/model_doubles.hpp"
#include "llmrt/testing/poison.hpp"
#include "llmrt/testing/readback.hpp"
#include "llmrt/testing/reference.hpp"
