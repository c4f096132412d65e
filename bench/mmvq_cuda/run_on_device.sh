#!/usr/bin/env bash
# Runs the CUDA tests, the custom-kernel example, compute-sanitizer, the mmvq bench and a
# profile on a GPU machine, from binaries built elsewhere and copied into $BIN (default .cudabin):
#   cp build-cuda/tests/cuda/test_cuda_* build-cuda/examples/custom_kernel/llmrt-example-custom-kernel \
#      build-cuda/bench/mmvq_cuda/llmrt-bench-mmvq-cuda .cudabin/
# Steps (arguments, in order): tests, sanitize, bench, bench-quick, profile. Logs go to $OUT
# (default /tmp/mmvq_out), one file per step; a summary is printed last.
set -u
BIN=${BIN:-.cudabin}
OUT=${OUT:-/tmp/mmvq_out}
mkdir -p "$OUT"
CUDA_BIN=/usr/local/cuda/bin
CS=$(command -v compute-sanitizer || echo $CUDA_BIN/compute-sanitizer)
NCU=$(command -v ncu || echo $CUDA_BIN/ncu)
TESTS="test_cuda_quantize test_cuda_codecs test_cuda_mmvq"
summary=""
for step in "$@"; do
  case "$step" in
    tests)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/tests.log" 2>&1
      for t in $TESTS; do
        echo "=== $t" >> "$OUT/tests.log"
        "$BIN/$t" >> "$OUT/tests.log" 2>&1; rc=$?
        summary+="$t rc=$rc: $(grep -E 'test cases:' "$OUT/tests.log" | tail -1)\n"
      done
      echo "=== example" >> "$OUT/tests.log"
      "$BIN/llmrt-example-custom-kernel" >> "$OUT/tests.log" 2>&1; rc=$?
      summary+="example rc=$rc: $(tail -1 "$OUT/tests.log")\n"
      ;;
    sanitize)
      for tool in memcheck racecheck; do
        for t in $TESTS; do
          echo "=== $tool $t" >> "$OUT/sanitize.log"
          timeout ${SAN_TIMEOUT:-200} "$CS" --tool "$tool" --error-exitcode 9 "$BIN/$t" > /tmp/san.log 2>&1; rc=$?
          grep -E "^=========" /tmp/san.log | head -40 >> "$OUT/sanitize.log"
          grep -E "test cases:" /tmp/san.log >> "$OUT/sanitize.log"
          summary+="$tool $t rc=$rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log | tail -1)\n"
        done
      done
      ;;
    bench)
      "$BIN/llmrt-bench-mmvq-cuda" --json "$OUT/mmvq_cuda.json" > "$OUT/bench.log" 2>&1; rc=$?
      summary+="bench rc=$rc\n"
      ;;
    bench-quick)
      "$BIN/llmrt-bench-mmvq-cuda" --json "$OUT/mmvq_cuda.json" --ncols 1,8 > "$OUT/bench.log" 2>&1; rc=$?
      summary+="bench-quick rc=$rc\n"
      ;;
    profile)
      for cfg in "q4_K 128256x4096 1" "q2_K 128256x4096 1" "q2_K 128256x4096 8" "q4_K 4096x4096 1"; do
        set -- $cfg
        echo "=== ncu $cfg" >> "$OUT/profile.log"
        timeout 120 "$NCU" --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
          --section WarpStateStats --section SchedulerStats --section LaunchStats -k regex:mmvq_kernel \
          --launch-count 1 "$BIN/llmrt-bench-mmvq-cuda" --types $1 --shapes $2 --ncols $3 --json /tmp/p.json \
          2>&1 | grep -vE "^(type|device|q[0-9]|mxfp4|wrote)" >> "$OUT/profile.log"
      done
      for f in '_ZN5llmrt4cuda11mmvq_kernelINS_4q4_KELi1ELi4EEEvNS0_6detail11mmvq_paramsE14CUtensorMap_st' \
               '_ZN5llmrt4cuda11mmvq_kernelINS_4q2_KELi1ELi4EEEvNS0_6detail11mmvq_paramsE14CUtensorMap_st' \
               '_ZN5llmrt4cuda11mmvq_kernelINS_4q2_KELi8ELi4EEEvNS0_6detail11mmvq_paramsE14CUtensorMap_st'; do
        $CUDA_BIN/cuobjdump -sass -fun "$f" "$BIN/llmrt-bench-mmvq-cuda" > /tmp/k.sass 2>&1
        echo "=== $f: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' /tmp/k.sass) instructions" >> "$OUT/sass.txt"
        grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_]+' /tmp/k.sass | awk '{print $NF}' | sort | uniq -c \
          | sort -rn | head -30 >> "$OUT/sass.txt"
        [ "${f#*q4_K}" != "$f" ] && cat /tmp/k.sass >> "$OUT/sass.txt"
      done
      summary+="profile done\n"
      ;;
  esac
done
tail -60 "$OUT/bench.log" 2>/dev/null
printf "%b" "$summary"
