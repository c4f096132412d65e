"""Loads an llmrt-generated llama GGUF with PyPI gguf's GGUFReader and checks it against llmrt.

    python3 check_model_with_gguf.py MODEL.gguf EXPECTED.txt TOKEN_EMBD.f32

EXPECTED.txt lists `key value` metadata lines and `tensor NAME TYPE NE0 [NE1]` lines, as llmrt
wrote them; TOKEN_EMBD.f32 holds llmrt's dequantization of token_embd.weight (float32, row
major). Exit status 0 when everything matches, 1 on a difference (printed), 3 when gguf is missing.
"""

import sys

try:
    import gguf
    import numpy as np
    from gguf.quants import dequantize
except ImportError as e:  # pragma: no cover
    print(f"missing Python module: {e}")
    sys.exit(3)


def field_value(reader, key):
    field = reader.fields[key]
    if field.types and field.types[0] == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    return field.parts[field.data[0]][0].item()


def main() -> int:
    path, expected_path, embd_path = sys.argv[1:4]
    reader = gguf.GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}
    failures = []
    with open(expected_path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            parts = line.split()
            if parts[0] == "tensor":
                name, type_name, shape = parts[1], parts[2], [int(x) for x in parts[3:]]
                t = tensors.get(name)
                if t is None:
                    failures.append(f"{name}: missing")
                    continue
                got_shape = [int(x) for x in t.shape]
                if t.tensor_type.name.lower() != type_name.lower() or got_shape != shape:
                    failures.append(f"{name}: gguf reads {t.tensor_type.name} {got_shape}, llmrt wrote {type_name} {shape}")
            else:
                key, want = parts[0], " ".join(parts[1:])
                if key not in reader.fields:
                    failures.append(f"metadata {key}: missing")
                    continue
                got = field_value(reader, key)
                if isinstance(got, float):
                    ok = abs(got - float(want)) <= 1e-6 * max(1.0, abs(float(want)))
                else:
                    ok = str(got) == want
                if not ok:
                    failures.append(f"metadata {key}: gguf reads {got!r}, llmrt wrote {want}")
    if len(tensors) != sum(1 for l in open(expected_path, encoding="utf-8") if l.startswith("tensor ")):
        failures.append(f"gguf reads {len(tensors)} tensors")

    embd = tensors["token_embd.weight"]
    values = dequantize(embd.data, embd.tensor_type).reshape(-1).astype(np.float32)
    mine = np.fromfile(embd_path, dtype=np.float32)
    if values.shape != mine.shape or not np.array_equal(values.view(np.uint32), mine.view(np.uint32)):
        failures.append("token_embd.weight: gguf's dequantization differs from llmrt's")

    for f in failures:
        print(f)
    if failures:
        return 1
    print(f"GGUFReader loaded {path}: {len(tensors)} tensors, metadata and token_embd values agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
