#!/usr/bin/env bash
# The whole train_pair pipeline on one GPU machine (issue #32): build llmrt, corpus, the tiny smoke
# test, target, draft, quantize, a check of the files with llmrt, and a summary.
#
#   bash tools/train_pair/gpu_run.sh [DIR] [STEP ...]       (from the repository root)
#
# DIR (default /tmp/pair) receives everything. STEPs, run in the order given (default: all, in
# this order): build corpus tiny target draft quantize check bench summary; also draft2, a second
# draft model of another shape (configs.py), when named. A step whose outputs exist
# is skipped, so the pipeline can run in pieces under a 10-minute limit per command, e.g.
#
#   bash tools/train_pair/gpu_run.sh /tmp/pair build corpus tiny    # build (CUDA: not timed yet), corpus and tiny under a minute each
#   bash tools/train_pair/gpu_run.sh /tmp/pair target               # at most PAIR_TARGET_MINUTES + ~1
#   bash tools/train_pair/gpu_run.sh /tmp/pair draft quantize check bench summary
#
# and a piece killed by the limit is run again as it was (it starts over from its last finished step).
#
# Environment (defaults in brackets):
#   PAIR_BUILD           llmrt's build folder [/tmp/bp]; `build` configures it with PAIR_CMAKE_FLAGS
#                        [CUDA on, sm_90, no Vulkan, no fuzzers] when it has no build.ninja yet
#   PAIR_TARGET_MINUTES  [6]  PAIR_DRAFT_MINUTES [3]  PAIR_EPOCHS [8]: each run stops at whichever
#                        limit comes first (train.py --minutes / --epochs)
#   PAIR_COMPILE         1: torch.compile [1 with CUDA, else 0]
#   PAIR_SMOKE           1: everything small, for a CPU dry run (3 MB corpus, 3 short steps a model)
#   PYTHON               [python3]
# A missing gguf Python package is installed from .whl/gguf-*.whl (README.md says how to bring it).
set -euo pipefail

