#!/usr/bin/env bash
# Installs what building and testing llmrt needs on Debian 12 (run as root, or with sudo).
set -euo pipefail
sudo_cmd=""
if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ clang libclang-rt-14-dev doctest-dev python3 python3-pip \
  libvulkan-dev glslang-tools glslang-dev spirv-tools mesa-vulkan-drivers vulkan-validationlayers >/dev/null
# Debian's own python3 refuses pip installs into the system (PEP 668) unless told otherwise.
python3 -m pip install -q gguf numpy 2>/dev/null || python3 -m pip install -q --break-system-packages gguf numpy
python3 -c "import gguf, numpy" || { echo "install-deps: python3 cannot import gguf and numpy" >&2; exit 1; }
