"""Checks llmrt's quantized bytes against PyPI gguf's numpy dequantizers.

Usage: gguf_dequantize_check.py DIR
DIR holds, per type, <name>.q (quantized rows), <name>.f32 (llmrt's dequantization) and
index.txt lines "<name> <ggml type id> <rows> <elements per row>".
Exit status 0 when every type gguf knows agrees bit for bit.
"""
import sys
from pathlib import Path

try:
    import numpy as np
    import gguf
    from gguf import quants
except ImportError as exc:  # CI installs both with pip; a missing one is a failure, not a skip
    print(f"FAIL: the python packages gguf and numpy are needed: {exc}")
    sys.exit(2)


def dequantize_with_gguf(raw: np.ndarray, type_id: int, rows: int):
    qtype = gguf.GGMLQuantizationType(type_id)
    data = raw.reshape(rows, -1)
    if qtype == gguf.GGMLQuantizationType.F32:
        return data.view(np.float32).reshape(-1)
    if qtype == gguf.GGMLQuantizationType.F16:
        return data.view(np.float16).astype(np.float32).reshape(-1)
    return quants.dequantize(data, qtype).astype(np.float32).reshape(-1)


def main() -> int:
    folder = Path(sys.argv[1])
    failures = 0
    for line in (folder / "index.txt").read_text().splitlines():
        name, type_id, rows, n = line.split()
        type_id, rows, n = int(type_id), int(rows), int(n)
        try:
            gguf.GGMLQuantizationType(type_id)
        except ValueError:
            print(f"skipped {name}: gguf {getattr(gguf, '__version__', '')} does not know type id {type_id}")
            continue
        raw = np.fromfile(folder / f"{name}.q", dtype=np.uint8)
        ours = np.fromfile(folder / f"{name}.f32", dtype=np.float32)
        try:
            theirs = dequantize_with_gguf(raw, type_id, rows)
        except NotImplementedError as exc:
            print(f"skipped {name}: gguf has no numpy dequantizer for it ({exc})")
            continue
        if theirs.shape != ours.shape:
            print(f"FAIL {name}: gguf gave {theirs.shape[0]} values, llmrt {ours.shape[0]}")
            failures += 1
            continue
        diff = np.nonzero(theirs.view(np.uint32) != ours.view(np.uint32))[0]
        if diff.size:
            i = int(diff[0])
            print(f"FAIL {name}: {diff.size} of {ours.size} values differ, first at {i}: gguf {theirs[i]!r}, llmrt {ours[i]!r}")
            failures += 1
        else:
            print(f"ok {name}: {ours.size} values bit-identical")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
