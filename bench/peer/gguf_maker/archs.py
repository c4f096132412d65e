"""The architectures make_llama_gguf.py writes: their sizes, metadata keys and tensors, as
llama.cpp's loader expects them (src/llama-arch.cpp for the names, src/models/<arch>.cpp for
which keys and tensors each one reads and their shapes). A file with a tensor the loader does not
ask for fails to load too ("wrong number of tensors"), so each list is exact.

Shapes below are numpy's (slowest dimension first): a matrix of `rows` outputs over a row of `k`
inputs is (rows, k), ggml's {k, rows}; a stack of experts is (n_expert, rows, k).
"""
import math
import zlib
from dataclasses import dataclass

import numpy as np

import gguf
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT

from .blocks import random_blocks


@dataclass(frozen=True)
class Size:
    n_embd: int
    n_layer: int
    n_ff: int            # feed_forward_length (the dense FFN's; unused by gpt-oss, written as n_ff_exp)
    n_head: int
    n_head_kv: int
    head_dim: int = 0    # 0: n_embd // n_head
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0    # expert_feed_forward_length
    sliding_window: int = 0
    tied: bool = False   # no output.weight: llama.cpp (and llmrt) reuse token_embd.weight
    about: str = ""

    @property
    def head(self):
        return self.head_dim or self.n_embd // self.n_head


@dataclass(frozen=True)
class Arch:
    name: str               # general.architecture, the prefix of every model key
    sizes: dict
    context_length: int
    rope_freq_base: float
    rms_eps: float
    qkv_bias: bool = False   # attn_q/k/v.bias
    qk_norm: bool = False    # attn_q_norm, attn_k_norm (RMS norm over each head, head_dim f32)
    head_keys: bool = False  # attention.key_length and value_length
    moe: str = ""            # "" (dense FFN), "qwen3moe" or "gpt-oss"


# Where each fact is from, in llama.cpp (the .peer copy) unless said:
# - key and tensor names: src/llama-arch.cpp (LLM_KV_NAMES, LLM_TENSOR_NAMES), the same as
#   gguf-py/gguf/constants.py; general.architecture strings "qwen2", "qwen3", "qwen3moe" and
#   "gpt-oss" (LLM_ARCH_OPENAI_MOE).
# - which keys and tensors each architecture reads, their shapes and which are optional:
#   src/llama-model.cpp (llama_model_base::load_hparams: the keys every architecture shares;
#   create_tensor_qkv: Q/K/V biases are optional to the loader, qwen2's are written because the
#   models have them) and src/models/{llama,qwen2,qwen3,qwen3moe,openai-moe}.cpp
#   (load_arch_hparams, load_arch_tensors). gpt-oss requires attention.sliding_window,
#   expert_feed_forward_length, attn_sinks, post_attention_norm, attn_output.bias, the router's
#   and the experts' biases, and output.weight (no tying).
# - NeoX rope for qwen2, qwen3, qwen3moe and gpt-oss: llama_model_rope_type (llama-model.cpp),
#   from the architecture, not a key. gpt-oss's sliding layers: load_swa_pattern(ml, 2) and
#   llama_hparams::set_swa_pattern (src/llama-hparams.cpp): layer i slides when i % 2 == 0.
# - the f32 router: src/llama-quant.cpp does not quantize ffn_gate_inp.weight.
# - sizes: the models' Hugging Face config.json values (hidden_size, num_hidden_layers,
#   intermediate_size / moe_intermediate_size, heads, kv heads, head_dim, experts, rope_theta,
#   rms_norm_eps, max_position_embeddings, tie_word_embeddings, sliding_window, rope_scaling),
#   cross-checked by loading each file in llama.cpp, whose type names and parameter counts
#   (with this 128256-token vocabulary, which is smaller than the models' own) agree: qwen2
#   1.5b 1.5B (1.51 B), 7b 7B (7.44 B); qwen3 0.6b 0.6B (571.8 M), 8b 8B (8.00 B); qwen3moe
#   30b-a3b 30B.A3B (30.44 B); gpt-oss 20b 20B (20.50 B).
ARCHS = {
    # Llama 3 (the maker's original files, unchanged).
    "llama": Arch("llama", {
        "tiny": Size(256, 2, 512, 4, 2, about="a smoke test"),
        "1b": Size(2048, 16, 8192, 32, 8, about="Llama 3.2 1B's body, untied output"),
        "8b": Size(4096, 32, 14336, 32, 8, about="Llama 3 8B"),
        "70b": Size(8192, 80, 28672, 64, 8, about="Llama 3 70B (about 40 GiB at q4_K)"),
    }, context_length=8192, rope_freq_base=500000.0, rms_eps=1e-5),
    # Qwen2 / Qwen2.5: Q/K/V biases, NeoX rope (llama.cpp's rope type for qwen2, not a key).
    "qwen2": Arch("qwen2", {
        "tiny": Size(256, 2, 512, 4, 2, tied=True, about="a smoke test"),
        "1.5b": Size(1536, 28, 8960, 12, 2, tied=True, about="Qwen2.5-1.5B"),
        "7b": Size(3584, 28, 18944, 28, 4, about="Qwen2.5-7B"),
    }, context_length=32768, rope_freq_base=1000000.0, rms_eps=1e-6, qkv_bias=True),
    # Qwen3: per-head RMS norm of Q and K, head_dim 128 whatever n_embd / n_head is, no biases.
    "qwen3": Arch("qwen3", {
        "tiny": Size(256, 2, 512, 4, 2, head_dim=128, tied=True, about="a smoke test, head_dim != n_embd/n_head"),
        "0.6b": Size(1024, 28, 3072, 16, 8, head_dim=128, tied=True, about="Qwen3-0.6B"),
        "8b": Size(4096, 36, 12288, 32, 8, head_dim=128, about="Qwen3-8B"),
    }, context_length=40960, rope_freq_base=1000000.0, rms_eps=1e-6, qk_norm=True, head_keys=True),
    # Qwen3 MoE: qwen3's attention, every FFN a router over experts (softmax, top-k renormalized).
    "qwen3moe": Arch("qwen3moe", {
        "tiny": Size(256, 2, 512, 4, 2, head_dim=128, n_expert=8, n_expert_used=2, n_ff_exp=256,
                     about="a smoke test"),
        "30b-a3b": Size(2048, 48, 6144, 32, 4, head_dim=128, n_expert=128, n_expert_used=8, n_ff_exp=768,
                        about="Qwen3-30B-A3B"),
    }, context_length=40960, rope_freq_base=1000000.0, rms_eps=1e-6, qk_norm=True, head_keys=True,
        moe="qwen3moe"),
    # gpt-oss: MoE with biases everywhere, attention sinks, sliding-window attention on even
    # layers (llama.cpp's fixed pattern for gpt-oss: layer i slides if i % 2 == 0), YaRN rope.
    "gpt-oss": Arch("gpt-oss", {
        "tiny": Size(256, 2, 256, 8, 2, head_dim=64, n_expert=4, n_expert_used=2, n_ff_exp=256,
                     sliding_window=16, about="a smoke test, window 16"),
        "20b": Size(2880, 24, 2880, 64, 8, head_dim=64, n_expert=32, n_expert_used=4, n_ff_exp=2880,
                    sliding_window=128, about="gpt-oss-20b"),
    }, context_length=131072, rope_freq_base=150000.0, rms_eps=1e-5, qkv_bias=True, head_keys=True,
        moe="gpt-oss"),
}

