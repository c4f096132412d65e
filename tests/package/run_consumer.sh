#!/usr/bin/env bash
# run_consumer.sh MODE SOURCE BUILD WORK [BACKENDS]: builds and runs tests/package/consumer against
# llmrt consumed by MODE (find_package after installing BUILD, add_subdirectory, fetchcontent, or
# fresh_install: llmrt configured alone with BUILD_TESTING=OFF and the BACKENDS named ("vulkan
# cuda", either or both), built, installed, and a consumer of each backend's target built against
# the package).
set -euo pipefail
mode=$1 source=$2 build=$3 work=$4 backends=${5:-}
rm -rf "$work" && mkdir -p "$work"
# As a subproject llmrt leaves CUDA off unless asked (the consumer's CMakeLists.txt checks), so
# LLMRT_CUDA is left at its default there.
args=(-DLLMRT_CONSUME="$mode" -DLLMRT_SOURCE="$source" -DLLMRT_VULKAN=OFF)
if [ "$mode" = find_package ]; then
  cmake --install "$build" --prefix "$work/prefix" >/dev/null
  args+=(-DCMAKE_PREFIX_PATH="$work/prefix" -DLLMRT_CUDA=OFF)
fi
if [ "$mode" = fresh_install ]; then
  # A configure of llmrt alone (no tests, examples or benches), its default build, its install:
  # the package must hold everything llmrt::vulkan and llmrt::cuda need, embedded SPIR-V included.
  on() { case " $backends " in *" $1 "*) echo ON ;; *) echo OFF ;; esac; }
  cmake -S "$source" -B "$work/llmrt" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DLLMRT_BUILD_EXAMPLES=OFF \
    -DLLMRT_BUILD_BENCH=OFF -DLLMRT_CUDA="$(on cuda)" -DLLMRT_VULKAN="$(on vulkan)" >"$work/llmrt-configure.log" ||
    { cat "$work/llmrt-configure.log"; exit 1; }
  cmake --build "$work/llmrt" >"$work/llmrt-build.log" || { cat "$work/llmrt-build.log"; exit 1; }
  cmake --install "$work/llmrt" --prefix "$work/prefix" >/dev/null
  args=(-DLLMRT_CONSUME=find_package -DLLMRT_SOURCE="$source" -DCMAKE_PREFIX_PATH="$work/prefix"
        -DLLMRT_CONSUMER_VULKAN="$(on vulkan)" -DLLMRT_CONSUMER_CUDA="$(on cuda)")
fi
cmake -S "$source/tests/package/consumer" -B "$work/build" "${args[@]}" >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/build/consumer"
for backend in $backends; do "$work/build/consumer_$backend"; done
if [ "$mode" = add_subdirectory ] || [ "$mode" = fetchcontent ]; then
  # Installing the consumer installs none of llmrt's files (LLMRT_INSTALL is off in a subproject).
  cmake --install "$work/build" --prefix "$work/consumer-prefix" >/dev/null
  if [ -d "$work/consumer-prefix" ] && [ -n "$(find "$work/consumer-prefix" -type f | head -1)" ]; then
    echo "installing a project that uses llmrt as a subproject installed llmrt's files:"
    find "$work/consumer-prefix" -type f | head
    exit 1
  fi
fi
