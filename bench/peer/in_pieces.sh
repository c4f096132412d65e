#!/usr/bin/env bash
# bench/peer's comparison on a GPU machine that is reached through commands of limited length (a
# batch job with a wall-clock limit, a remote shell that may drop): each call does what fits of
# the stages below in SECONDS, keeps what it built and measured under STATE, and the next call
# goes on from there. Call it again until it prints "all stages done". Every log and table is
# also copied to OUT.
#
#   bash bench/peer/in_pieces.sh SECONDS [STAGE ...]
#
# Stages (default: all of them, in this order):
#   build      llama.cpp (build.sh) and llmrt with its CUDA tests, side by side, while the
#              model files of GREEDY_MODELS and DECODE_MODELS are written (make_llama_gguf.py)
#   tests      each CUDA test of TESTS (one log each; a test's status is its exit code)
#   greedy     compare.sh greedy on GREEDY_MODELS
#   decode     compare.sh decode on DECODE_MODELS
#   breakdown  llmrt-bench-decode's device time by step kind for each of DECODE_MODELS
#   without    llmrt-bench-decode on each of DECODE_MODELS with each fusion of WITHOUT switched off
#              (--without: what each fusion is worth)
#   gpus       (only when named) on a machine of several GPUs: tests/nccl/test_model_tp_cuda (and
#              its failed-rank case, skipped by default, within 90 s), then
#              on each of DECODE_MODELS for N = 1, 2, 4, ... up to the GPUs present: llmrt-generate
#              (--gpus N past one: tensor parallel, mixture-of-experts models expert parallel), its
#              greedy ids against one GPU's, and llama-bench -sm layer, row and tensor on N GPUs;
#              the table in OUT/gpus.md
#
# Needs what build.sh and compare.sh need, .peer/llama.cpp from fetch-llama-cpp.sh (copy .peer
# to the GPU machine with the checkout), and numpy for the model files. A stage that finished is
# not run again; remove STATE/done/STAGE to repeat it.
#
# Environment (defaults in brackets):
#   GREEDY_MODELS   [ARCH:]SIZE:TYPE list, as compare.sh's MODELS
#                   ["llama:tiny:q4_K qwen2:tiny:q4_K qwen3:tiny:q4_K qwen3moe:tiny:q4_K gpt-oss:tiny:q8_0"]
#   DECODE_MODELS   ["8b:q4_K qwen3moe:30b-a3b:q4_K gpt-oss:20b:q8_0"]
#   TESTS           [test_cuda_mmvq test_graph_cuda test_fused_cuda test_oss_cuda test_model_cuda]
#   WITHOUT         [carry_swiglu carry_expert_weights experts matvec_biases] (graph::fusions_by_name;
#                   carry_norm is not among them: the CUDA backend does not run it)
#   STATE [/tmp/llmrt-peer]  OUT [STATE/out]  JOBS [nproc / 2 for each build]  CUDA_ARCH [90]
set -uo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
budget=${1:?"in_pieces.sh: give the seconds this call may take (see the top of the script)"}
shift
stages=${*:-"build tests greedy decode breakdown without"}
state=${STATE:-/tmp/llmrt-peer}
out=${OUT:-$state/out}
greedy_models=${GREEDY_MODELS-"llama:tiny:q4_K qwen2:tiny:q4_K qwen3:tiny:q4_K qwen3moe:tiny:q4_K gpt-oss:tiny:q8_0"}
decode_models=${DECODE_MODELS-"8b:q4_K qwen3moe:30b-a3b:q4_K gpt-oss:20b:q8_0"}
without=${WITHOUT-"carry_swiglu carry_expert_weights experts matvec_biases"}
tests=${TESTS-"test_cuda_mmvq test_graph_cuda test_fused_cuda test_oss_cuda test_model_cuda"}
arch=${CUDA_ARCH:-90}
jobs=${JOBS:-$(( $(nproc) / 2 > 1 ? $(nproc) / 2 : 1 ))}
llmrt_build=$state/build/llmrt
start=$(date +%s)

