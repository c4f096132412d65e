#!/usr/bin/env python3
"""Write a Llama-3-shaped GGUF file with random quantized weights and a real tokenizer.

    make_llama_gguf.py OUT.gguf --size {tiny,1b,8b} --type q4_K --vocab VOCAB.gguf
                       [--output-type T] [--seed N] [--gain G] [--check]

Both llama.cpp and llmrt load the file as a llama model, so the two can be timed on the same
bytes. Sizes (n_embd, layers, n_ff, heads, kv heads; the vocabulary is the tokenizer's):

    tiny   256,  2,   512,  4, 2   (a smoke test: seconds to write, any CPU runs it)
    1b    2048, 16,  8192, 32, 8   (Llama 3.2 1B's body, untied output)
    8b    4096, 32, 14336, 32, 8   (Llama 3 8B)

The tokenizer (every tokenizer.* key) is copied from VOCAB.gguf, normally llama.cpp's
models/ggml-vocab-llama-bpe.gguf (128256 tokens), which fetch-llama-cpp.sh leaves in
.peer/vocab/. Every matrix (token embedding, output, attention and feed-forward) is in --type,
the output matrix in --output-type if given; norm weights are 1.

No quantizer runs, so an 8B file takes seconds of CPU time: each block is random bytes whose
scale fields are then set so that the block's weights have mean 0 and standard deviation
gain / sqrt(k) (k: the row length), the scale of a trained layer's weights. A model with such
weights keeps its activations finite; the text it writes is noise, which is all a speed
comparison needs. --check dequantizes a few rows of every matrix (gguf-py's reference
dequantizers) and prints their mean and standard deviation against that target.

Needs numpy and gguf-py: PyPI's `gguf`, or llama.cpp's copy (PYTHONPATH=.peer/llama.cpp/gguf-py).
"""
import argparse
import math
import sys
import zlib

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as QT
except ImportError:
    sys.exit("make_llama_gguf.py needs gguf-py: pip install gguf, or PYTHONPATH=.peer/llama.cpp/gguf-py")

SIZES = {  # n_embd, n_layer, n_ff, n_head, n_head_kv
    "tiny": (256, 2, 512, 4, 2),
    "1b": (2048, 16, 8192, 32, 8),
    "8b": (4096, 32, 14336, 32, 8),
}

TYPES = {  # the weight types llmrt's kernels read, by ggml's name, and general.file_type
    "q8_0": (QT.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
    "q2_K": (QT.Q2_K, gguf.LlamaFileType.MOSTLY_Q2_K),
    "q3_K": (QT.Q3_K, gguf.LlamaFileType.MOSTLY_Q3_K_M),
    "q4_K": (QT.Q4_K, gguf.LlamaFileType.MOSTLY_Q4_K_M),
    "q5_K": (QT.Q5_K, gguf.LlamaFileType.MOSTLY_Q5_K_M),
    "q6_K": (QT.Q6_K, gguf.LlamaFileType.MOSTLY_Q6_K),
    "mxfp4": (QT.MXFP4, gguf.LlamaFileType.MOSTLY_MXFP4_MOE),
}


def qtype_named(name):
    for key, value in TYPES.items():
        if key.lower() == name.lower():
            return key, value[0]
    raise argparse.ArgumentTypeError(f"unknown type {name!r} (known: {', '.join(TYPES)})")


def mean_square_of_range(lo, hi):
    """E[x^2] for x uniform over the integers lo..hi."""
    values = np.arange(lo, hi + 1, dtype=np.float64)
    return float(np.mean(values * values))


def f16_bytes(values):
    """float16 bit patterns as two uint8 columns (little-endian), one row per value."""
    return np.asarray(values, dtype="<f2").reshape(-1, 1).view(np.uint8)


def f16_round(x):
    return float(np.float16(x))


def uniform_ints(rng, shape, lo, hi):
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int16)


# Each function takes the random blocks of a matrix as an (n_blocks, block_bytes) uint8 array and
# sets the scale fields in place for a weight standard deviation of `sigma`. The layouts are
# ggml's (ggml-common.h); a block's weights are d * s * u (one scale, one quant), where the scale
# s and the quant u are independent, so E[w^2] = d^2 E[s^2] E[u^2] and d follows from sigma.

def fill_q8_0(b, sigma, rng):
    # d (f16) | qs: 32 int8. w = d * q, q uniform over -128..127.
    b[:, 0:2] = f16_bytes(np.full(len(b), sigma / math.sqrt(mean_square_of_range(-128, 127))))


def k_quant_min_equals_scale(scales):
    """q4_K/q5_K's 12 scale bytes with every sub-block's min equal to its scale.

    Bytes 0-3 hold scales 0-3 (low 6 bits) and the top bits of scales 4-7; bytes 4-7 the same
    for the mins; bytes 8-11 the low nibbles of scales 4-7 (low) and of mins 4-7 (high)."""
    scales[:, 4:8] = scales[:, 0:4]
    low = scales[:, 8:12] & 0x0F
    scales[:, 8:12] = low | (low << 4)


