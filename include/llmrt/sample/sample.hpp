// llmrt's sampler layer: sampler chain, counter-based RNG, drafters, lossless verification.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/sample/draft_policy.hpp"
#include "llmrt/sample/drafter.hpp"
#include "llmrt/sample/generator.hpp"
#include "llmrt/sample/model.hpp"
#include "llmrt/sample/model_drafter.hpp"
#include "llmrt/sample/ngram_drafter.hpp"
#include "llmrt/sample/rng.hpp"
#include "llmrt/sample/sampler_chain.hpp"
#include "llmrt/sample/samplers.hpp"
#include "llmrt/sample/stats.hpp"
#include "llmrt/sample/token_distribution.hpp"
#include "llmrt/sample/verify.hpp"