left() { echo $(( budget - ($(date +%s) - start) )); }
log() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$out/summary.md"; }
done_() { [ -f "$state/done/$1" ]; }
finish() { touch "$state/done/$1"; }
wanted() { [[ " $stages " == *" $1 "* ]]; }
prompt_ids=${PROMPT_IDS:-128000,791,4062,14198,39935,35308,927,279,16053,5679}  # compare.sh's

if [ ! -d "$repo_root/.peer/llama.cpp" ]; then
    echo "in_pieces.sh: no .peer/llama.cpp: run bench/peer/fetch-llama-cpp.sh, and copy .peer here" >&2
    exit 1
fi
# compare.sh and build.sh keep binaries, models and results under PEER_DIR: STATE, with the
# sources and the vocabulary linked from the checkout.
mkdir -p "$state/done" "$state/bin" "$state/models" "$state/results" "$out"
ln -sfn "$repo_root/.peer/llama.cpp" "$state/llama.cpp"
ln -sfn "$repo_root/.peer/vocab" "$state/vocab"
cp "$repo_root"/.peer/LLAMA_CPP_* "$state/" 2> /dev/null
export PEER_DIR=$state PYTHONPATH=$repo_root/.peer/llama.cpp/gguf-py${PYTHONPATH:+:$PYTHONPATH}

model_path() {  # [ARCH:]SIZE:TYPE -> STATE/models/ARCH-SIZE-TYPE.gguf (compare.sh's names)
    local a b c
    IFS=: read -r a b c <<< "$1"
    if [ -z "$c" ]; then c=$b; b=$a; a=llama; fi
    echo "$state/models/$a-$b-$c.gguf"
}
make_model() {  # written to a .part file first, so that a call cut short leaves no half file
    local f a b c
    f=$(model_path "$1")
    [ -f "$f" ] && return 0
    IFS=: read -r a b c <<< "$1"
    if [ -z "$c" ]; then c=$b; b=$a; a=llama; fi
    python3 "$script_dir/make_llama_gguf.py" "$f.part" --arch "$a" --size "$b" --type "$c" \
        --vocab "$state/vocab/ggml-vocab-llama-bpe.gguf" > "$state/results/make-$a-$b-$c.log" 2>&1 && mv "$f.part" "$f"
}

# llama.cpp is built only for the stages that run it.
if wanted greedy || wanted decode || wanted gpus; then need_llama=1; else need_llama=0; fi
if [ $need_llama = 1 ] && ! done_ llama.cpp; then rm -f "$state/done/build"; fi  # built before without it
llmrt_jobs=$([ $need_llama = 1 ] && echo "$jobs" || nproc)  # the whole machine when llmrt builds alone
if wanted build && ! done_ build; then
    ( for m in $greedy_models $decode_models; do make_model "$m"; done ) &
    models=$!
    builds=()
    if [ $need_llama = 1 ] && ! done_ llama.cpp; then
        ( JOBS=$jobs timeout $(( $(left) - 15 )) bash "$script_dir/build.sh" "$arch" llama.cpp \
            > "$state/results/build-llama.cpp.log" 2>&1 && finish llama.cpp ) &
        builds+=($!)
    fi
    # llmrt with its tests (build.sh builds the programs alone).
    read -r -a test_targets <<< "$tests"
    if wanted gpus; then test_targets+=(test_model_tp_cuda); fi
    ( cmake -S "$repo_root" -B "$llmrt_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLMRT_CUDA=ON \
          -DCMAKE_CUDA_ARCHITECTURES="$arch" -DLLMRT_WERROR=ON -DLLMRT_VULKAN=OFF -DLLMRT_FUZZ=OFF \
          > "$state/results/build-llmrt.log" 2>&1 &&
      timeout $(( $(left) - 15 )) cmake --build "$llmrt_build" --parallel "$llmrt_jobs" --target llmrt-generate \
          llmrt-bench-decode llmrt-bench-mmvq-cuda "${test_targets[@]}" >> "$state/results/build-llmrt.log" 2>&1 &&
      cp "$llmrt_build/examples/generate/llmrt-generate" "$llmrt_build/bench/decode/llmrt-bench-decode" \
          "$llmrt_build/bench/mmvq_cuda/llmrt-bench-mmvq-cuda" "$state/bin/" && finish llmrt ) &
    builds+=($!)
    wait "${builds[@]}"
    # The models go on while time is left; what is not written yet is written by the next call.
    while kill -0 "$models" 2> /dev/null && [ "$(left)" -gt 10 ]; do sleep 2; done
    kill "$models" 2> /dev/null
    wait 2> /dev/null
    for t in $([ $need_llama = 1 ] && echo llama.cpp) llmrt; do
        if done_ "$t"; then log "build: $t built"; else log "build: $t not yet ($(tail -1 "$state/results/build-$t.log"))"; fi
    done
    if { [ $need_llama = 0 ] || done_ llama.cpp; } && done_ llmrt; then finish build; fi
