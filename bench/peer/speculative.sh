#!/usr/bin/env bash
# llama.cpp's speculative decoding on the pair tools/train_pair/gpu_run.sh trains, beside
# llmrt-bench-speculative's (issue #32): the same GGUF files and the same prompt texts, on the
# same GPU.
#
#   bash bench/peer/speculative.sh PAIR_DIR [REPS]
#
# PAIR_DIR holds target-q8_0.gguf, draft-q4_K.gguf and prompts/*.txt (gpu_run.sh's bench step
# writes them). For each prompt, the fastest of REPS (default 3) runs of 256 greedy tokens:
#   plain    llama-speculative-simple --spec-type none (the same loop and timer, no drafts);
#            llama-simple where that refuses (its time includes the prompt's)
#   draft    llama-speculative-simple -md draft-q4_K.gguf, n_max 16, p_min 0.75 (llmrt's defaults)
#   n-gram   llama-speculative-simple --spec-type ngram-simple
# Decoding tokens/s is llama.cpp's own "decoded N tokens in T seconds" (the prompt excluded).
# Prints a table and writes it to OUT (default PAIR_DIR)/llama-speculative.md, each run's log
# beside it. Needs .peer/bin/llama-speculative-simple and llama-simple (bench/peer/build.sh).
set -uo pipefail

pair=${1:?"speculative.sh: give the pair's folder (tools/train_pair/gpu_run.sh's DIR)"}
reps=${2:-3}
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${PEER_BIN:-$script_dir/../../.peer/bin}
out=${OUT:-$pair}
mkdir -p "$out/llama-speculative-logs"
target=$pair/target-q8_0.gguf
draft=$pair/draft-q4_K.gguf
for f in "$target" "$draft" "$bin/llama-speculative-simple" "$bin/llama-simple"; do
    [ -e "$f" ] || { echo "speculative.sh: missing $f" >&2; exit 1; }
done
common=(-m "$target" -n 256 -ngl 99 -c 1024 --temp 0 --seed 1 --spec-draft-n-max 16)

speed_of() { grep -o 'decoded *[0-9]* tokens in *[0-9.]* seconds, speed: *[0-9.]*' "$1" | tail -1 | awk '{print $NF}'; }
simple_speed_of() { grep -o 'speed: *[0-9.]* t/s' "$1" | tail -1 | awk '{print $2}'; }
accept_of() { grep -o 'accept *= *[0-9.]*%' "$1" | tail -1 | awk '{print $NF}'; }

best() {  # NAME COMMAND...: the fastest of reps runs' decoding tokens/s (and the log of the last)
    local name=$1 b="" s log
    shift
    for r in $(seq "$reps"); do
        log="$out/llama-speculative-logs/$name.$r.log"
        timeout 300 "$@" > "$log" 2>&1
        s=$(speed_of "$log")
        [ -z "$s" ] && s=$(simple_speed_of "$log")
        [ -n "$s" ] && b=$(python3 -c "print(max(float('$s'), float('${b:-0}')))")
    done
    echo "${b:-failed}"
}

table="$out/llama-speculative.md"
{
    echo "llama.cpp $(cat "$script_dir/../../.peer/LLAMA_CPP_COMMIT" 2> /dev/null || echo '(commit unknown)'), target $(basename "$target"), draft $(basename "$draft"), 256 greedy tokens, fastest of $reps"
    echo
    echo "| prompt | plain tokens/s | draft model tokens/s | speedup | acceptance | n-gram tokens/s | speedup |"
    echo "|---|---|---|---|---|---|---|"
} > "$table"
for p in "$pair"/prompts/*.txt; do
    name=$(basename "$p" .txt)
    plain=$(best "$name-plain" "$bin/llama-speculative-simple" "${common[@]}" -f "$p" --spec-type none)
    if [ "$plain" = failed ]; then
        plain=$(best "$name-plain-simple" "$bin/llama-simple" -m "$target" -n 256 -ngl 99 "$(cat "$p")")
    fi
    spec=$(best "$name-draft" "$bin/llama-speculative-simple" "${common[@]}" -f "$p" -md "$draft" -ngld 99 \
        --spec-draft-p-min 0.75)
    accept=$(accept_of "$out/llama-speculative-logs/$name-draft.$reps.log")
    ngram=$(best "$name-ngram" "$bin/llama-speculative-simple" "${common[@]}" -f "$p" --spec-type ngram-simple)
    ratio() { python3 -c "print(f'{float(\"$1\") / float(\"$2\"):.2f}x')" 2> /dev/null || echo "-"; }
    echo "| $name | $plain | $spec | $(ratio "$spec" "$plain") | ${accept:-?} | $ngram | $(ratio "$ngram" "$plain") |" >> "$table"
done
cat "$table"
