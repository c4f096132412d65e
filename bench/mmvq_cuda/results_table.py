#!/usr/bin/env python3
"""Markdown tables for bench/RESULTS.md from llmrt-bench-mmvq-cuda's JSON: per type and shape, both
chains (X after the previous launch; launches sharing X), and the quantizer + mmvq pair on
4096x14336 against ggml's figures (GGML below: ggml's CUDA quantizer + mmvq, `test-backend-ops perf`,
ggml as of August 2026, measured on the H100).

    python3 bench/mmvq_cuda/results_table.py bench/mmvq_cuda/results_h100_<date>.json

Given several runs' JSON, each figure is the median over the runs (per configuration), and
`--merged PATH` writes that median run as JSON:

    python3 bench/mmvq_cuda/results_table.py run1.json run2.json run3.json --merged median.json
"""
import argparse
import json
import statistics

GGML = {"q8_0": (27.2, 46.8), "mxfp4": (20.5, 41.2), "q2_K": (17.0, 59.2), "q3_K": (29.0, 65.8),
        "q4_K": (17.4, 68.6), "q5_K": (19.8, 72.1), "q6_K": (29.7, 62.4)}  # µs at 1 and 8 columns


def config(r):
    """A result's configuration: type, shape and column count."""
    return r["type"], r["rows"], r["k"], r["ncols"]


def median_run(paths):
    """The first run with every numeric figure replaced by its median over the runs."""
    runs = [json.load(open(p)) for p in paths]
    others = [{config(r): r for r in run["results"]} for run in runs[1:]]
    merged = dict(runs[0])
    merged["results"] = []
    for r in runs[0]["results"]:
        same = [r] + [o[config(r)] for o in others if config(r) in o]
        m = dict(r)
        for field, value in r.items():
            if isinstance(value, float):  # the figures; the configuration fields are ints and text
                m[field] = statistics.median(x[field] for x in same)
        merged["results"].append(m)
    if len(runs) > 1:
        merged["runs"] = len(runs)
    return merged


def main(paths, merged_path=None):
    run = median_run(paths)
    if merged_path:  # the bench's own layout: one result per line
        with open(merged_path, "w") as out:
            head = {k: v for k, v in run.items() if k != "results"}
            out.write("{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in head.items()))
            out.write('  "results": [\n' + ",\n".join("    " + json.dumps(r) for r in run["results"]) + "\n  ]\n}\n")
    results = run["results"]
    by_key = {config(r): r for r in results}
    types = list(dict.fromkeys(r["type"] for r in results))
    shapes = list(dict.fromkeys((r["rows"], r["k"]) for r in results))
    print("| type | rows × k | after previous: 1 col µs | of 3.1 TB/s | 8/1 | shared X: 1 col µs | of 3.1 TB/s "
          "| 2 cols µs | 4 cols µs | 8 cols µs | 8/1 | read-only | pipelined |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t in types:
        for rows, k in shapes:
            cols = [by_key.get((t, rows, k, n)) for n in (1, 2, 4, 8)]
            if any(c is None for c in cols):
                continue
            one, eight = (min(c["us_per_launch_pdl"], c["us_per_launch_plain"] or 1e30) for c in (cols[0], cols[3]))
            shared = [c["us_per_launch_shared_x"] for c in cols]
            print(f"| {t} | {rows}×{k} | {one:.2f} | {100 * cols[0]['fraction_of_read_bandwidth']:.1f}% | "
                  f"{eight / one:.2f}× | {shared[0]:.2f} | {100 * cols[0]['fraction_shared_x']:.1f}% | "
                  f"{shared[1]:.2f} | {shared[2]:.2f} | {shared[3]:.2f} | {shared[3] / shared[0]:.2f}× | "
                  f"{100 * cols[0]['read_only_kernel_fraction']:.1f}% | {100 * cols[0]['pipelined_read_fraction']:.1f}% |")
    print()
    print("| type | ggml 1 col µs | ggml 8 cols µs | llmrt 1 / 2 / 4 / 8 cols µs | llmrt 8/1 | ggml 8/1 "
          "| llmrt faster at 1, 2, 4, 8 cols |")
    print("|---|---|---|---|---|---|---|")
    for t in types:
        pair = [by_key.get((t, 4096, 14336, n)) for n in (1, 2, 4, 8)]
        if t not in GGML or any(p is None for p in pair):
            continue
        us = [p["us_quantize_and_mmvq"] for p in pair]
        g1, g8 = GGML[t]
        faster = ", ".join("yes" if u < (g8 if i == 3 else g1) else "NO" for i, u in enumerate(us))
        print(f"| {t} | {g1} | {g8} | {' / '.join(f'{u:.2f}' for u in us)} | {us[3] / us[0]:.2f}× | "
              f"{g8 / g1:.2f}× | {faster} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The CUDA bench's JSON runs as bench/RESULTS.md's tables.")
    parser.add_argument("runs", nargs="+", help="JSON written by llmrt-bench-mmvq-cuda --json")
    parser.add_argument("--merged", metavar="PATH", help="also write the median run as JSON")
    args = parser.parse_args()
    main(args.runs, args.merged)
