#!/usr/bin/env python3
"""The Vulkan mat-vec against the CUDA one on the same shapes, from the two benches' JSON.

    python3 bench/mmvq_vulkan/against_cuda.py VULKAN.json CUDA.json [--target 0.75]

VULKAN.json: llmrt-bench-mmvq-vulkan --json; CUDA.json: llmrt-bench-mmvq-cuda --json. For every
(type, rows, k, columns) in both, prints the Vulkan chained time (a barrier between dependent
dispatches), CUDA's shared-X time (launches sharing one prepared X), CUDA / Vulkan (the share of
CUDA's speed Vulkan reaches) and, per type and shape, what 8 columns cost over one on each.
Exits with status 1 when a one-column entry is below --target.
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        return {(r["type"], int(r["rows"]), int(r["k"]), int(r["ncols"])): r for r in json.load(f)["results"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vulkan")
    ap.add_argument("cuda")
    ap.add_argument("--target", type=float, default=0.75)
    a = ap.parse_args()
    vk, cu = load(a.vulkan), load(a.cuda)
    keys = sorted(set(vk) & set(cu))
    if not keys:
        print("against_cuda: the files share no (type, rows, k, ncols) entry")
        return 2
    print("| type | rows × k | cols | Vulkan chained µs | CUDA shared-X µs | CUDA / Vulkan | Vulkan 8/1 | CUDA 8/1 |")
    print("|---|---|---|---|---|---|---|---|")
    below = 0
    for t, rows, k, c in keys:
        v, x = vk[(t, rows, k, c)]["us"], cu[(t, rows, k, c)]["us_per_launch_shared_x"]
        ratio = x / v
        if c == 1 and ratio < a.target:
            below += 1
        eight = ""
        if c == 8 and (t, rows, k, 1) in vk and (t, rows, k, 1) in cu:
            eight = (f" {v / vk[(t, rows, k, 1)]['us']:.2f}× | "
                     f"{x / cu[(t, rows, k, 1)]['us_per_launch_shared_x']:.2f}× |")
        print(f"| {t} | {rows}×{k} | {c} | {v:.2f} | {x:.2f} | {ratio:.2f} |" + (eight or " | |"))
    print(f"against_cuda: {below} one-column entries below {a.target:.0%} of CUDA's shared-X speed")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