def fill_q4_K(b, sigma, rng):
    # d, dmin (f16) | 12 bytes of 6-bit scales and mins | 128 bytes of 4-bit quants.
    # w = d * sc * q - dmin * m; with m = sc and dmin = 7.5 d, w = d * sc * (q - 7.5), q in 0..15.
    k_quant_min_equals_scale(b[:, 4:16])
    d = f16_round(sigma / math.sqrt(mean_square_of_range(0, 63) * (16 * 16 - 1) / 12))
    b[:, 0:2] = f16_bytes(np.full(len(b), d))
    b[:, 2:4] = f16_bytes(np.full(len(b), 7.5 * d))


def fill_q5_K(b, sigma, rng):
    # As q4_K with a fifth bit in qh: q in 0..31, dmin = 15.5 d.
    k_quant_min_equals_scale(b[:, 4:16])
    d = f16_round(sigma / math.sqrt(mean_square_of_range(0, 63) * (32 * 32 - 1) / 12))
    b[:, 0:2] = f16_bytes(np.full(len(b), d))
    b[:, 2:4] = f16_bytes(np.full(len(b), 15.5 * d))


def fill_q2_K(b, sigma, rng):
    # 16 bytes: scale (low nibble) and min (high nibble) per 16 weights | 64 bytes of 2-bit quants
    # | d, dmin (f16). With min = scale and dmin = 1.5 d: w = d * sc * (q - 1.5), q in 0..3.
    low = b[:, 0:16] & 0x0F
    b[:, 0:16] = low | (low << 4)
    d = f16_round(sigma / math.sqrt(mean_square_of_range(0, 15) * (4 * 4 - 1) / 12))
    b[:, 80:82] = f16_bytes(np.full(len(b), d))
    b[:, 82:84] = f16_bytes(np.full(len(b), 1.5 * d))


def fill_q3_K(b, sigma, rng):
    # 32 bytes hmask | 64 bytes qs | 12 bytes of 6-bit scales (stored + 32) | d (f16).
    # w = d * (sc - 32) * q, q in -4..3; random scale bytes make sc - 32 uniform over -32..31.
    q_mean_square = mean_square_of_range(-4, 3)
    b[:, 108:110] = f16_bytes(np.full(len(b), sigma / math.sqrt(mean_square_of_range(-32, 31) * q_mean_square)))


def fill_q6_K(b, sigma, rng):
    # 128 bytes ql | 64 bytes qh | 16 int8 scales | d (f16). w = d * sc * (q - 32), q in 0..63.
    # Scales of either sign with magnitude 1..63, so every sub-block's mean is 0 on average.
    magnitude = uniform_ints(rng, (len(b), 16), 1, 63)
    sign = rng.integers(0, 2, size=(len(b), 16), dtype=np.int16) * 2 - 1
    b[:, 192:208] = (magnitude * sign).astype(np.int8).view(np.uint8)
    u_mean_square = mean_square_of_range(-32, 31)
    b[:, 208:210] = f16_bytes(np.full(len(b), sigma / math.sqrt(mean_square_of_range(1, 63) * u_mean_square)))


# ggml's e2m1 values, doubled (kvalues_mxfp4); the block scale 2^(e - 128) halves them back.
MXFP4_VALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float64)


def fill_mxfp4(b, sigma, rng):
    # e (E8M0) | 16 bytes of e2m1 pairs. w = value * 2^(e - 128). A power of two rarely gives
    # sigma, so blocks take the exponent below or above it in the mix whose mean square does.
    variance = (sigma / math.sqrt(float(np.mean(MXFP4_VALUES ** 2)))) ** 2
    lower = math.floor(math.log2(variance) / 2)
    above = (variance - 4.0 ** lower) / (4.0 ** (lower + 1) - 4.0 ** lower)
    e = 128 + lower + (rng.random(len(b)) < above)
    b[:, 0] = np.clip(e, 2, 254).astype(np.uint8)


FILL = {QT.Q8_0: fill_q8_0, QT.Q2_K: fill_q2_K, QT.Q3_K: fill_q3_K, QT.Q4_K: fill_q4_K,
        QT.Q5_K: fill_q5_K, QT.Q6_K: fill_q6_K, QT.MXFP4: fill_mxfp4}


class Matrix:
    """A rows x k matrix of one quantized type, made when it is written."""

    def __init__(self, name, rows, k, qtype, gain, seed):
        block, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        if k % block:
            raise SystemExit(f"{name}: row length {k} is not a multiple of {qtype.name}'s block of {block}")
        self.name, self.rows, self.k, self.qtype = name, rows, k, qtype
        self.blocks_per_row, self.block_bytes = k // block, block_bytes
        self.sigma = gain / math.sqrt(k)
        self.seed = [seed, zlib.crc32(name.encode())]  # the same bytes whatever else the file holds

    def byte_shape(self):
        return (self.rows, self.blocks_per_row * self.block_bytes)

    def data(self):
        rng = np.random.default_rng(self.seed)
        n_blocks = self.rows * self.blocks_per_row
        blocks = np.frombuffer(bytearray(rng.bytes(n_blocks * self.block_bytes)), dtype=np.uint8)
        blocks = blocks.reshape(n_blocks, self.block_bytes)
        FILL[self.qtype](blocks, self.sigma, rng)
        return blocks.reshape(self.byte_shape())


