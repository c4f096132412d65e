#!/usr/bin/env bash
# llmrt against llama.cpp on the same GPU and the same GGUF files, after fetch-llama-cpp.sh and
# build.sh (bench/peer/README.md says what each step measures).
#
#   bash bench/peer/compare.sh [models] [greedy] [decode] [depth] [prompt] [matvec]
#
# With no step named, all of them run, in that order. Every step prints a table in Markdown;
# the programs' own output goes to .peer/results/ (one log per step and model).
#
#   models  writes the GGUF files the other steps read, if missing (make_llama_gguf.py)
#   greedy  the first GREEDY_TOKENS greedy ids after PROMPT_IDS: lcpp-greedy vs llmrt-generate
#   decode  tokens/s generating 128 tokens: llama-bench tg128 vs llmrt-generate -n 129
#   depth   the same with DEPTH tokens already in the cache: llama-bench -d DEPTH tg128 vs
#           llmrt-bench-decode --depth DEPTH (on LONG_MODEL)
#   prompt  prompt processing: llama-bench pp PROMPT_TOKENS vs llmrt-bench-decode --prompt
#           PROMPT_TOKENS (on LONG_MODEL)
#   matvec  one mat-vec shape (4096 x 14336) at 1 and 8 columns: ggml's MUL_MAT in
#           test-backend-ops (activation quantization included) vs llmrt-bench-mmvq-cuda
#
# Environment (defaults in brackets):
#   MODELS          [ARCH:]SIZE:TYPE list for greedy and decode ["1b:q4_K 8b:q4_K 1b:q8_0 1b:q6_K 1b:q2_K"];
#                   ARCH is make_llama_gguf.py's --arch (default llama), e.g. qwen3:8b:q4_K
#   LONG_MODEL      the [ARCH:]SIZE:TYPE for depth and prompt [8b:q4_K]
#   MODEL_DIR       where the GGUF files are written [.peer/models]
#   PROMPT_IDS      [128000,791,4062,14198,39935,35308,927,279,16053,5679]
#   GREEDY_TOKENS [24]  DEPTH [4096]  PROMPT_TOKENS [512]  REPETITIONS (llama-bench -r) [3]
#   MATVEC_TYPES    ["q8_0 q4_K q2_K q6_K mxfp4"]
#   LLMRT_BACKEND   llmrt's --backend [cuda]     NGL  llama.cpp's GPU layers [99]
#   PEER_DIR [.peer]  PEER_BIN [.peer/bin]  RESULTS_DIR [.peer/results]  VOCAB  PYTHON [python3]
#   LLAMA_BENCH, TEST_BACKEND_OPS, LCPP_GREEDY, LLMRT_GENERATE, LLMRT_BENCH_DECODE,
#   LLMRT_BENCH_MMVQ    each program's path [PEER_BIN/its name]
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
peer=${PEER_DIR:-$repo_root/.peer}
peer_bin=${PEER_BIN:-$peer/bin}
llama_bench=${LLAMA_BENCH:-$peer_bin/llama-bench}
test_backend_ops=${TEST_BACKEND_OPS:-$peer_bin/test-backend-ops}
lcpp_greedy=${LCPP_GREEDY:-$peer_bin/lcpp-greedy}
llmrt_generate=${LLMRT_GENERATE:-$peer_bin/llmrt-generate}
llmrt_bench_decode=${LLMRT_BENCH_DECODE:-$peer_bin/llmrt-bench-decode}
llmrt_bench_mmvq=${LLMRT_BENCH_MMVQ:-$peer_bin/llmrt-bench-mmvq-cuda}

models=${MODELS:-"1b:q4_K 8b:q4_K 1b:q8_0 1b:q6_K 1b:q2_K"}
long_model=${LONG_MODEL:-8b:q4_K}
model_dir=${MODEL_DIR:-$peer/models}
vocab=${VOCAB:-$peer/vocab/ggml-vocab-llama-bpe.gguf}
prompt_ids=${PROMPT_IDS:-128000,791,4062,14198,39935,35308,927,279,16053,5679}
greedy_tokens=${GREEDY_TOKENS:-24}
depth=${DEPTH:-4096}
prompt_tokens=${PROMPT_TOKENS:-512}
repetitions=${REPETITIONS:-3}
matvec_types=${MATVEC_TYPES:-"q8_0 q4_K q2_K q6_K mxfp4"}
backend=${LLMRT_BACKEND:-cuda}
ngl=${NGL:-99}
results=${RESULTS_DIR:-$peer/results}
python=${PYTHON:-python3}
if [ -d "$peer/llama.cpp/gguf-py" ]; then
    export PYTHONPATH="$peer/llama.cpp/gguf-py${PYTHONPATH:+:$PYTHONPATH}"
fi
mkdir -p "$results"

