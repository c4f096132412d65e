#!/usr/bin/env bash
# Puts the llama.cpp sources that bench/peer compares llmrt with into .peer/ at the root of the
# checkout (git-ignored). Needs python3 with pip and network access to PyPI; no GPU.
#
#   bash bench/peer/fetch-llama-cpp.sh
#
# The sources come from PyPI's llama-cpp-python sdist, which vendors one llama.cpp commit, so the
# peer is pinned by the sdist's version and checksum (below) rather than by a git clone. What it
# leaves in .peer/:
#   llama.cpp/            the vendored tree, without what no build here needs (docs, test models,
#                         web UI, ggml backends for other hardware), with lcpp-greedy hooked in
#   llama.cpp/gguf-py/    ggml's own GGUF reader and writer (make_llama_gguf.py uses it)
#   vocab/ggml-vocab-llama-bpe.gguf   the Llama 3 tokenizer (128256 tokens), no weights
#   LLAMA_CPP_COMMIT      the llama.cpp commit the sdist vendors
#
# Running it again replaces llama.cpp/ and vocab/ only (builds and models in .peer/ stay).
# Environment: LLAMA_CPP_PYTHON_VERSION (another sdist; its checksum is then not checked),
# PEER_DIR (default: .peer at the root of the checkout).
set -euo pipefail

default_version=0.3.36
default_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
expected_commit=0c1e57098bba43ac29e6e3b677cdceebdd22334f  # what 0.3.36 vendors
version=${LLAMA_CPP_PYTHON_VERSION:-$default_version}

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
peer=${PEER_DIR:-$repo_root/.peer}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "downloading llama-cpp-python $version (source distribution) from PyPI"
python3 -m pip download --quiet --no-deps --no-binary=:all: \
    "llama-cpp-python==$version" --dest "$work"
sdist=$(find "$work" -maxdepth 1 -name 'llama_cpp_python-*.tar.gz' | head -n 1)
[ -n "$sdist" ] || { echo "no sdist was downloaded" >&2; exit 1; }
if [ "$version" = "$default_version" ]; then
    echo "$default_sha256  $sdist" | sha256sum --check --quiet ||
        { echo "checksum mismatch for $sdist" >&2; exit 1; }
fi
tar -xzf "$sdist" -C "$work"
vendored=$(find "$work" -maxdepth 3 -type d -path '*/vendor/llama.cpp' | head -n 1)
if [ -z "$vendored" ] || [ ! -f "$vendored/include/llama.h" ]; then
    echo "the sdist has no vendor/llama.cpp" >&2
    exit 1
fi

# The sdist carries the submodule's git data: read the commit before the tree moves.
commit=unknown
if [ -e "$vendored/.git" ] && command -v git > /dev/null; then
    commit=$(git -C "$vendored" rev-parse HEAD 2> /dev/null || echo unknown)
fi
if [ "$version" = "$default_version" ] && [ "$commit" != unknown ] && [ "$commit" != "$expected_commit" ]; then
    echo "warning: expected llama.cpp $expected_commit, the sdist has $commit" >&2
fi

# Replace an earlier fetch's sources; builds, binaries, models and results in $peer stay.
mkdir -p "$peer"
rm -rf "${peer:?}/llama.cpp" "${peer:?}/vocab"
mkdir -p "$peer/vocab"
mv "$vendored" "$peer/llama.cpp"
echo "$commit" > "$peer/LLAMA_CPP_COMMIT"
echo "$version" > "$peer/LLAMA_CPP_PYTHON_VERSION"
cp "$peer/llama.cpp/models/ggml-vocab-llama-bpe.gguf" "$peer/vocab/"

# Trim: the tree is about 176 MB, most of it documentation and tokenizer test files. Without
# its .git (a link into the sdist's git data) llama.cpp's build-info reports the commit unknown.
lc=${peer:?}/llama.cpp
for unused in .git docs models media benches tools/ui; do
    rm -rf "${lc:?}/$unused"
done
for backend in sycl hexagon opencl metal et cann musa webgpu zdnn zendnn openvino virtgpu; do
    rm -rf "${lc:?}/ggml/src/ggml-$backend"
done

# lcpp-greedy, built as one of llama.cpp's examples (build.sh refreshes the source).
mkdir -p "$lc/examples/lcpp-greedy"
cp "$script_dir/lcpp_greedy.cpp" "$lc/examples/lcpp-greedy/"
cat > "$lc/examples/lcpp-greedy/CMakeLists.txt" << 'EOF'
# Added by llmrt's bench/peer/fetch-llama-cpp.sh: greedy token ids and top-2 margins.
add_executable(lcpp-greedy lcpp_greedy.cpp)
target_link_libraries(lcpp-greedy PRIVATE llama)
target_compile_features(lcpp-greedy PRIVATE cxx_std_17)
EOF
echo 'add_subdirectory(lcpp-greedy)' >> "$lc/examples/CMakeLists.txt"

echo "llama.cpp $commit (llama-cpp-python $version) in $peer: $(du -sh "$peer" | cut -f1)"