# gpt-oss's YaRN: rope.scaling.factor 32 over an original context of 4096 (131072 = 32 * 4096).
GPT_OSS_YARN_FACTOR = 32.0
GPT_OSS_YARN_ORIGINAL_CONTEXT = 4096


def metadata(arch, size):
    """(key, value, type) of every model key but the tokenizer's, general.* and vocab_size."""
    a, s = arch.name, size
    keys = [
        (f"{a}.context_length", arch.context_length, VT.UINT32),
        (f"{a}.embedding_length", s.n_embd, VT.UINT32),
        (f"{a}.block_count", s.n_layer, VT.UINT32),
        (f"{a}.feed_forward_length", s.n_ff, VT.UINT32),
        (f"{a}.attention.head_count", s.n_head, VT.UINT32),
        (f"{a}.attention.head_count_kv", s.n_head_kv, VT.UINT32),
        (f"{a}.rope.dimension_count", s.head, VT.UINT32),
        (f"{a}.rope.freq_base", arch.rope_freq_base, VT.FLOAT32),
        (f"{a}.attention.layer_norm_rms_epsilon", arch.rms_eps, VT.FLOAT32),
    ]
    if arch.head_keys:
        keys += [(f"{a}.attention.key_length", s.head, VT.UINT32),
                 (f"{a}.attention.value_length", s.head, VT.UINT32)]
    if arch.moe:
        keys += [(f"{a}.expert_count", s.n_expert, VT.UINT32),
                 (f"{a}.expert_used_count", s.n_expert_used, VT.UINT32),
                 (f"{a}.expert_feed_forward_length", s.n_ff_exp, VT.UINT32)]
    if arch.moe == "gpt-oss":
        keys += [(f"{a}.attention.sliding_window", s.sliding_window, VT.UINT32),
                 (f"{a}.rope.scaling.type", "yarn", VT.STRING),
                 (f"{a}.rope.scaling.factor", GPT_OSS_YARN_FACTOR, VT.FLOAT32),
                 (f"{a}.rope.scaling.original_context_length", GPT_OSS_YARN_ORIGINAL_CONTEXT, VT.UINT32)]
    return keys


