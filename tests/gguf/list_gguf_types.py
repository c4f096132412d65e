"""Lists the tensor types PyPI gguf knows, one a line: ggml type id, name, block size, bytes per
block (gguf.GGML_QUANT_SIZES), for llmrt's test of its own table (include/llmrt/gguf/ggml_types.hpp).

    python3 list_gguf_types.py OUT.txt

Exit status 0 on success, 3 when gguf is missing.
"""

import sys

from gguf_manifest import gguf


def main() -> int:
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        for qtype in gguf.GGMLQuantizationType:
            block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
            out.write(f"{int(qtype)} {qtype.name} {block_size} {type_size}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
