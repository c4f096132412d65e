#!/usr/bin/env python3
"""Write a trained llama (train.py's state dict as numpy arrays) to a GGUF file in f16.

    export_gguf.py OUT.gguf --vocab VOCAB.gguf --random CONFIG [--seed N]   (a smoke test)

From Python (train.py does this):

    from export_gguf import write_gguf
    write_gguf("target-f16.gguf", {k: v.float().cpu().numpy() for k, v in model.state_dict().items()},
               config=dataclasses.asdict(cfg), vocab_path="ggml-vocab-llama-bpe.gguf", name="llmrt target")

The file is what llama.cpp's convert_hf_to_gguf.py writes for a Llama model (architecture
"llama"): its keys (through bench/peer/gguf_maker/archs.py's `metadata`), the tokenizer keys
copied from VOCAB.gguf (make_llama_gguf.py's `copy_tokenizer`), general.file_type MOSTLY_F16, and
llama.cpp's tensor names. Matrices are f16 and 1-D tensors (the norms) f32, as llama.cpp's
converter leaves them. With no `output.weight` in the state dict the output is tied to the token
embedding (llama.cpp's llama loader falls back to token_embd.weight when output.weight is absent).

Q and K rows are written as they are, NOT permuted: train.py's rope rotates the pairs
(2i, 2i+1) of each head, which is llama.cpp's normal rope (LLAMA_ROPE_TYPE_NORM, the one the
llama architecture uses). A Hugging Face checkpoint rotates (i, i + head_dim/2) instead, which
is why convert_hf_to_gguf.py's LlamaModel.permute reorders its q/k rows; these need no reordering.

Needs numpy and gguf-py (pip install gguf numpy).
"""
import argparse
import re
import sys
from pathlib import Path

import numpy as np

# The repository's GGUF helpers (bench/peer), found relative to this file, not copied.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "peer"))

import gguf  # noqa: E402
from gguf_maker.archs import Arch, Size, metadata  # noqa: E402
from gguf_maker.reader import read_tokenizer  # noqa: E402
from make_llama_gguf import copy_tokenizer  # noqa: E402

from configs import CONFIGS  # noqa: E402  (train.py's model sizes; plain Python)

# train.py's state-dict names -> llama.cpp's tensor names (src/llama-arch.cpp, LLM_ARCH_LLAMA).
NAMES = [
    (r"tok_embd\.weight", "token_embd.weight"),
    (r"layers\.(\d+)\.attn_norm\.weight", "blk.{}.attn_norm.weight"),
    (r"layers\.(\d+)\.wq\.weight", "blk.{}.attn_q.weight"),
    (r"layers\.(\d+)\.wk\.weight", "blk.{}.attn_k.weight"),
    (r"layers\.(\d+)\.wv\.weight", "blk.{}.attn_v.weight"),
    (r"layers\.(\d+)\.wo\.weight", "blk.{}.attn_output.weight"),
    (r"layers\.(\d+)\.ffn_norm\.weight", "blk.{}.ffn_norm.weight"),
    (r"layers\.(\d+)\.w_gate\.weight", "blk.{}.ffn_gate.weight"),
    (r"layers\.(\d+)\.w_up\.weight", "blk.{}.ffn_up.weight"),
    (r"layers\.(\d+)\.w_down\.weight", "blk.{}.ffn_down.weight"),
    (r"norm\.weight", "output_norm.weight"),
    (r"output\.weight", "output.weight"),
]

# The hyperparameters the file needs (train.py's Config fields of the same names).
CONFIG_KEYS = ("n_embd", "n_layer", "n_head", "n_head_kv", "n_ff", "n_ctx", "rope_base", "rms_eps")


def gguf_name(name):
    """llama.cpp's name of train.py's tensor `name` (a torch.compile prefix "_orig_mod." dropped)."""
    name = name.removeprefix("_orig_mod.")
    for pattern, target in NAMES:
        m = re.fullmatch(pattern, name)
        if m:
            return target.format(*m.groups())
    raise ValueError(f"tensor {name!r} is not one of train.py's llama tensors (export_gguf.NAMES)")


def expected_shapes(c, n_vocab, tied):
    """numpy shape (rows, k) of every tensor, by llama.cpp name."""
    hd = c["n_embd"] // c["n_head"]
    shapes = {"token_embd.weight": (n_vocab, c["n_embd"]), "output_norm.weight": (c["n_embd"],)}
    if not tied:
        shapes["output.weight"] = (n_vocab, c["n_embd"])
    for i in range(c["n_layer"]):
        b = f"blk.{i}."
        shapes.update({b + "attn_norm.weight": (c["n_embd"],), b + "ffn_norm.weight": (c["n_embd"],),
                       b + "attn_q.weight": (c["n_head"] * hd, c["n_embd"]),
                       b + "attn_k.weight": (c["n_head_kv"] * hd, c["n_embd"]),
                       b + "attn_v.weight": (c["n_head_kv"] * hd, c["n_embd"]),
                       b + "attn_output.weight": (c["n_embd"], c["n_head"] * hd),
                       b + "ffn_gate.weight": (c["n_ff"], c["n_embd"]), b + "ffn_up.weight": (c["n_ff"], c["n_embd"]),
                       b + "ffn_down.weight": (c["n_embd"], c["n_ff"])})
    return shapes


