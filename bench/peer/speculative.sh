#!/usr/bin/env bash
# llama.cpp's speculative decoding on the pair tools/train_pair/gpu_run.sh trains, beside
# llmrt-bench-speculative's (issue #32): the same GGUF files and the same prompt texts, on the
# same GPU.
#
#   bash bench/peer/speculative.sh PAIR_DIR [REPS]
#
# PAIR_DIR holds target-q8_0.gguf, draft-q4_K.gguf and prompts/KIND-K.txt (gpu_run.sh's bench step
# writes them). For each prompt, the fastest of REPS (default 3) runs of 256 greedy tokens:
#   plain    llama-speculative-simple --spec-type ngram-simple --spec-ngram-simple-size-n 1024: the
#            same loop and timer, no drafts (a 1024-token key never matches; the tool refuses to run
#            with --spec-type none)
#   draft    llama-speculative-simple --spec-type draft-simple -md draft-q4_K.gguf with
#            --spec-draft-n-max 16 --spec-draft-p-min P (P: DRAFT_P_MIN, default 0.5; llmrt's defaults)
#   lcpp     the same with llama.cpp's own defaults (n_max 3, p_min 0 at 0c1e570)
#   n-gram   llama-speculative-simple --spec-type ngram-simple (its defaults: a 12-token key, 48 drafted)
# The table gives llama.cpp's faster draft-model setting of the two for each kind, and both.
# A kind's tokens/s is its prompts' decoded tokens over their decoding seconds, as llama.cpp
# reports them ("decoded N tokens in T seconds": the prompt excluded), as llmrt-bench-speculative
# adds its prompts up. Prints a table and writes it to OUT (default PAIR_DIR)/llama-speculative.md,
# each run's log beside it. Needs PEER_DIR (default .peer)/bin/llama-speculative-simple
# (bench/peer/build.sh with the same PEER_DIR).
set -uo pipefail

pair=${1:?"speculative.sh: give the pair's folder (tools/train_pair/gpu_run.sh's DIR)"}
reps=${2:-3}
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
peer=${PEER_DIR:-$script_dir/../../.peer}
bin=$peer/bin
out=${OUT:-$pair}
logs=$out/llama-speculative-logs
mkdir -p "$logs"
target=$pair/target-q8_0.gguf
draft=$pair/draft-q4_K.gguf
for f in "$target" "$draft" "$bin/llama-speculative-simple"; do
    [ -e "$f" ] || { echo "speculative.sh: missing $f" >&2; exit 1; }
done
common=(-m "$target" -n 256 -ngl 99 -c 1024 --temp 0 --seed 1)
p_min=${DRAFT_P_MIN:-0.5}

# runs MODE PROMPT ARGS...: REPS runs, logs named MODE.PROMPT.R.log
runs() {
    local mode=$1 prompt=$2 name
    shift 2
    name=$(basename "$prompt" .txt)
    for r in $(seq "$reps"); do
        timeout 300 "$bin/llama-speculative-simple" "${common[@]}" -f "$prompt" "$@" > "$logs/$mode.$name.$r.log" 2>&1
    done
}

for p in "$pair"/prompts/*.txt; do
    runs plain "$p" --spec-type ngram-simple --spec-ngram-simple-size-n 1024
    runs draft "$p" --spec-type draft-simple -md "$draft" -ngld 99 --spec-draft-n-max 16 --spec-draft-p-min "$p_min"
    runs lcpp "$p" --spec-type draft-simple -md "$draft" -ngld 99
    runs ngram "$p" --spec-type ngram-simple
done

python3 - "$logs" "$out/llama-speculative.md" "$(cat "$peer/LLAMA_CPP_COMMIT" 2> /dev/null || echo unknown)" "$p_min" <<'PY'
import re, sys
from collections import defaultdict
from pathlib import Path
logs, table, commit, p_min = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
best = {}  # (mode, prompt) -> (tokens, seconds, drafted, accepted) of the fastest run
for log in sorted(logs.glob("*.log")):
    mode, prompt, _ = log.name[:-4].split(".", 2)
    text = log.read_text(errors="replace")
    m = re.findall(r"decoded\s+(\d+) tokens in\s+([0-9.]+) seconds", text)
    if not m:
        continue
    tokens, seconds = int(m[-1][0]), float(m[-1][1])
    drafted = re.findall(r"n_drafted\s*=\s*(\d+)", text)
    accepted = re.findall(r"n_accept\s*=\s*(\d+)", text)
    run = (tokens, seconds, int(drafted[-1]) if drafted else 0, int(accepted[-1]) if accepted else 0)
    if (mode, prompt) not in best or tokens / seconds > best[(mode, prompt)][0] / best[(mode, prompt)][1]:
        best[(mode, prompt)] = run
kinds = defaultdict(lambda: defaultdict(lambda: [0, 0.0, 0, 0]))
for (mode, prompt), run in best.items():
    total = kinds[prompt.rsplit("-", 1)[0]][mode]
    for i, v in enumerate(run):
        total[i] += v
rate = lambda t: t[0] / t[1] if t[1] else 0.0
lines = [f"llama.cpp {commit}: llama-speculative-simple, 256 greedy tokens per prompt, the fastest of each prompt's runs",
         "", "| prompts | plain tokens/s | draft model tokens/s | speedup | acceptance | setting | other setting | n-gram tokens/s | speedup |",
         "|---|---|---|---|---|---|---|---|---|"]
labels = {"draft": "n_max 16, p_min " + p_min, "lcpp": "llama.cpp's defaults"}
for kind, modes in sorted(kinds.items()):
    n = sum(1 for (m, p) in best if m == "plain" and p.rsplit("-", 1)[0] == kind)
    plain, ngram = rate(modes["plain"]), rate(modes["ngram"])
    ranked = sorted(("draft", "lcpp"), key=lambda m: -rate(modes[m]))
    top, other = ranked
    acc = modes[top][3] / modes[top][2] if modes[top][2] else 0.0
    sp = lambda x: f"{x / plain:.2f}x" if plain else "-"
    lines.append(f"| {kind} ({n}) | {plain:.1f} | {rate(modes[top]):.1f} | {sp(rate(modes[top]))} | {acc:.3f} | "
                 f"{labels[top]} | {labels[other]}: {rate(modes[other]):.1f} ({sp(rate(modes[other]))}) | "
                 f"{ngram:.1f} | {sp(ngram)} |")
table.write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
