#!/usr/bin/env bash
# Builds everything (warnings are errors, -DLLMRT_WERROR=ON; CUDA code is compiled for sm_90 when nvcc is present)
# and runs every test; then builds the cpu tests with AddressSanitizer and UBSan and runs them.
# GPU tests skip without a GPU, except Vulkan, which runs on lavapipe.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/llmrt-xdg}
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DLLMRT_WERROR=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLMRT_SANITIZE=ON -DLLMRT_WERROR=ON \
  -DLLMRT_CUDA=OFF -DLLMRT_VULKAN=OFF -DLLMRT_BUILD_BENCH=OFF -DLLMRT_BUILD_EXAMPLES=OFF
cmake --build build-sanitize -j "$jobs"
ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -L cpu -E test_package