fi
if ! done_ build; then
    log "to be continued: call again"
    exit 0
fi
for m in $greedy_models $decode_models; do
    [ "$(left)" -gt 30 ] || break
    make_model "$m"
done

if wanted tests && ! done_ tests; then
    for t in $tests; do
        [ -f "$state/done/test-$t" ] && continue
        [ "$(left)" -gt 60 ] || break
        bin=$(find "$llmrt_build/tests" -name "$t" -type f -perm -u+x | head -1)
        timeout $(( $(left) - 10 )) "$bin" > "$out/$t.log" 2>&1
        rc=$?
        log "tests: $t exit $rc: $(grep -E 'test cases:' "$out/$t.log" | tail -1)"
        touch "$state/done/test-$t"
    done
    all=1
    for t in $tests; do [ -f "$state/done/test-$t" ] || all=0; done
    if [ $all = 1 ]; then finish tests; fi
fi

gpus_table() {  # the gpus stage's table, from the logs of its pieces so far
    python3 - "$state/results" $decode_models <<'PY'
import glob, json, os, re, sys
results, models = sys.argv[1], sys.argv[2:]
def llmrt(log):  # (tokens/s, ids) of an llmrt-generate log
    try:
        text = open(log).read()
    except OSError:
        return None, None
    speed = re.search(r"generation \d+ tokens in [0-9.]+ ms \(([0-9.]+) tokens/s\)", text)
    ids = re.search(r"^output: *(.*)$", text, re.M)
    return (float(speed.group(1)) if speed else None), (ids.group(1).split() if ids else None)
def margins(log):  # the margins line of an llmrt-generate --margins log
    try:
        found = re.search(r"^margins: *(.*)$", open(log).read(), re.M)
    except OSError:
        return None
    return found.group(1).split() if found else None
def bench(log):  # llama-bench -o jsonl: the mean tokens/s of its last test
    try:
        lines = [l for l in open(log) if l.startswith("{")]
        return json.loads(lines[-1])["avg_ts"]
    except (OSError, ValueError, KeyError, IndexError):
        return None
f = lambda x: "-" if x is None else f"{x:.1f}"
print("Decoding 128 tokens on 1, 2, 4 ... GPUs of one machine: llmrt-generate -n 129 --backend cuda")
print("(one GPU: the plain forward; N > 1: --gpus N, tensor parallel over NCCL), and llama-bench")
print("-p 0 -n 128 -fa 1 -ngl 99 -r 3 with -sm none on one GPU, -sm layer, row and tensor (llama.cpp's")
print("tensor parallel) on N")
print("(CUDA_VISIBLE_DEVICES=0..N-1). Greedy ids: how many leading ids of llmrt on N GPUs equal one GPU's.")
print()
print("Margins there: the top-2 logit gap at the step where they part, of llama.cpp on one GPU (lcpp-greedy)")
print("and of llmrt on one GPU and on N (llmrt-generate --margins -n 33; '-' past step 32).")
print()
print("| model | GPUs | llmrt tokens/s | × 1 GPU | ids equal to 1 GPU's | llama.cpp's margin there | llmrt's margins there (1 GPU, N) | llama.cpp -sm layer | -sm row | -sm tensor | llmrt / best llama.cpp |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    a, b, c = (m.split(":") + [None])[:3] if m.count(":") == 2 else ["llama"] + m.split(":")
    name = f"{a}-{b}-{c}"
    one_speed, one_ids = llmrt(f"{results}/gpus-{name}-1-llmrt.log")
    for n in (1, 2, 4, 8):
        log = f"{results}/gpus-{name}-{n}-llmrt.log"
        if not os.path.exists(log):
            continue
        speed, ids = llmrt(log)
        if n == 1:
            layer, row, tensor = bench(f"{results}/gpus-{name}-1-llama.cpp-none.log"), None, None
        else:
            layer, row, tensor = (bench(f"{results}/gpus-{name}-{n}-llama.cpp-{mode}.log") for mode in ("layer", "row", "tensor"))
        scale = f"{speed / one_speed:.2f}" if speed and one_speed else "-"
        k = 0
        if ids is None or one_ids is None:
            same = "-"
        else:
            k = next((i for i, (x, y) in enumerate(zip(ids, one_ids)) if x != y), min(len(ids), len(one_ids)))
            same = f"{k} of {len(one_ids)}"
        margin = ""
        if ids is not None and one_ids is not None and k < min(len(ids), len(one_ids)):
            try:  # lcpp-greedy numbers the generated steps as llmrt's output lists them
                found = re.search(rf"^step {k}: id \d+, margin (\S+)", open(f"{results}/gpus-{name}-1-lcpp-greedy.log").read(), re.M)
                margin = found.group(1) if found else "-"
            except OSError:
                margin = "-"
        ours = "-"
        if margin:
            one_m, n_m = margins(f"{results}/gpus-{name}-1-llmrt-margins.log"), margins(f"{results}/gpus-{name}-{n}-llmrt-margins.log")
            at = lambda ms: ms[k] if ms and k < len(ms) else "-"
            ours = f"{at(one_m)}, {at(n_m)}"
        best = max([x for x in (layer, row, tensor) if x], default=None)
        ratio = f"{speed / best:.2f}" if speed and best else "-"
        others = f"{f(row)} | {f(tensor)}" if n > 1 else "(-sm none) | (-sm none)"
        print(f"| {m} | {n} | {f(speed)} | {scale} | {same} | {margin} | {ours} | {f(layer)} | {others} | {ratio} |")
PY
}

run_compare() {  # STAGE MODELS
    if wanted "$1" && ! done_ "$1" && [ "$(left)" -gt 60 ]; then
        MODELS="$2" timeout $(( $(left) - 10 )) bash "$script_dir/compare.sh" "$1" > "$out/$1.md" 2>&1 && finish "$1"
        cat "$out/$1.md" >> "$out/summary.md"
        tail -n 12 "$out/$1.md"
    fi
}
run_compare greedy "$greedy_models"
run_compare decode "$decode_models"

if wanted breakdown && ! done_ breakdown; then
    all=1
    for m in $decode_models; do
        f=$(model_path "$m")
        name=$(basename "$f" .gguf)
        [ -f "$state/done/breakdown-$name" ] && continue
        if [ "$(left)" -lt 90 ]; then all=0; break; fi
        timeout $(( $(left) - 10 )) "$state/bin/llmrt-bench-decode" --backend cuda --model "$f" --prompt 0 --tokens 64 \
            --warmup 8 --replays 3 > "$out/breakdown-$name.md" 2>&1 && touch "$state/done/breakdown-$name"
        log "breakdown: $name"
        tail -n 20 "$out/breakdown-$name.md"
    done
    if [ $all = 1 ]; then finish breakdown; fi
fi

if wanted without && ! done_ without; then
    all=1
    for m in $decode_models; do
        f=$(model_path "$m")
        name=$(basename "$f" .gguf)
        for fusion in $without; do
            [ -f "$state/done/without-$name-$fusion" ] && continue
            if [ "$(left)" -lt 60 ]; then all=0; break 2; fi
            timeout $(( $(left) - 10 )) "$state/bin/llmrt-bench-decode" --backend cuda --model "$f" --prompt 0 --tokens 64 \
                --warmup 8 --replays 1 --without "$fusion" --json "$out/without-$name-$fusion.json" \
                > "$out/without-$name-$fusion.md" 2>&1 && touch "$state/done/without-$name-$fusion"
            log "without $fusion: $name: $(grep -o '"tokens_per_s": [0-9.]*' "$out/without-$name-$fusion.json" | head -1)"
        done
    done
    if [ $all = 1 ]; then finish without; fi
fi

if wanted gpus && ! done_ gpus; then
    all=1
    if [ ! -f "$state/done/gpus-test" ] && [ "$(left)" -gt 120 ]; then
        bin=$(find "$llmrt_build/tests" -name test_model_tp_cuda -type f -perm -u+x | head -1)
        if [ -n "$bin" ]; then
            timeout $(( $(left) - 60 )) "$bin" > "$out/test_model_tp_cuda.log" 2>&1
            rc=$?
            log "gpus: test_model_tp_cuda exit $rc: $(grep -E 'test cases:' "$out/test_model_tp_cuda.log" | tail -1)"
            # The failed-rank case is skipped unless asked for: it hung once (ncclCommAbort on
            # NCCL 2.28.3); with ncclCommRevoke it should end in seconds, which this checks.
            timeout 90 "$bin" --no-skip --test-case="a rank that fails*" > "$out/test_model_tp_cuda-revoke.log" 2>&1
            rc=$?
            log "gpus: the failed-rank case exit $rc$([ $rc = 124 ] && echo ' (hung: killed after 90 s)'): $(grep -E 'test cases:' "$out/test_model_tp_cuda-revoke.log" | tail -1)"
        else
            log "gpus: no test_model_tp_cuda (a build without NCCL)"
        fi
        touch "$state/done/gpus-test"
    fi
    present=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
    counts=""
    for n in 1 2 4 8; do [ "$n" -le "$present" ] && counts="$counts $n"; done
    # One piece: a program on one model and N GPUs; its log under STATE/results, named
    # gpus-NAME-N-PROGRAM (llmrt, or llama.cpp-MODE for llama-bench -sm MODE).
    piece() {  # NAME N PROGRAM COMMAND...
        local marker=$state/done/gpus-$1-$2-$3 log=$state/results/gpus-$1-$2-$3.log
        [ -f "$marker" ] && return 0
        if [ "$(left)" -lt 150 ]; then return 1; fi
        shift 3
        timeout $(( $(left) - 10 )) "$@" > "$log" 2>&1
        log "gpus: $(basename "$log" .log) exit $?"
        touch "$marker"
    }
    for m in $decode_models; do
        f=$(model_path "$m")
        name=$(basename "$f" .gguf)
        for n in $counts; do
            visible=$(seq -s, 0 $(( n - 1 )))
            # One GPU is llmrt's plain forward; N > 1 its tensor-parallel one.
            piece "$name" "$n" llmrt "$state/bin/llmrt-generate" "$f" --prompt "$prompt_ids" -n 129 --backend cuda \
                $([ "$n" -gt 1 ] && echo "--gpus $n") || { all=0; break 2; }
            # Untimed: the same greedy ids with each step's top-2 margin (the logits read back), for
            # the step where N GPUs part from one.
            piece "$name" "$n" llmrt-margins "$state/bin/llmrt-generate" "$f" --prompt "$prompt_ids" -n 33 --backend cuda \
                --margins $([ "$n" -gt 1 ] && echo "--gpus $n") || { all=0; break 2; }
            # llama.cpp's own greedy ids and top-2 margins on one GPU: how near a tie the step is
            # where N GPUs part from one.
            if [ "$n" = 1 ]; then
                piece "$name" 1 lcpp-greedy "$state/bin/lcpp-greedy" "$f" --prompt "$prompt_ids" -n 129 -ngl 99 || { all=0; break 2; }
            fi
            for mode in $([ "$n" -gt 1 ] && echo "layer row tensor" || echo none); do
                piece "$name" "$n" "llama.cpp-$mode" env CUDA_VISIBLE_DEVICES="$visible" "$state/bin/llama-bench" -m "$f" \
                    -p 0 -n 128 -fa 1 -ngl 99 -sm "$mode" -r 3 -o jsonl || { all=0; break 3; }
            done
        done
    done
    gpus_table > "$out/gpus.md"
    cat "$out/gpus.md"
    if [ $all = 1 ]; then finish gpus; fi
fi

cp "$state"/results/*.log "$out/" 2> /dev/null
left_stages=""
for s in $stages; do done_ "$s" || left_stages="$left_stages $s"; done
if [ -z "$left_stages" ]; then log "all stages done"; else log "to be continued:$left_stages"; fi