model_parts() {  # [ARCH:]SIZE:TYPE -> "ARCH SIZE TYPE" (ARCH llama when left out)
    local a b c
    IFS=: read -r a b c <<< "$1"
    if [ -n "$c" ]; then echo "$a $b $c"; else echo "llama $a $b"; fi
}

model_file() {  # [ARCH:]SIZE:TYPE -> its GGUF path (ARCH-SIZE-TYPE.gguf)
    local arch size type
    read -r arch size type <<< "$(model_parts "$1")"
    echo "$model_dir/$arch-$size-$type.gguf"
}

need() {  # PROGRAM...: each must be an executable file
    for p in "$@"; do
        if [ ! -x "$p" ]; then
            echo "compare.sh: $p is missing: run bench/peer/build.sh, or set its variable (see the top of compare.sh)" >&2
            exit 1
        fi
    done
}

need_model() {  # [ARCH:]SIZE:TYPE
    local f
    f=$(model_file "$1")
    if [ ! -f "$f" ]; then
        echo "compare.sh: $f is missing: run the models step first" >&2
        exit 1
    fi
}

# llama-bench -o jsonl prints one JSON object per test: the mean tokens/s of the last one.
llama_bench_ts() {  # LOG
    "$python" -c '
import json, sys
try:
    lines = [line for line in open(sys.argv[1]) if line.startswith("{")]
    print("%.1f" % json.loads(lines[-1])["avg_ts"])
except (OSError, ValueError, KeyError, IndexError):
    print("-")' "$1"
}

json_field() {  # FILE KEY: the KEY of the first result of llmrt-bench-decode --json
    "$python" -c '
import json, sys
try:
    print("%.1f" % json.load(open(sys.argv[1]))["results"][0][sys.argv[2]])
except (OSError, ValueError, KeyError, IndexError):
    print("-")' "$1" "$2"
}

ratio() {  # A B: A / B to two decimals, or - when either is not a number
    awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'
}

step_models() {
    local m f arch size type
    mkdir -p "$model_dir"
    for m in $(printf '%s %s' "$models" "$long_model" | tr ' ' '\n' | awk 'NF && !seen[$0]++'); do
        f=$(model_file "$m")
        if [ -f "$f" ]; then
            echo "have $f"
        else
            read -r arch size type <<< "$(model_parts "$m")"
            "$python" "$script_dir/make_llama_gguf.py" "$f" --arch "$arch" --size "$size" --type "$type" --vocab "$vocab"
        fi
    done
}

