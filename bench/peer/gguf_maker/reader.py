"""A GGUF file's keys and tensors, read directly.

gguf-py's GGUFReader takes some 20 s on a file with the Llama 3 tokenizer (it maps every one of
its 400k strings to a numpy view); this reads the same in well under a second. The layout
(ggml/docs/gguf.md): "GGUF", u32 version, u64 tensor count, u64 key count; each key as a string
(u64 length, bytes), a u32 value type and the value (an array: a u32 element type, a u64 count,
the elements); each tensor as its name, a u32 dimension count, u64 dimensions (fastest first),
a u32 ggml type and a u64 offset into the data section, which starts at the next multiple of
general.alignment (default 32). Little-endian throughout.
"""
import struct

import numpy as np

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf import GGUFValueType as VT

HEADER_LIMIT = 64 << 20  # the keys and tensor descriptions; the Llama 3 tokenizer takes 7 MB

SCALARS = {VT.UINT8: "<B", VT.INT8: "<b", VT.UINT16: "<H", VT.INT16: "<h", VT.UINT32: "<I",
           VT.INT32: "<i", VT.FLOAT32: "<f", VT.BOOL: "<?", VT.UINT64: "<Q", VT.INT64: "<q",
           VT.FLOAT64: "<d"}


def read_gguf(path):
    """(keys, tensors): keys [(key, value, type, element type or None)] in file order, strings as
    bytes (GGUFWriter writes bytes as they are) and numeric arrays as lists; tensors
    [(name, ggml type, numpy shape, the tensor's bytes as a uint8 memmap)]."""
    with open(path, "rb") as f:
        data = f.read(HEADER_LIMIT)
    if data[:4] != b"GGUF":
        raise SystemExit(f"{path} is not a GGUF file")
    version, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    if version < 2:
        raise SystemExit(f"{path}: GGUF version {version} is too old")
    at = 24

    def string():
        nonlocal at
        (n,) = struct.unpack_from("<Q", data, at)
        at += 8 + n
        return data[at - n:at]

    def scalar(vtype):
        nonlocal at
        fmt = SCALARS[vtype]
        (v,) = struct.unpack_from(fmt, data, at)
        at += struct.calcsize(fmt)
        return v

    out = []
    for _ in range(n_kv):
        key = string().decode()
        (vtype,) = struct.unpack_from("<I", data, at)
        at += 4
        vtype, sub_type = VT(vtype), None
        if vtype == VT.STRING:
            value = string()
        elif vtype == VT.ARRAY:
            sub_type, count = VT(struct.unpack_from("<I", data, at)[0]), struct.unpack_from("<Q", data, at + 4)[0]
            at += 12
            if sub_type == VT.STRING:
                value = [string() for _ in range(count)]
            elif sub_type in SCALARS:
                dtype = np.dtype(SCALARS[sub_type])
                value = np.frombuffer(data, dtype=dtype, count=count, offset=at).tolist()
                at += dtype.itemsize * count
            else:
                raise SystemExit(f"{path}: {key} is an array of {sub_type.name} (not read here)")
        else:
            value = scalar(vtype)
        out.append((key, value, vtype, sub_type))

    infos = []
    for _ in range(n_tensors):
        name = string().decode()
        (n_dims,) = struct.unpack_from("<I", data, at)
        dims = struct.unpack_from(f"<{n_dims}Q", data, at + 4)
        qtype, offset = struct.unpack_from("<IQ", data, at + 4 + 8 * n_dims)
        at += 4 + 8 * n_dims + 12
        infos.append((name, GGMLQuantizationType(qtype), tuple(reversed(dims)), offset))
    alignment = next((v for k, v, _, _ in out if k == "general.alignment"), 32)
    start = (at + alignment - 1) // alignment * alignment
    tensors = []
    for name, qtype, shape, offset in infos:
        block, block_bytes = GGML_QUANT_SIZES[qtype]
        nbytes = int(np.prod(shape)) // block * block_bytes
        tensors.append((name, qtype, shape, np.memmap(path, dtype=np.uint8, mode="r", offset=start + offset,
                                                      shape=(nbytes,))))
    return out, tensors


def read_tokenizer(path):
    """The tokenizer.* keys of read_gguf(path)."""
    return [kv for kv in read_gguf(path)[0] if kv[0].startswith("tokenizer.")]
