"""The manifest: a line-per-item description of a GGUF file that tests/gguf/sample_gguf.hpp
produces the same way, so that what one side wrote and what the other side read compare line by
line.

    alignment 32
    kv <key> <value>                 value: uint32:7, float32:<bits in hex>, string:<utf-8 in hex>,
                                     array<int32>[int32:1,int32:2], array<array>[array<...>[...]]
    tensor <name> <ggml type id> [ne0,ne1,...] <offset in data section> <bytes> <fnv1a64 of bytes>
"""

import struct
import sys

try:
    import numpy as np
    import gguf
    from gguf import GGUFValueType
except ImportError as e:  # the C++ test reports this message
    print(f"the Python module gguf (or numpy) is missing: {e}; install it with `pip install gguf numpy`")
    sys.exit(3)

TYPE_NAMES = {
    GGUFValueType.UINT8: "uint8", GGUFValueType.INT8: "int8", GGUFValueType.UINT16: "uint16",
    GGUFValueType.INT16: "int16", GGUFValueType.UINT32: "uint32", GGUFValueType.INT32: "int32",
    GGUFValueType.FLOAT32: "float32", GGUFValueType.BOOL: "bool", GGUFValueType.STRING: "string",
    GGUFValueType.ARRAY: "array", GGUFValueType.UINT64: "uint64", GGUFValueType.INT64: "int64",
    GGUFValueType.FLOAT64: "float64",
}


def fnv1a64(data: bytes) -> str:
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return f"{h:016x}"


def canonical(vtype: GGUFValueType, value) -> str:
    """A Python value the way a GGUFWriter packs it as `vtype`. An array is (element type, items)."""
    name = TYPE_NAMES[vtype]
    if vtype == GGUFValueType.STRING:
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return f"{name}:{data.hex()}"
    if vtype == GGUFValueType.ARRAY:
        etype, items = value
        return f"array<{TYPE_NAMES[etype]}>[" + ",".join(canonical(etype, x) for x in items) + "]"
    if vtype == GGUFValueType.BOOL:
        return f"{name}:{1 if value else 0}"
    if vtype == GGUFValueType.FLOAT32:
        return f"{name}:{struct.pack('<f', value).hex()}"
    if vtype == GGUFValueType.FLOAT64:
        return f"{name}:{struct.pack('<d', value).hex()}"
    return f"{name}:{int(value)}"


def _decode(parts, i: int, vtype: GGUFValueType):
    """The canonical text of the value whose parts start at parts[i], and the index after it.
    GGUFReader keeps each value as the list of numpy pieces it read, in file order."""
    name = TYPE_NAMES[vtype]
    if vtype == GGUFValueType.STRING:
        return f"{name}:{parts[i + 1].tobytes().hex()}", i + 2
    if vtype == GGUFValueType.ARRAY:
        etype = GGUFValueType(int(parts[i][0]))
        count = int(parts[i + 1][0])
        i += 2
        items = []
        for _ in range(count):
            text, i = _decode(parts, i, etype)
            items.append(text)
        return f"array<{TYPE_NAMES[etype]}>[" + ",".join(items) + "]", i
    scalar = parts[i]
    if vtype == GGUFValueType.BOOL:
        return f"{name}:{1 if bool(scalar[0]) else 0}", i + 1
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        return f"{name}:{scalar.tobytes().hex()}", i + 1
    return f"{name}:{int(scalar[0])}", i + 1


def manifest_from_reader(reader: "gguf.GGUFReader") -> list[str]:
    lines = [f"alignment {int(reader.alignment)}"]
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):  # the header, which GGUFReader lists as fields too
            continue
        vtype = GGUFValueType(int(field.parts[2][0]))
        text, end = _decode(field.parts, 3, vtype)
        assert end == len(field.parts), f"{key}: decoded {end} of {len(field.parts)} parts"
        lines.append(f"kv {key} {text}")
    for t in reader.tensors:
        ne = ",".join(str(int(d)) for d in t.shape)
        data = t.data.tobytes()
        lines.append(f"tensor {t.name} {int(t.tensor_type)} [{ne}] {t.data_offset - reader.data_offset} "
                     f"{len(data)} {fnv1a64(data)}")
    return lines


def compare(expected: list[str], actual: list[str], what: str) -> bool:
    """Prints every difference; true when there is none."""
    ok = True
    for i in range(max(len(expected), len(actual))):
        e = expected[i] if i < len(expected) else "<nothing>"
        a = actual[i] if i < len(actual) else "<nothing>"
        if e != a:
            ok = False
            print(f"{what}: line {i + 1} differs\n  expected: {e[:300]}\n  actual:   {a[:300]}")
    return ok
