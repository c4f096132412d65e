// The llama-style model on the graph executor: hyperparameters, weights, graph, model, vocabulary,
// greedy generation and the random model generator.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/model/greedy.hpp"
#include "llmrt/model/hparams.hpp"
#include "llmrt/model/llama.hpp"
#include "llmrt/model/llama_graph.hpp"
#include "llmrt/model/random_model.hpp"
#include "llmrt/model/vocab.hpp"
#include "llmrt/model/weights.hpp"