DIR=${1:-/tmp/pair}
[ $# -gt 0 ] && shift
STEPS=("$@")
[ ${#STEPS[@]} -eq 0 ] && STEPS=(build corpus tiny target draft quantize check bench summary)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)  # the repository root
cd "$ROOT"
PY=${PYTHON:-python3}
BUILD=${PAIR_BUILD:-/tmp/bp}
VOCAB=tests/data/vocab/ggml-vocab-llama-bpe.gguf
TOKENIZE=$BUILD/examples/tokenize/llmrt-tokenize
GENERATE=$BUILD/examples/generate/llmrt-generate
QUANTIZE=$BUILD/examples/quantize/llmrt-quantize
SPECULATIVE=$BUILD/examples/speculative/llmrt-speculative
BENCH=$BUILD/bench/speculative/llmrt-bench-speculative
SMOKE=${PAIR_SMOKE:-0}
export PYTHONUNBUFFERED=1  # logs show training as it goes, also when a command is killed
mkdir -p "$DIR/logs"
DIR=$(cd "$DIR" && pwd)

log() { printf '[gpu_run %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# Runs step $1 (the function step_$1) unless its marker file $2 exists; logs to DIR/logs/$1.log and
# records the seconds it took in DIR/timings.tsv.
run_step() {
    local name=$1 marker=$2 t0
    if [ -e "$marker" ]; then
        log "$name: done already ($marker exists)"
        return
    fi
    log "$name: starting"
    t0=$(date +%s)
    "step_$name" 2>&1 | tee "$DIR/logs/$name.log"
    printf '%s\t%s\n' "$name" "$(($(date +%s) - t0))" >> "$DIR/timings.tsv"
    log "$name: finished in $(($(date +%s) - t0)) s"
}

need() {  # the programs the step needs exist
    for f in "$@"; do
        [ -x "$f" ] || { log "missing $f: run the build step (PAIR_BUILD=$BUILD)"; exit 1; }
    done
}

python_packages() {  # torch, numpy and gguf importable; gguf from a carried wheel if need be
    if ! "$PY" -c "import gguf" 2>/dev/null; then
        local wheel
        if [ ! -d "$DIR/pysite/gguf" ]; then  # installed by an earlier step otherwise
            wheel=$(ls .whl/gguf-*.whl 2>/dev/null | head -1 || true)
            [ -n "$wheel" ] || { log "no gguf package and no .whl/gguf-*.whl (README.md: 'On the GPU machine')"; exit 1; }
            "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$DIR/pysite" "$wheel"
        fi
        export PYTHONPATH="$DIR/pysite${PYTHONPATH:+:$PYTHONPATH}"
    fi
    "$PY" -c "import torch, numpy, gguf; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), \
'numpy', numpy.__version__, 'gguf', getattr(gguf, '__version__', '?'))"
}

cuda() { "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; }

train_flags() {  # train.py flags shared by target and draft
    local minutes=$1
    if [ "$SMOKE" = 1 ]; then
        echo "--steps 3 --batch-size 2 --micro-batch 1 --seq-len 128 --eval-every 2"
    else
        echo "--minutes $minutes --epochs ${PAIR_EPOCHS:-8}"
    fi
    compile_flag
}

compile_flag() {  # --compile where wanted (by default where CUDA is)
    if [ "${PAIR_COMPILE:-$(cuda && echo 1 || echo 0)}" = 1 ]; then echo "--compile"; fi
}

step_build() {
    if [ ! -f "$BUILD/build.ninja" ]; then
        # shellcheck disable=SC2086  # the flags are words
        cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
            ${PAIR_CMAKE_FLAGS:--DLLMRT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLMRT_VULKAN=OFF -DLLMRT_FUZZ=OFF}
    fi
    cmake --build "$BUILD" -j "$(nproc)" --target llmrt-tokenize llmrt-generate llmrt-quantize llmrt-speculative \
        llmrt-bench-speculative
}

step_corpus() {
    need "$TOKENIZE"
    local max=0
    [ "$SMOKE" = 1 ] && max=3
    # --batch-mb 1: more, smaller llmrt-tokenize runs, so all cores take part (the whole corpus is ~30 MB).
    "$PY" tools/train_pair/make_corpus.py "$DIR/corpus" --vocab "$VOCAB" --tokenizer "$TOKENIZE" \
        --max-mb "$max" --batch-mb 1
}

step_tiny() {
    need "$GENERATE"
    python_packages
    # The smoke test: 2 steps on the corpus (with torch.compile where the real runs use it, so a
    # compiler problem shows here), export, and the layout check against llmrt (exit 3 if it fails).
    # shellcheck disable=SC2046
    "$PY" tools/train_pair/train.py --tiny --data "$DIR/corpus" --vocab "$VOCAB" --out "$DIR/tiny" \
        --llmrt-generate "$GENERATE" $(compile_flag)
}

step_model() {  # target or draft
    local name=$1 minutes=$2
    need "$GENERATE"
    python_packages
    # shellcheck disable=SC2046
    "$PY" tools/train_pair/train.py --config "$name" --data "$DIR/corpus" --vocab "$VOCAB" --out "$DIR" \
        --llmrt-generate "$GENERATE" $(train_flags "$minutes")
}
step_target() { step_model target "${PAIR_TARGET_MINUTES:-6}"; }
step_draft() { step_model draft "${PAIR_DRAFT_MINUTES:-3}"; }
step_draft2() { step_model draft2 "${PAIR_DRAFT_MINUTES:-3}"; }

step_quantize() {
    need "$QUANTIZE"
    for m in target draft draft2; do
        [ -e "$DIR/$m-f16.gguf" ] || continue  # draft2: only where it was trained
        for t in q8_0 q4_K; do
            if [ -e "$DIR/$m-$t.gguf" ]; then continue; fi
            # Written under another name first: a killed run leaves no file that looks finished.
            "$QUANTIZE" "$DIR/$m-f16.gguf" "$DIR/$m-$t.gguf.part" --type "$t"
            mv "$DIR/$m-$t.gguf.part" "$DIR/$m-$t.gguf"
        done
    done
}

prompt_of() {  # the first $2 token ids of DIR/corpus/$1.bin, comma-separated
    "$PY" -c "import sys, numpy as np; print(','.join(map(str, np.fromfile(sys.argv[1], '<u4')[:int(sys.argv[2])])))" \
        "$DIR/corpus/$1.bin" "$2"
}

step_check() {
    need "$GENERATE" "$SPECULATIVE"
    local n=128 p
    [ "$SMOKE" = 1 ] && n=16
    # llmrt loads every file on its default backend (CUDA where built) and continues a held-out prompt.
    for f in "$DIR"/target-*.gguf "$DIR"/draft*.gguf; do
        echo "== llmrt-generate $(basename "$f")"
        # One failing file is reported and the others still run.
        "$GENERATE" "$f" --prompt-ids "$(prompt_of val_code 32)" -n 32 | grep -E "^(text|output|speed):" ||
            echo "FAILED: llmrt-generate $f"
    done
    # Speculative decoding with the pair on a code and a prose prompt (greedy; p_min 0.5, the default).
    for split in val_code val_prose; do
        p=$(prompt_of "$split" 64)
        echo "== llmrt-speculative target-q8_0 + draft-q4_K, $split prompt"
        "$SPECULATIVE" --target "$DIR/target-q8_0.gguf" --draft "$DIR/draft-q4_K.gguf" --prompt "$p" -n "$n" |
            grep -E "^(plain|speculative|  drafted|  rounds|output equals)" || echo "FAILED: llmrt-speculative"
    done
}

# The text of the k-th held-out document ($3, from 1) of DIR/corpus/$1.bin with at least $2 + 64
# tokens: its first $2 tokens, decoded by llmrt-tokenize (so that llmrt and llama.cpp read the same
# prompt). Nothing when there are fewer such documents.
prompt_text_of() {
    local ids
    ids=$("$PY" - "$DIR/corpus/$1.bin" "$2" "$3" <<'EOF'
import sys, numpy as np
ids, n, k = np.fromfile(sys.argv[1], "<u4"), int(sys.argv[2]), int(sys.argv[3])
starts = list(np.flatnonzero(ids == 128000)) + [len(ids)]
docs = [ids[a:b] for a, b in zip(starts, starts[1:]) if b - a >= n + 64]
if len(docs) >= k:
    print(",".join(map(str, docs[k - 1][:n])))
EOF
)
    if [ -n "$ids" ]; then "$TOKENIZE" "$VOCAB" --ids "$ids"; fi
}

# Prompts: the first PAIR_PROMPTS (default 4) held-out code and prose documents long enough, as
# DIR/prompts/code-K.txt and prose-K.txt; each workload of the bench decodes them all in turn.
step_bench() {
    need "$TOKENIZE" "$BENCH"
    local n=256 reps=3 prompt=128 pair kind k files
    [ "$SMOKE" = 1 ] && n=16 reps=1 prompt=48  # the smoke models' context is 128
    rm -rf "$DIR/prompts" && mkdir -p "$DIR/prompts"
    local args=()
    for kind in code prose; do
        files=""
        for k in $(seq "${PAIR_PROMPTS:-4}"); do
            prompt_text_of "val_$kind" "$prompt" "$k" > "$DIR/prompts/$kind-$k.txt"
            if [ -s "$DIR/prompts/$kind-$k.txt" ]; then files="$files${files:+,}$DIR/prompts/$kind-$k.txt"
            else rm "$DIR/prompts/$kind-$k.txt"; fi
        done
        if [ -n "$files" ]; then args+=(--prompt-file "$kind=$files"); fi
    done
    # Both targets with the draft; a second draft shape (draft2), where trained, with the q8_0 target.
    local pairs=("target-q8_0 draft-q4_K" "target-q4_K draft-q4_K") json
    [ -e "$DIR/draft2-q4_K.gguf" ] && pairs+=("target-q8_0 draft2-q4_K")
    for pair in "${pairs[@]}"; do
        read -r t d <<< "$pair"
        json=$DIR/speculative-$t.json
        [ "$d" = draft-q4_K ] || json=$DIR/speculative-$t-$d.json
        echo "== llmrt-bench-speculative $t + $d"
        "$BENCH" --target "$DIR/$t.gguf" --draft "$DIR/$d.gguf" "${args[@]}" -n "$n" --reps "$reps" \
            --json "$json" || echo "FAILED: llmrt-bench-speculative $t + $d"
    done
}

step_summary() {
    "$PY" - "$DIR" <<'EOF'
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
m = d / "corpus" / "manifest.json"
if m.exists():
    c = json.loads(m.read_text())["counts"]
    print("corpus: " + ", ".join(f"{k} {v['documents']} docs {v['tokens'] / 1e6:.2f}M tokens" for k, v in c.items()))
for name, path in (("tiny", d / "tiny" / "tiny-train.json"), ("target", d / "target-train.json"),
                   ("draft", d / "draft-train.json"), ("draft2", d / "draft2-train.json")):
    if name == "draft2" and not path.exists():
        continue  # trained only when asked for
    if not path.exists():
        print(f"{name}: not trained")
        continue
    r = json.loads(path.read_text())
    print(f"{name}: {r['steps']} steps, {r['tokens'] / 1e6:.1f}M tokens ({r['epochs']:.1f} epochs) in {r['seconds']:.0f} s, "
          f"{r['tokens_per_s']:,} tokens/s ({r.get('tokens_per_s_last', 0):,} at the end) on {r['device']}, compiled {r['compiled']}, peak {r['peak_gib']} GiB; "
          f"held-out loss code/prose final {r['final_loss']['code']:.3f}/{r['final_loss']['prose']:.3f}, exported "
          f"(step {r['exported_step']}) {r['exported_loss']['code']:.3f}/{r['exported_loss']['prose']:.3f}; llmrt greedy "
          f"agrees on {r.get('llmrt_agree', '?')}/16" + (f", layout check {r['layout_agree']}/16" if "layout_agree" in r else ""))
for f in sorted(d.glob("*.gguf")):
    print(f"  {f.name:22s} {f.stat().st_size / 2**20:8.1f} MiB")
t = d / "timings.tsv"
if t.exists():
    print("timings (s): " + ", ".join(line.replace("\t", " ") for line in t.read_text().split("\n") if line))
EOF
    if [ -f "$DIR/logs/check.log" ]; then grep -E "^(== llmrt-spec|speculative|  drafted|FAILED)" "$DIR/logs/check.log" || true; fi
}

for s in "${STEPS[@]}"; do
    case $s in
        build) run_step build "$BUILD/.train_pair_never" ;;  # always: ninja does nothing when up to date
        corpus) run_step corpus "$DIR/corpus/manifest.json" ;;
        tiny) run_step tiny "$DIR/tiny/tiny-train.json" ;;
        target) run_step target "$DIR/target-train.json" ;;
        draft) run_step draft "$DIR/draft-train.json" ;;
        draft2) run_step draft2 "$DIR/draft2-train.json" ;;
        quantize) run_step quantize "$DIR/.quantize_never" ;;  # always: it skips the files that exist
        check) run_step check "$DIR/.check_never" ;;
        bench) run_step bench "$DIR/.bench_never" ;;
        summary) step_summary ;;
        *) log "unknown step '$s' (build corpus tiny target draft draft2 quantize check bench summary)"; exit 2 ;;
    esac
done
