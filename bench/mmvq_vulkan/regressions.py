#!/usr/bin/env python3
"""Lists the mat-vec entries of a bench run that are slower than a recorded run.

    python3 bench/mmvq_vulkan/regressions.py NEW.json [RECORDED.json] [--threshold 0.10]

Both files are the JSON that llmrt-bench-mmvq-vulkan (or llmrt-bench-mmvq-cuda) writes with
--json. RECORDED defaults to the table bench/RESULTS.md was written from
(bench/mmvq_vulkan/h100-current.json). Entries are matched by type, rows, k and columns; the
chained time `us` is compared, so slower means new_us > recorded_us * (1 + threshold). Prints
every slower entry, then a one-line summary; exits with status 1 when any entry is slower,
2 when the files share no entry, so a script can stop on a regression.
"""
import argparse
import json
import os
import sys


def entries(path):
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for r in doc.get("results", []):
        out[(r["type"], int(r["rows"]), int(r["k"]), int(r["ncols"]))] = r
    return doc.get("device", "?"), out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("new")
    ap.add_argument("recorded", nargs="?", default=os.path.join(here, "h100-current.json"))
    ap.add_argument("--threshold", type=float, default=0.10, help="fraction slower that counts (default 0.10)")
    a = ap.parse_args()
    new_device, new = entries(a.new)
    old_device, old = entries(a.recorded)
    shared = sorted(set(new) & set(old), key=lambda e: (e[0], e[1], e[2], e[3]))
    if not shared:
        print(f"regressions: {a.new} and {a.recorded} share no (type, rows, k, ncols) entry")
        return 2
    if new_device != old_device:
        print(f"note: devices differ: {new_device} (new) against {old_device} (recorded)")
    slower, faster = [], 0
    for e in shared:
        n, o = new[e]["us"], old[e]["us"]
        if n > o * (1 + a.threshold):
            slower.append((e, o, n))
        elif n < o * (1 - a.threshold):
            faster += 1
    if slower:
        print("| type | rows × k | cols | recorded µs | new µs | new / recorded |")
        print("|---|---|---|---|---|---|")
        for (t, rows, k, c), o, n in slower:
            print(f"| {t} | {rows}×{k} | {c} | {o:.2f} | {n:.2f} | {n / o:.2f}× |")
    print(f"regressions: {len(slower)} of {len(shared)} entries more than {a.threshold:.0%} slower than "
          f"{os.path.basename(a.recorded)}, {faster} more than {a.threshold:.0%} faster")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
