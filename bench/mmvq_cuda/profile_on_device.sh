#!/usr/bin/env bash
# Profiles chosen mmvq launches with Nsight Compute (stall reasons, shared-memory bank conflicts,
# instruction and byte counts) and dumps their SASS. Args: "type shape ncols [per-row]" ...
BIN=${BIN:-.cudabin}
OUT=${OUT:-/tmp/mmvq_out}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
for r in short_scoreboard mio_throttle barrier wait math_pipe_throttle lg_throttle sleeping not_selected selected \
         dispatch_stall drain imc_miss no_instruction branch_resolving tex_throttle membar misc; do
  M=$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
M=$M,smsp__inst_executed.sum,dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
for cfg in "$@"; do
  set -- $cfg
  extra=""; [ "${4:-}" = "per-row" ] && extra="--copies per-row"
  echo "=== $cfg" >> "$OUT/profile.log"
  timeout 120 "$NCU" --metrics $M -k regex:mmvq_kernel --launch-count 1 "$BIN/llmrt-bench-mmvq-cuda" --types $1 \
    --shapes $2 --ncols $3 $extra --json /tmp/p.json 2>&1 | grep -E "^\s+[a-z_]+__" >> "$OUT/profile.log"
done
/usr/local/cuda/bin/cuobjdump -sass "$BIN/llmrt-bench-mmvq-cuda" > /tmp/all.sass 2>&1
awk '/Function : .*mmvq_kernelINS_4q2_KELi1E/{p=1} /Function : /&&!/q2_KELi1E/{p=0} p' /tmp/all.sass \
  | grep -v '^\s*/\* 0x' > "$OUT/sass_q2K1.txt"
echo "sass lines: $(wc -l < "$OUT/sass_q2K1.txt")"