def seed_of(seed, name):
    return [seed, zlib.crc32(name.encode())]  # the same bytes whatever else the file holds


class Quantized:
    """A (rows, k) matrix, or an (n_expert, rows, k) stack, of one quantized type, made when written."""

    def __init__(self, name, shape, qtype, gain, seed):
        block, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        k = shape[-1]
        if k % block:
            raise SystemExit(f"{name}: row length {k} is not a multiple of {qtype.name}'s block of {block}"
                             " (pick a type with 32-weight blocks)")
        self.name, self.shape, self.qtype = name, tuple(shape), qtype
        self.k, self.block_bytes = k, block_bytes
        self.sigma = gain / math.sqrt(k)
        self.seed = seed_of(seed, name)

    def byte_shape(self):
        return (*self.shape[:-1], self.k // gguf.GGML_QUANT_SIZES[self.qtype][0] * self.block_bytes)

    def nbytes(self):
        return math.prod(self.byte_shape())

    def data(self):
        rng = np.random.default_rng(self.seed)
        n_blocks = self.nbytes() // self.block_bytes
        return random_blocks(self.qtype, n_blocks, self.sigma, rng).reshape(self.byte_shape())


class Float32:
    """An f32 tensor: ones (norm weights) or normal(0, std) (biases, sinks, a router)."""

    def __init__(self, name, shape, std=None, seed=0):
        self.name, self.shape, self.std, self.seed = name, tuple(shape), std, seed_of(seed, name)
        self.qtype = QT.F32

    def nbytes(self):
        return 4 * math.prod(self.shape)

    def data(self):
        if self.std is None:
            return np.ones(self.shape, dtype=np.float32)
        return (np.random.default_rng(self.seed).standard_normal(self.shape) * self.std).astype(np.float32)


def tensors(arch, size, qtype, output_qtype, expert_qtype, n_vocab, gain, seed, bias_std=0.02, sink_std=0.02):
    """Every tensor of the file, in order: Quantized or Float32 descriptions.

    output_qtype None on a tied size leaves output.weight out (the output reuses token_embd)."""
    s = size
    n_q, n_kv = s.n_head * s.head, s.n_head_kv * s.head

    def q(name, shape, t=qtype):
        return Quantized(name, shape, t, gain, seed)

    def ones(name, n):
        return Float32(name, (n,))

    def normal(name, shape, std):
        return Float32(name, shape, std, seed)

    yield q("token_embd.weight", (n_vocab, s.n_embd))
    for i in range(s.n_layer):
        blk = f"blk.{i}."
        yield ones(blk + "attn_norm.weight", s.n_embd)
        for name, rows in (("attn_q", n_q), ("attn_k", n_kv), ("attn_v", n_kv)):
            yield q(blk + name + ".weight", (rows, s.n_embd))
            if arch.qkv_bias:
                yield normal(blk + name + ".bias", (rows,), bias_std)
        if arch.qk_norm:
            yield ones(blk + "attn_q_norm.weight", s.head)
            yield ones(blk + "attn_k_norm.weight", s.head)
        yield q(blk + "attn_output.weight", (s.n_embd, n_q))
        if arch.moe == "gpt-oss":
            yield normal(blk + "attn_output.bias", (s.n_embd,), bias_std)
            yield normal(blk + "attn_sinks.weight", (s.n_head,), sink_std)
            yield ones(blk + "post_attention_norm.weight", s.n_embd)  # the FFN's input norm
        else:
            yield ones(blk + "ffn_norm.weight", s.n_embd)
        if not arch.moe:
            yield q(blk + "ffn_gate.weight", (s.n_ff, s.n_embd))
            yield q(blk + "ffn_up.weight", (s.n_ff, s.n_embd))
            yield q(blk + "ffn_down.weight", (s.n_embd, s.n_ff))
            continue
        # The router stays f32, as llama-quantize leaves every ffn_gate_inp.weight.
        yield normal(blk + "ffn_gate_inp.weight", (s.n_expert, s.n_embd), gain / math.sqrt(s.n_embd))
        if arch.moe == "gpt-oss":
            yield normal(blk + "ffn_gate_inp.bias", (s.n_expert,), bias_std)
        for name, rows, k in (("ffn_gate_exps", s.n_ff_exp, s.n_embd), ("ffn_up_exps", s.n_ff_exp, s.n_embd),
                              ("ffn_down_exps", s.n_embd, s.n_ff_exp)):
            yield q(blk + name + ".weight", (s.n_expert, rows, k), expert_qtype)
            if arch.moe == "gpt-oss":
                yield normal(blk + name + ".bias", (s.n_expert, rows), bias_std)
    yield ones("output_norm.weight", s.n_embd)
    if output_qtype is not None:
        yield q("output.weight", (n_vocab, s.n_embd), output_qtype)
