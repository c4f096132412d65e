#!/usr/bin/env bash
# run_example.sh BUILD WORK SETTINGS GENERATOR: builds examples/test_your_kernel the way a user
# does and runs its tests: installs llmrt's build tree BUILD into WORK/prefix (cmake --install),
# configures the example against it through find_package with the initial cache SETTINGS (which
# picks the shader or the CUDA half), builds it and runs its ctest.
# Exits 77 (CTest's skip code here) when the tests passed only by skipping for want of a device.
set -euo pipefail
build=$1 work=$2 settings=$3 generator=$4
example="$(cd "$(dirname "$0")/../../examples/test_your_kernel" && pwd)"
rm -rf "$work" && mkdir -p "$work"

step() {  # step NAME COMMAND...: runs COMMAND with its output in WORK/NAME.log, shown on failure
  local name=$1
  shift
  if ! "$@" >"$work/$name.log" 2>&1; then
    cat "$work/$name.log"
    echo "run_example.sh: $name failed: $*" >&2
    exit 1
  fi
}
step install cmake --install "$build" --prefix "$work/prefix"
step configure cmake -S "$example" -B "$work/build" -G "$generator" -C "$settings" -DCMAKE_PREFIX_PATH="$work/prefix"
step build cmake --build "$work/build"

ctest --test-dir "$work/build" --output-on-failure --verbose 2>&1 | tee "$work/ctest.log"
status=${PIPESTATUS[0]}
if [ "$status" = 0 ] && grep -q "MESSAGE: skipped: no " "$work/ctest.log"; then
  echo "run_example.sh: the example built; its device tests were skipped (no device, see above)"
  exit 77
fi
exit "$status"
