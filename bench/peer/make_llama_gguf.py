#!/usr/bin/env python3
"""Write a GGUF model file (Llama 3, Qwen2, Qwen3, Qwen3 MoE or gpt-oss shaped) with random
quantized weights and a real tokenizer.

    make_llama_gguf.py OUT.gguf --size SIZE --type q4_K --vocab VOCAB.gguf [--arch ARCH]
                       [--output-type T] [--expert-type T] [--seed N] [--gain G] [--check]

Both llama.cpp and llmrt load the file as a model of --arch (default llama), so the two can be
timed on the same bytes. Architectures and sizes (n_embd, layers, n_ff, heads, kv heads,
head_dim; experts: count, used, expert n_ff; the vocabulary is the tokenizer's):

    llama     tiny      256,  2,   512,  4, 2,  64   (a smoke test: seconds to write, any CPU runs it)
              1b       2048, 16,  8192, 32, 8,  64   (Llama 3.2 1B's body, untied output)
              8b       4096, 32, 14336, 32, 8, 128   (Llama 3 8B)
              70b      8192, 80, 28672, 64, 8, 128   (Llama 3 70B: about 40 GiB at q4_K)
    qwen2     tiny      256,  2,   512,  4, 2,  64   tied output
              1.5b     1536, 28,  8960, 12, 2, 128   (Qwen2.5-1.5B, tied output)
              7b       3584, 28, 18944, 28, 4, 128   (Qwen2.5-7B)
    qwen3     tiny      256,  2,   512,  4, 2, 128   tied output
              0.6b     1024, 28,  3072, 16, 8, 128   (Qwen3-0.6B, tied output)
              8b       4096, 36, 12288, 32, 8, 128   (Qwen3-8B)
    qwen3moe  tiny      256,  2,   512,  4, 2, 128;   8 experts, 2 used, 256
              30b-a3b  2048, 48,  6144, 32, 4, 128; 128 experts, 8 used, 768 (Qwen3-30B-A3B)
    gpt-oss   tiny      256,  2,   256,  8, 2,  64;   4 experts, 2 used, 256; window 16
              20b      2880, 24,  2880, 64, 8,  64;  32 experts, 4 used, 2880; window 128 (gpt-oss-20b)

The tokenizer (every tokenizer.* key) is copied from VOCAB.gguf, normally llama.cpp's
models/ggml-vocab-llama-bpe.gguf (128256 tokens), which fetch-llama-cpp.sh leaves in
.peer/vocab/; every architecture gets this Llama 3 tokenizer. Every matrix (token embedding,
output, attention, dense feed-forward, experts) is in --type; the output matrix in --output-type
if given (a tied size then gets an output.weight of its own), the experts in --expert-type (for
gpt-oss mxfp4 unless given, the type of the released model). Norm weights are 1; biases (qwen2's
and gpt-oss's) and gpt-oss's attention sinks are normal with std 0.02; a MoE router
(ffn_gate_inp.weight) is f32, as llama-quantize leaves it. gguf_maker/archs.py lists each
architecture's keys and tensors and where in llama.cpp they come from.

No quantizer runs, so an 8B file takes seconds of CPU time: each block is random bytes whose
scale fields are then set so that the block's weights have mean 0 and standard deviation
gain / sqrt(k) (k: the row length), the scale of a trained layer's weights (gguf_maker/blocks.py).
A model with such weights keeps its activations finite; the text it writes is noise, which is all
a speed comparison needs. --check dequantizes a few rows of every matrix (gguf-py's reference
dequantizers) and prints their mean and standard deviation against that target.

Needs numpy and gguf-py: PyPI's `gguf`, or llama.cpp's copy (PYTHONPATH=.peer/llama.cpp/gguf-py).
"""
import argparse
import math
import sys

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as QT
except ImportError:
    sys.exit("make_llama_gguf.py needs gguf-py: pip install gguf, or PYTHONPATH=.peer/llama.cpp/gguf-py")

from gguf_maker.archs import ARCHS, Quantized, metadata, tensors
from gguf_maker.blocks import TYPES
from gguf_maker.reader import read_gguf, read_tokenizer


def qtype_named(name):
    for key, value in TYPES.items():
        if key.lower() == name.lower():
            return key, value[0]
    raise argparse.ArgumentTypeError(f"unknown type {name!r} (known: {', '.join(TYPES)})")


def copy_tokenizer(writer, vocab_path):
    n_vocab = None
    for key, value, vtype, sub_type in read_tokenizer(vocab_path):
        writer.add_key_value(key, value, vtype, sub_type=sub_type)
        if key == "tokenizer.ggml.tokens":
            n_vocab = len(value)
    if n_vocab is None:
        raise SystemExit(f"{vocab_path} has no tokenizer.ggml.tokens")
    return n_vocab


