"""Reads a GGUF with PyPI gguf's GGUFReader and compares what it sees with a manifest.

    python3 read_with_gguf.py FILE.gguf EXPECTED.manifest

Exit status 0 when every line matches, 1 on a difference (printed), 3 when gguf is missing.
"""

import sys

from gguf_manifest import compare, gguf, manifest_from_reader


def main() -> int:
    path, manifest_path = sys.argv[1], sys.argv[2]
    with open(manifest_path, encoding="utf-8") as f:
        expected = f.read().splitlines()
    actual = manifest_from_reader(gguf.GGUFReader(path))
    if not compare(expected, actual, f"GGUFReader({path})"):
        return 1
    print(f"GGUFReader read {path}: {len(actual)} manifest lines match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
