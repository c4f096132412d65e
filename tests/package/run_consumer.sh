#!/usr/bin/env bash
# run_consumer.sh MODE SOURCE BUILD WORK: builds and runs tests/package/consumer against llmrt
# consumed by MODE (find_package after installing BUILD, add_subdirectory, fetchcontent).
set -euo pipefail
mode=$1 source=$2 build=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
args=(-DLLMRT_CONSUME="$mode" -DLLMRT_SOURCE="$source" -DLLMRT_CUDA=OFF -DLLMRT_VULKAN=OFF)
if [ "$mode" = find_package ]; then
  cmake --install "$build" --prefix "$work/prefix" >/dev/null
  args+=(-DCMAKE_PREFIX_PATH="$work/prefix")
fi
cmake -S "$source/tests/package/consumer" -B "$work/build" "${args[@]}" >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/build/consumer"
