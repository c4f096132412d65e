// llmrt's Vulkan backend in one include: context, buffers, pipelines, the embedded shaders and
// the quantized mat-vec dispatches. Needs the llmrt::vulkan CMake target.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include "llmrt/vulkan/buffer.hpp"
#include "llmrt/vulkan/check.hpp"
#include "llmrt/vulkan/context.hpp"
#include "llmrt/vulkan/mmvq.hpp"
#include "llmrt/vulkan/pipeline.hpp"
#include "llmrt/vulkan/shaders.hpp"
#include "llmrt/vulkan/spirv.hpp"
