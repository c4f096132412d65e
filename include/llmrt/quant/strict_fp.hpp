// Floating-point contraction off for the code between LLMRT_STRICT_FP_BEGIN and
// LLMRT_STRICT_FP_END, whatever the including program's flags.
//
// ggml's reference quantizers round every product before adding it; a fused multiply-add, which
// g++ and clang form by themselves once -march enables FMA (g++ even at -O2 by default:
// -ffp-contract=fast), changes bytes. The CMake target passes -ffp-contract=off; these pragmas
// keep the quantizers bit-exact for a program that includes the headers without it.
//   g++    push_options / optimize("fp-contract=off") / pop_options around the definitions
//   clang  "clang fp contract(off)" inside float_control push/pop (clang 11 and newer)
// nvcc compiles the host code with the same host compiler and the CMake flag; its device pass
// gets no pragma (these functions are host-only).
#pragma once

#include "llmrt/core/cxx20.hpp"

#if defined(__CUDACC__) || defined(__CUDA_ARCH__)
#define LLMRT_STRICT_FP_BEGIN
#define LLMRT_STRICT_FP_END
#elif defined(__clang__)
#define LLMRT_STRICT_FP_BEGIN _Pragma("float_control(push)") _Pragma("clang fp contract(off)")
#define LLMRT_STRICT_FP_END _Pragma("float_control(pop)")
#elif defined(__GNUC__)
#define LLMRT_STRICT_FP_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"fp-contract=off\")")
#define LLMRT_STRICT_FP_END _Pragma("GCC pop_options")
#else
#define LLMRT_STRICT_FP_BEGIN
#define LLMRT_STRICT_FP_END
#endif