step_greedy() {
    need "$lcpp_greedy" "$llmrt_generate"
    echo
    echo "Greedy ids after the prompt $prompt_ids: how many of the first $greedy_tokens agree"
    echo
    echo "| model | equal leading ids | llama.cpp's top-2 margin where they part |"
    echo "|---|---|---|"
    local m f log_a log_b a b n margin
    for m in $models; do
        need_model "$m"
        f=$(model_file "$m")
        log_a=$results/greedy-${m//:/-}-llama.cpp.log
        log_b=$results/greedy-${m//:/-}-llmrt.log
        "$lcpp_greedy" "$f" --prompt "$prompt_ids" -n "$greedy_tokens" -ngl "$ngl" > "$log_a" 2>&1 || true
        "$llmrt_generate" "$f" --prompt "$prompt_ids" -n "$greedy_tokens" --backend "$backend" > "$log_b" 2>&1 || true
        a=$(sed -n 's/^ids: *//p' "$log_a")
        b=$(sed -n 's/^output: *//p' "$log_b")
        if [ -z "$a" ] || [ -z "$b" ]; then
            echo "| $m | failed (see $log_a and $log_b) | |"
            continue
        fi
        # shellcheck disable=SC2086  # the id lists split at spaces
        n=$(paste -d' ' <(printf '%s\n' $a) <(printf '%s\n' $b) | awk '$1 != $2 { exit } { n++ } END { print n + 0 }')
        margin=""
        if [ "$n" -lt "$greedy_tokens" ]; then
            margin=$(sed -n "s/^step $n: id [0-9]*, margin //p" "$log_a")
        fi
        echo "| $m | $n of $greedy_tokens | $margin |"
    done
}

step_decode() {
    need "$llama_bench" "$llmrt_generate"
    echo
    echo "Decoding 128 tokens (llama-bench tg128: flash attention, $ngl GPU layers, $repetitions repetitions;"
    echo "llmrt-generate -n 129 --backend $backend: the 128 tokens after the first)"
    echo
    echo "| model | llama.cpp tokens/s | llmrt tokens/s | llmrt / llama.cpp |"
    echo "|---|---|---|---|"
    local m f log_a log_b a b
    for m in $models; do
        need_model "$m"
        f=$(model_file "$m")
        log_a=$results/decode-${m//:/-}-llama.cpp.log
        log_b=$results/decode-${m//:/-}-llmrt.log
        "$llama_bench" -m "$f" -p 0 -n 128 -fa 1 -ngl "$ngl" -r "$repetitions" -o jsonl > "$log_a" 2>&1 || true
        "$llmrt_generate" "$f" --prompt "$prompt_ids" -n 129 --backend "$backend" > "$log_b" 2>&1 || true
        a=$(llama_bench_ts "$log_a")
        b=$(sed -n 's/.*generation [0-9]* tokens in [0-9.]* ms (\([0-9.]*\) tokens\/s).*/\1/p' "$log_b")
        echo "| $m | $a | ${b:--} | $(ratio "${b:--}" "$a") |"
    done
}

# llama-bench against llmrt-bench-decode on the long model, each with its own extra arguments
# (words without spaces), as one table: $1 names the logs, $2 is the field of llmrt's JSON to
# compare, $3 the title, $4 the row's label.
compare_long_model() {
    local name=$1 field=$2 title=$3 row=$4 llama_args=$5 llmrt_args=$6
    need "$llama_bench" "$llmrt_bench_decode"
    need_model "$long_model"
    local f log_a log_b a b
    f=$(model_file "$long_model")
    log_a=$results/$name-${long_model//:/-}-llama.cpp.log
    log_b=$results/$name-${long_model//:/-}-llmrt.log
    # shellcheck disable=SC2086  # the extra arguments are split into words on purpose
    "$llama_bench" -m "$f" $llama_args -fa 1 -ngl "$ngl" -r "$repetitions" -o jsonl > "$log_a" 2>&1 || true
    # shellcheck disable=SC2086
    "$llmrt_bench_decode" --backend "$backend" --model "$f" $llmrt_args --tokens 128 --warmup 8 \
        --json "$log_b.json" > "$log_b" 2>&1 || true
    a=$(llama_bench_ts "$log_a")
    b=$(json_field "$log_b.json" "$field")
    echo
    echo "$title"
    echo
    echo "| model | llama.cpp tokens/s | llmrt tokens/s | llmrt / llama.cpp |"
    echo "|---|---|---|---|"
    echo "| $row | $a | $b | $(ratio "$b" "$a") |"
}

step_depth() {
    compare_long_model depth tokens_per_s \
        "Decoding with $depth tokens in the cache (llama-bench -d $depth tg128; llmrt-bench-decode --depth $depth --tokens 128)" \
        "$long_model at depth $depth" "-p 0 -n 128 -d $depth" "--depth $depth"
}

step_prompt() {
    compare_long_model prompt prompt_tokens_per_s \
        "Processing a $prompt_tokens-token prompt (llama-bench pp$prompt_tokens; llmrt-bench-decode --prompt $prompt_tokens)" \
        "$long_model" "-p $prompt_tokens -n 0" "--prompt $prompt_tokens"
}

step_matvec() {
    need "$test_backend_ops" "$llmrt_bench_mmvq"
    local t log_a log_b
    log_a=$results/matvec-llama.cpp.log
    log_b=$results/matvec-llmrt.log
    : > "$log_a"
    for t in $matvec_types; do
        "$test_backend_ops" perf -o MUL_MAT -b CUDA0 -p "type_a=$t,type_b=f32,m=4096,n=(1|8),k=14336," >> "$log_a" 2>&1 || true
    done
    "$llmrt_bench_mmvq" --types "$(echo "$matvec_types" | tr ' ' ',')" --shapes 4096x14336 --ncols 1,8 \
        --json "$log_b.json" > "$log_b" 2>&1 || true
    echo
    echo "Mat-vec, 4096 rows x 14336 (ggml: test-backend-ops perf MUL_MAT on CUDA0, quantizing the activations included)"
    echo
    # Its console output colours the rate; the parameters after k are the defaults.
    sed -E 's/\x1b\[[0-9;]*m//g' "$log_a" | grep -E '^ *MUL_MAT\(' | sed -E 's/^ *//; s/,bs=[^)]*\)/)/' ||
        echo "(no MUL_MAT lines: see $log_a)"
    echo
    echo "llmrt-bench-mmvq-cuda --shapes 4096x14336 --ncols 1,8 (also as JSON: $log_b.json)"
    echo
    cat "$log_b"
}

steps=("$@")
if [ ${#steps[@]} -eq 0 ]; then steps=(models greedy decode depth prompt matvec); fi
for s in "${steps[@]}"; do
    case $s in
        models | greedy | decode | depth | prompt | matvec) ;;
        *)
            echo "compare.sh: unknown step '$s' (models greedy decode depth prompt matvec)" >&2
            exit 2
            ;;
    esac
done
echo "llama.cpp $(cat "$peer/LLAMA_CPP_COMMIT" 2> /dev/null || echo '(commit unknown)'), llmrt $(git -C "$repo_root" rev-parse --short HEAD 2> /dev/null || echo '(not a git checkout)')"
for s in "${steps[@]}"; do "step_$s"; done