def tensors(size, qtype, output_qtype, n_vocab, gain, seed):
    """(name, Matrix or float32 array): the embedding, the layers, the final norm and the output."""
    n_embd, n_layer, n_ff, n_head, n_head_kv = SIZES[size]
    n_kv = n_embd // n_head * n_head_kv
    ones = np.ones(n_embd, dtype=np.float32)
    yield "token_embd.weight", Matrix("token_embd.weight", n_vocab, n_embd, qtype, gain, seed)
    for i in range(n_layer):
        blk = f"blk.{i}."
        yield blk + "attn_norm.weight", ones
        for name, rows, k in (("attn_q", n_embd, n_embd), ("attn_k", n_kv, n_embd), ("attn_v", n_kv, n_embd),
                              ("attn_output", n_embd, n_embd)):
            yield blk + name + ".weight", Matrix(blk + name + ".weight", rows, k, qtype, gain, seed)
        yield blk + "ffn_norm.weight", ones
        for name, rows, k in (("ffn_gate", n_ff, n_embd), ("ffn_up", n_ff, n_embd), ("ffn_down", n_embd, n_ff)):
            yield blk + name + ".weight", Matrix(blk + name + ".weight", rows, k, qtype, gain, seed)
    yield "output_norm.weight", ones
    yield "output.weight", Matrix("output.weight", n_vocab, n_embd, output_qtype, gain, seed)


def copy_tokenizer(writer, vocab_path):
    reader = gguf.GGUFReader(vocab_path)
    n_vocab = None
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), vtype, sub_type=sub_type)
        if key == "tokenizer.ggml.tokens":
            n_vocab = len(field.data)
    if n_vocab is None:
        raise SystemExit(f"{vocab_path} has no tokenizer.ggml.tokens")
    return n_vocab


def check(path, gain):
    """Mean and standard deviation of a few dequantized rows of every matrix type in the file."""
    reader = gguf.GGUFReader(path)
    seen = set()
    for t in reader.tensors:
        qtype = QT(t.tensor_type)
        if qtype in (QT.F32, QT.F16) or (qtype, t.name.split(".")[-2]) in seen:
            continue
        seen.add((qtype, t.name.split(".")[-2]))
        rows = np.asarray(t.data)[:64]
        w = gguf.quants.dequantize(rows, qtype).astype(np.float64)
        k = int(t.shape[0])
        print(f"  {t.name:24s} {qtype.name:6s} k {k:6d}: mean {w.mean():+.2e}, std {w.std():.3e} "
              f"(target {gain / math.sqrt(k):.3e}), max |w| {np.abs(w).max():.3e}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="the GGUF file to write")
    p.add_argument("--size", choices=SIZES, required=True)
    p.add_argument("--type", dest="qtype", type=qtype_named, required=True, help=", ".join(TYPES))
    p.add_argument("--vocab", required=True, help="a GGUF file with the tokenizer (ggml-vocab-llama-bpe.gguf)")
    p.add_argument("--output-type", type=qtype_named, help="output.weight's type (default: --type)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gain", type=float, default=0.5, help="weight std times sqrt(row length) (default 0.5)")
    p.add_argument("--check", action="store_true", help="then read the file back and print weight statistics")
    a = p.parse_args()

    type_name, qtype = a.qtype
    output_name, output_qtype = a.output_type or a.qtype
    n_embd, n_layer, n_ff, n_head, n_head_kv = SIZES[a.size]

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name(f"random llama {a.size} {type_name}" + (f" (output {output_name})" if output_name != type_name else ""))
    w.add_file_type(int(TYPES[type_name][1]))
    w.add_context_length(8192)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    n_vocab = copy_tokenizer(w, a.vocab)
    w.add_vocab_size(n_vocab)

    # The tensors' descriptions first, then their data one at a time: an 8B file never sits in memory.
    items = list(tensors(a.size, qtype, output_qtype, n_vocab, a.gain, a.seed))
    total = 0
    for name, t in items:
        if isinstance(t, Matrix):
            shape = t.byte_shape()
            nbytes = shape[0] * shape[1]
            w.add_tensor_info(name, shape, np.dtype(np.uint8), nbytes, raw_dtype=t.qtype)
        else:
            nbytes = t.nbytes
            w.add_tensor_info(name, t.shape, t.dtype, nbytes)
        total += nbytes
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, t in items:
        w.write_tensor_data(t.data() if isinstance(t, Matrix) else t)
    w.close()

    print(f"wrote {a.out}: llama {a.size} (n_embd {n_embd}, {n_layer} layers, n_ff {n_ff}, {n_head} heads, "
          f"{n_head_kv} kv heads, vocab {n_vocab}), {type_name} weights"
          + (f", output {output_name}" if output_name != type_name else "") + f", {total / 2**30:.2f} GiB")
    if a.check:
        check(a.out, a.gain)


if __name__ == "__main__":
    main()