def write_gguf(path, state, config, vocab_path, name="llmrt trained llama"):
    """Writes `state` (train.py name -> numpy array) as a llama GGUF in f16 at `path`.

    Raises ValueError naming the tensor when a name is unknown, a tensor is missing, or a shape
    does not fit `config` and the vocabulary."""
    missing = [k for k in CONFIG_KEYS if k not in config]
    if missing:
        raise ValueError(f"config lacks {', '.join(missing)}")
    c = config
    if c["n_embd"] % c["n_head"] or c["n_head"] % c["n_head_kv"]:
        raise ValueError(f"n_head {c['n_head']} must divide n_embd {c['n_embd']}, n_head_kv {c['n_head_kv']} n_head")
    tensors = {gguf_name(k): np.asarray(v) for k, v in state.items()}

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16))
    arch = Arch("llama", {}, context_length=int(c["n_ctx"]), rope_freq_base=float(c["rope_base"]),
                rms_eps=float(c["rms_eps"]))
    size = Size(int(c["n_embd"]), int(c["n_layer"]), int(c["n_ff"]), int(c["n_head"]), int(c["n_head_kv"]))
    for key, value, vtype in metadata(arch, size):
        w.add_key_value(key, value, vtype)
    n_vocab = copy_tokenizer(w, vocab_path)
    w.add_vocab_size(n_vocab)

    shapes = expected_shapes(c, n_vocab, tied="output.weight" not in tensors)
    for t in shapes:
        if t not in tensors:
            raise ValueError(f"{path}: tensor {t} is missing from the state dict")
    for t, a in tensors.items():
        if t not in shapes:
            raise ValueError(f"{path}: tensor {t} has no place in a {c['n_layer']}-layer llama")
        if tuple(a.shape) != shapes[t]:
            raise ValueError(f"{path}: tensor {t} has shape {tuple(a.shape)}, expected {shapes[t]} "
                             f"(config {dict((k, c[k]) for k in CONFIG_KEYS)}, vocabulary {n_vocab})")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{path}: tensor {t} holds NaN or inf")
    # llama.cpp's order: token_embd, the blocks, output_norm, output.
    for t in shapes:
        a = tensors[t]
        w.add_tensor(t, a.astype(np.float16 if a.ndim == 2 else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return n_vocab


def random_state(config, n_vocab, seed=0, tied=True):
    """train.py-named random weights (std 0.02, norms 1) of `config`: a stand-in for a trained model."""
    rng = np.random.default_rng(seed)
    state = {}
    inverse = {"token_embd.weight": "tok_embd.weight", "output_norm.weight": "norm.weight",
               "output.weight": "output.weight"}
    per_layer = {"attn_norm": "attn_norm", "attn_q": "wq", "attn_k": "wk", "attn_v": "wv", "attn_output": "wo",
                 "ffn_norm": "ffn_norm", "ffn_gate": "w_gate", "ffn_up": "w_up", "ffn_down": "w_down"}
    for t, shape in expected_shapes(config, n_vocab, tied).items():
        if t.startswith("blk."):
            _, i, kind, _ = t.split(".")
            k = f"layers.{i}.{per_layer[kind]}.weight"
        else:
            k = inverse[t]
        state[k] = np.ones(shape, np.float32) if len(shape) == 1 else \
            (rng.standard_normal(shape) * 0.02).astype(np.float32)
    return state


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", help="the GGUF file to write")
    p.add_argument("--vocab", required=True, help="a GGUF file with the Llama 3 tokenizer (ggml-vocab-llama-bpe.gguf)")
    p.add_argument("--random", required=True, metavar="CONFIG",
                   help="write random weights of train.py's config CONFIG (tiny, draft, target)")
    p.add_argument("--untied", action="store_true", help="write an output.weight of its own")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.random not in CONFIGS:
        p.error(f"--random {a.random!r}: configs are {', '.join(CONFIGS)}")
    config = CONFIGS[a.random]
    n_vocab = len(next(v for k, v, _, _ in read_tokenizer(a.vocab) if k == "tokenizer.ggml.tokens"))
    write_gguf(a.out, random_state(config, n_vocab, a.seed, tied=not a.untied), config, a.vocab,
               name=f"random {a.random}")
    print(f"wrote {a.out}: random llama '{a.random}' ({config}), vocabulary {n_vocab}, f16")


if __name__ == "__main__":
    main()
