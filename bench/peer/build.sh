#!/usr/bin/env bash
# Builds the programs bench/peer/compare.sh runs, for one CUDA architecture, after
# fetch-llama-cpp.sh. Needs CMake, a C++20 compiler and the CUDA toolkit; no GPU, so it can run
# on a build machine and the binaries be copied to the GPU machine.
#
#   bash bench/peer/build.sh [ARCH] [llama.cpp] [llmrt]
#
# ARCH: a CUDA architecture as CMAKE_CUDA_ARCHITECTURES takes it, 90 (H100, H200; the default)
# or "native" (the GPUs of this machine). llmrt's CUDA kernels need compute capability 9.0 or
# newer. With neither llama.cpp nor llmrt named, both are built. Running it again resumes or
# rebuilds only what changed.
#
#   llama.cpp  (.peer/llama.cpp, static libraries, CUDA on, no CPU-specific code):
#              llama-bench, test-backend-ops, lcpp-greedy, llama-speculative-simple
#   llmrt      (this checkout, Release, CUDA on): llmrt-generate, llmrt-bench-decode,
#              llmrt-bench-mmvq-cuda
#
# The binaries are copied into .peer/bin, where compare.sh looks for them.
# Environment: JOBS (parallel compile jobs; default: the number of cores), PEER_DIR (default .peer),
# LLAMA_BUILD_DIR, LLMRT_BUILD_DIR (default .peer/build/llama.cpp and .peer/build/llmrt),
# LLAMA_CMAKE_ARGS, LLMRT_CMAKE_ARGS (more CMake options, split at spaces), LLMRT_VULKAN (ON
# builds llmrt's Vulkan backend too).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
peer=${PEER_DIR:-$repo_root/.peer}
llama_src=$peer/llama.cpp
llama_build=${LLAMA_BUILD_DIR:-$peer/build/llama.cpp}
llmrt_build=${LLMRT_BUILD_DIR:-$peer/build/llmrt}
bin=$peer/bin
jobs=${JOBS:-$(nproc)}

arch=90
build_llama=0
build_llmrt=0
for arg in "$@"; do
    case $arg in
        llama.cpp | llama) build_llama=1 ;;
        llmrt) build_llmrt=1 ;;
        native | [0-9]*) arch=$arg ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "build.sh: unknown argument '$arg' (an architecture such as 90, llama.cpp or llmrt)" >&2
            exit 2
            ;;
    esac
done
if [ $build_llama = 0 ] && [ $build_llmrt = 0 ]; then
    build_llama=1
    build_llmrt=1
fi

generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
read -r -a llama_extra <<< "${LLAMA_CMAKE_ARGS:-}"
read -r -a llmrt_extra <<< "${LLMRT_CMAKE_ARGS:-}"
mkdir -p "$bin"

if [ $build_llama = 1 ]; then
    if [ ! -f "$llama_src/examples/lcpp-greedy/CMakeLists.txt" ]; then
        echo "build.sh: no $llama_src with lcpp-greedy; run bench/peer/fetch-llama-cpp.sh first" >&2
        exit 1
    fi
    # The tool's source may have changed since the fetch.
    cmp -s "$script_dir/lcpp_greedy.cpp" "$llama_src/examples/lcpp-greedy/lcpp_greedy.cpp" ||
        cp "$script_dir/lcpp_greedy.cpp" "$llama_src/examples/lcpp-greedy/lcpp_greedy.cpp"
    echo "== llama.cpp $(cat "$peer/LLAMA_CPP_COMMIT" 2> /dev/null || echo '(commit unknown)') for sm_$arch in $llama_build"
    cmake -S "$llama_src" -B "$llama_build" "${generator[@]}" \
        -DCMAKE_BUILD_TYPE=Release \
        -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" -DGGML_NATIVE=OFF \
        -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
        "${llama_extra[@]}"
    llama_targets=(llama-bench test-backend-ops lcpp-greedy llama-speculative-simple)
    cmake --build "$llama_build" --parallel "$jobs" --target "${llama_targets[@]}"
    for t in "${llama_targets[@]}"; do cp "$llama_build/bin/$t" "$bin/"; done
fi

if [ $build_llmrt = 1 ]; then
    echo "== llmrt $(git -C "$repo_root" rev-parse --short HEAD 2> /dev/null || echo '') for sm_$arch in $llmrt_build"
    cmake -S "$repo_root" -B "$llmrt_build" "${generator[@]}" \
        -DCMAKE_BUILD_TYPE=Release \
        -DLLMRT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" -DLLMRT_VULKAN="${LLMRT_VULKAN:-OFF}" \
        -DLLMRT_WERROR=OFF -DBUILD_TESTING=OFF \
        "${llmrt_extra[@]}"
    cmake --build "$llmrt_build" --parallel "$jobs" --target llmrt-generate llmrt-bench-decode llmrt-bench-mmvq-cuda
    cp "$llmrt_build/examples/generate/llmrt-generate" "$llmrt_build/bench/decode/llmrt-bench-decode" \
        "$llmrt_build/bench/mmvq_cuda/llmrt-bench-mmvq-cuda" "$bin/"
fi

echo "built into $bin:"
ls "$bin"
