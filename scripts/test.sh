#!/usr/bin/env bash
# Builds everything with the default compiler (g++; warnings are errors, -DLLMRT_WERROR=ON; CUDA code is
# compiled to sm_90 PTX when nvcc is present) and runs every test; then builds the cpu tests a second
# time with clang++ (warnings are errors too), AddressSanitizer and UBSan with float-cast-overflow,
# and runs them. GPU tests skip without a GPU, except Vulkan, which runs on lavapipe.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/llmrt-xdg}
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

# CUDA as PTX for sm_90 (90-virtual): every CUDA source still goes through nvcc's front end and
# code generator, warnings as errors, but ptxas (SASS) is left to the driver's JIT: CI has no GPU
# to run it, and skipping it takes a third off each CUDA file (generate.cpp: 364 -> 258 s). Build
# with CMAKE_CUDA_ARCHITECTURES=90 (the default) to run the CUDA tests.
cuda_arch=${LLMRT_CI_CUDA_ARCHITECTURES:-90-virtual}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$cuda_arch" -DLLMRT_WERROR=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

# clang++ compiles the sanitized tests in half the time g++ takes (-O1: a third less again).
cxx_sanitize=$(command -v clang++ || command -v clang++-14 || echo c++)
cmake -S . -B build-sanitize -G Ninja -DCMAKE_CXX_COMPILER="$cxx_sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DLLMRT_SANITIZE=ON -DLLMRT_WERROR=ON -DLLMRT_FUZZ=OFF \
  -DLLMRT_CUDA=OFF -DLLMRT_VULKAN=OFF -DLLMRT_BUILD_BENCH=OFF -DLLMRT_BUILD_EXAMPLES=OFF
cmake --build build-sanitize -j "$jobs"
ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -L cpu -E test_package
