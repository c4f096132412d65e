#!/usr/bin/env bash
# check_with_clang.sh CLANGXX HEADER_LIST INCLUDE_FLAGS...: compiles each header of HEADER_LIST
# (one per line, relative to an include folder) alone with clang++ -std=c++20 -Wall -Wextra
# -Werror, in parallel; fails naming every header that does not compile, with its messages.
set -uo pipefail
clangxx=$1 list=$2
shift 2
if [ -z "$clangxx" ] || [ "$clangxx" = "LLMRT_HEADER_CLANGXX-NOTFOUND" ]; then
  echo "no clang++ installed: the clang header check was not run"
  exit 0
fi
export clangxx
export flags="$*"
check() {
  # shellcheck disable=SC2086
  if ! out=$(echo "#include <$1>" | "$clangxx" -std=c++20 -Wall -Wextra -Werror -fsyntax-only $flags -x c++ - 2>&1); then
    printf 'FAILED: %s\n%s\n' "$1" "$out"
    return 1
  fi
}
export -f check
count=$(grep -c . "$list")
if grep . "$list" | xargs -P "$(nproc)" -I{} bash -c 'check "$@"' _ {}; then
  echo "$("$clangxx" --version | head -1): $count headers compile alone, warning-free"
else
  exit 1
fi