def check(path, gain):
    """Mean and standard deviation of a few dequantized rows of every kind of matrix in the file,
    and of the first layer's random f32 tensors (biases, sinks, router)."""
    seen = set()
    for name, qtype, shape, data in read_gguf(path)[1]:
        kind = (qtype, name.split(".")[-2], name.split(".")[-1])
        if kind in seen:
            continue
        seen.add(kind)
        if qtype == QT.F32:
            w = data.view(np.float32).astype(np.float64)
            if np.all(w == 1.0):
                continue  # a norm's weights
            print(f"  {name:28s} {qtype.name:6s} n {w.size:7d}: mean {w.mean():+.2e}, std {w.std():.3e}")
            continue
        k = shape[-1]
        block, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        rows = data.reshape(-1, k // block * block_bytes)[:64]
        w = gguf.quants.dequantize(np.asarray(rows), qtype).astype(np.float64)
        print(f"  {name:28s} {qtype.name:6s} k {k:6d}: mean {w.mean():+.2e}, std {w.std():.3e} "
              f"(target {gain / math.sqrt(k):.3e}), max |w| {np.abs(w).max():.3e}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="the GGUF file to write")
    p.add_argument("--arch", choices=ARCHS, default="llama", help="the architecture (default llama)")
    p.add_argument("--size", required=True, help="; ".join(f"{a}: {', '.join(ARCHS[a].sizes)}" for a in ARCHS))
    p.add_argument("--type", dest="qtype", type=qtype_named, required=True, help=", ".join(TYPES))
    p.add_argument("--vocab", required=True, help="a GGUF file with the tokenizer (ggml-vocab-llama-bpe.gguf)")
    p.add_argument("--output-type", type=qtype_named, help="output.weight's type (default: --type; on a tied "
                   "size, giving it writes an untied output.weight)")
    p.add_argument("--expert-type", type=qtype_named, help="the experts' type (default: mxfp4 for gpt-oss, "
                   "else --type)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gain", type=float, default=0.5, help="weight std times sqrt(row length) (default 0.5)")
    p.add_argument("--check", action="store_true", help="then read the file back and print weight statistics")
    a = p.parse_args()

    arch = ARCHS[a.arch]
    if a.size not in arch.sizes:
        p.error(f"--arch {a.arch} has sizes {', '.join(arch.sizes)}, not {a.size!r}")
    size = arch.sizes[a.size]
    type_name, qtype = a.qtype
    output_name, output_qtype = a.output_type or a.qtype
    if size.tied and a.output_type is None:
        output_name, output_qtype = "tied", None
    expert_name, expert_qtype = a.expert_type or (qtype_named("mxfp4") if arch.moe == "gpt-oss" else a.qtype)
    # general.file_type names the bulk of the weights: --type's, or MXFP4_MOE for MXFP4 experts
    # (as in the released gpt-oss files); llama.cpp only prints it.
    file_type = TYPES["mxfp4" if arch.moe and expert_name == "mxfp4" else type_name][1]

    w = gguf.GGUFWriter(a.out, arch.name)
    name = f"random {a.arch} {a.size} {type_name}" if a.arch != "llama" else f"random llama {a.size} {type_name}"
    if arch.moe and expert_name != type_name:
        name += f" (experts {expert_name})"
    if output_name != type_name:
        name += f" (output {output_name})"
    w.add_name(name)
    w.add_file_type(int(file_type))
    for key, value, vtype in metadata(arch, size):
        w.add_key_value(key, value, vtype)
    n_vocab = copy_tokenizer(w, a.vocab)
    w.add_vocab_size(n_vocab)

    # The tensors' descriptions first, then their data one at a time: a large file never sits in memory.
    items = list(tensors(arch, size, qtype, output_qtype, expert_qtype, n_vocab, a.gain, a.seed))
    total = 0
    for t in items:
        if isinstance(t, Quantized):
            w.add_tensor_info(t.name, t.byte_shape(), np.dtype(np.uint8), t.nbytes(), raw_dtype=t.qtype)
        else:
            w.add_tensor_info(t.name, t.shape, np.dtype(np.float32), t.nbytes())
        total += t.nbytes()
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in items:
        w.write_tensor_data(t.data())
    w.close()

    s = size
    shape = (f"n_embd {s.n_embd}, {s.n_layer} layers, n_ff {s.n_ff}, {s.n_head} heads, {s.n_head_kv} kv heads"
             + (f", head_dim {s.head}" if s.head != s.n_embd // s.n_head else "")
             + (f", {s.n_expert} experts ({s.n_expert_used} used, n_ff {s.n_ff_exp})" if arch.moe else "")
             + (f", window {s.sliding_window}" if s.sliding_window else "") + f", vocab {n_vocab}")
    print(f"wrote {a.out}: {a.arch} {a.size} ({shape}), {type_name} weights"
          + (f", experts {expert_name}" if arch.moe and expert_name != type_name else "")
          + (f", output {output_name}" if output_name != type_name else "") + f", {total / 2**30:.2f} GiB")
    if a.check:
        check(a.out, a.gain)


if __name__ == "__main__":
    main()
