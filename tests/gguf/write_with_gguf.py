"""Writes a GGUF with PyPI gguf's GGUFWriter, and the manifest of what it wrote (built from the
inputs, not from the file), for llmrt to load and compare.

    python3 write_with_gguf.py OUT.gguf OUT.manifest

Exit status 0 on success, 3 when gguf is missing.
"""

import sys

from gguf_manifest import GGUFValueType, canonical, fnv1a64, gguf, np

ALIGNMENT = 64
T = GGUFValueType
Q = gguf.GGMLQuantizationType


def main() -> int:
    path, manifest_path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(1234)
    w = gguf.GGUFWriter(path, "llama")
    kvs = [("general.architecture", T.STRING, "llama")]  # GGUFWriter adds it first

    def kv(key, vtype, value, sub_type=None):
        if vtype == T.ARRAY:
            w.add_key_value(key, value, T.ARRAY, sub_type=sub_type)
            kvs.append((key, T.ARRAY, (sub_type, value)))
        else:
            w.add_key_value(key, value, vtype)
            kvs.append((key, vtype, value))

    w.add_custom_alignment(ALIGNMENT)
    kvs.append(("general.alignment", T.UINT32, ALIGNMENT))
    kv("llama.block_count", T.UINT32, 2)
    kv("llama.context_length", T.UINT64, 2**40 + 3)
    kv("test.uint8", T.UINT8, 200)
    kv("test.int8", T.INT8, -100)
    kv("test.uint16", T.UINT16, 60000)
    kv("test.int16", T.INT16, -30000)
    kv("test.int32", T.INT32, -7)
    kv("test.float32", T.FLOAT32, 0.1)
    kv("test.int64", T.INT64, -(2**60))
    kv("test.float64", T.FLOAT64, 2.0 / 3.0)
    kv("test.bool", T.BOOL, True)
    kv("test.string", T.STRING, "gr\u00fc\u00dfe \u2581")
    kv("tokenizer.ggml.tokens", T.ARRAY, ["<unk>", "<s>", "</s>", "\u2581a"], T.STRING)
    kv("tokenizer.ggml.scores", T.ARRAY, [0.0, -1.5, 2.25, -1e-3], T.FLOAT32)
    kv("tokenizer.ggml.token_type", T.ARRAY, [2, 3, 3, 1], T.INT32)
    kv("test.array.uint8", T.ARRAY, [0, 7, 255], T.UINT8)
    kv("test.array.int16", T.ARRAY, [-5, 5], T.INT16)
    kv("test.array.uint64", T.ARRAY, [1, 2**63], T.UINT64)
    kv("test.array.float64", T.ARRAY, [0.25, -8.5], T.FLOAT64)
    kv("test.array.bool", T.ARRAY, [True, False, False], T.BOOL)
    # Arrays of arrays: GGUFWriter types each inner list by its first item (int -> INT32).
    w.add_key_value("test.array.nested", [[1, 2], [3, 4, 5]], T.ARRAY)
    kvs.append(("test.array.nested", T.ARRAY, (T.ARRAY, [(T.INT32, [1, 2]), (T.INT32, [3, 4, 5])])))
    w.add_key_value("test.array.nested_strings", [["a"], ["b", "c"]], T.ARRAY)
    kvs.append(("test.array.nested_strings", T.ARRAY, (T.ARRAY, [(T.STRING, ["a"]), (T.STRING, ["b", "c"])])))

    tensors = []  # (name, ggml type, ne, bytes)

    def tensor(name, data, raw_dtype=None):
        if raw_dtype is None:
            w.add_tensor(name, data)
            qtype = Q.F32 if data.dtype == np.float32 else Q.F16
            ne = list(reversed(data.shape))
        else:
            w.add_tensor(name, data, raw_dtype=raw_dtype)
            ne = list(reversed(gguf.quants.quant_shape_from_byte_shape(data.shape, raw_dtype)))
        tensors.append((name, int(qtype if raw_dtype is None else raw_dtype), ne, data.tobytes()))

    source = rng.standard_normal((3, 64), dtype=np.float32)
    tensor("q8_0.source", source)
    tensor("q8_0.weight", gguf.quants.quantize(source, Q.Q8_0), Q.Q8_0)
    tensor("f32.weight", rng.standard_normal((2, 3, 2, 8), dtype=np.float32))
    tensor("f16.weight", rng.standard_normal((2, 32)).astype(np.float16))
    bf16_source = rng.standard_normal((2, 32), dtype=np.float32)
    tensor("bf16.source", bf16_source)
    tensor("bf16.weight", gguf.quants.quantize(bf16_source, Q.BF16), Q.BF16)
    mx_source = rng.standard_normal((2, 64), dtype=np.float32)
    tensor("mxfp4.source", mx_source)
    tensor("mxfp4.weight", gguf.quants.quantize(mx_source, Q.MXFP4), Q.MXFP4)
    # gguf.quants has no K-quant quantizers: whole blocks of random bytes. (q8_1 is left out:
    # gguf's GGML_QUANT_SIZES gives it 40 bytes a block, ggml's block_q8_1 has 36.)
    for qtype in (Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q8_K):
        block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, size=(2, 2 * type_size), dtype=np.uint8)
        tensor(qtype.name.lower() + ".weight", raw, qtype)
    # Types llmrt cannot decode: it lists them all the same.
    for qtype in (Q.IQ2_XXS, Q.IQ3_S, Q.TQ1_0):
        block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, size=(3, type_size), dtype=np.uint8)
        tensor(qtype.name.lower() + ".weight", raw, qtype)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    lines = [f"alignment {ALIGNMENT}"]
    lines += [f"kv {key} {canonical(vtype, value)}" for key, vtype, value in kvs]
    offset = 0
    for name, qtype, ne, data in tensors:
        lines.append(f"tensor {name} {qtype} [{','.join(map(str, ne))}] {offset} {len(data)} {fnv1a64(data)}")
        offset += (len(data) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    with open(manifest_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
