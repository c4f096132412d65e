// llmrt is C++20. A translation unit compiled as an earlier C++ gets one sentence saying so and
// stops there, instead of hundreds of errors from the first concept it meets. Every public header
// includes this first. (Not under nvcc, whose host and device passes report the standard
// differently; its C++20 is set by the CMake targets.)
#pragma once

#if !defined(__CUDACC__) && (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 202002L
#error "llmrt needs C++20: compile with -std=c++20 (MSVC: /std:c++20) or newer"
#include <llmrt_needs_cxx20>  // no such header: the compiler stops at this line
#endif
