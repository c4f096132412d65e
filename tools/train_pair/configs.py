"""The model sizes train.py trains and export_gguf.py --random writes (plain dicts: no torch).

With the Llama 3 vocabulary (128256 tokens) the token embedding is n_vocab * n_embd weights
(98.5M at n_embd 768), so both models tie the output to it: the output matrix would double
that. Every row length (n_embd, n_ff) is a multiple of 256, so q4_K quantizes every matrix.

    target  768 wide, 12 layers, 12 heads (4 kv, head_dim 64), n_ff 2048: 174.0M weights
            (98.5M of them the embedding), 174M read per decoded token
    draft   256 wide,  4 layers,  4 heads (2 kv, head_dim 64), n_ff  768:  36.0M weights
            (32.8M the embedding): 4.8x fewer weights read per token than the target
    draft2  512 wide,  2 layers,  8 heads (2 kv, head_dim 64), n_ff 1536: 71.7M weights (65.7M the
            embedding). A draft model's forward is bound by its kernels' latency, about 8 launches
            a layer, not by its bytes (on an H200 the 4-layer draft costs 0.15 ms a token, 0.43x
            the 12-layer target's), so half the layers at twice the width: a cheaper forward
            that may guess as well (the bench says)
    tiny    256 wide,  2 layers, n_ff 512: for --tiny smoke tests and export tests (seconds on a CPU)

A draft 10x smaller than the target in weights would need n_embd 128 (17.6M), whose rows do
not fit q4_K's 256-weight blocks; the embedding sets that floor, and decoding time follows the
weights read per token, which the 4.8x above states.
"""

COMMON = dict(n_ctx=1024, rope_base=10000.0, rms_eps=1e-5)

CONFIGS = {
    "target": dict(n_embd=768, n_layer=12, n_head=12, n_head_kv=4, n_ff=2048, **COMMON),
    "draft": dict(n_embd=256, n_layer=4, n_head=4, n_head_kv=2, n_ff=768, **COMMON),
    "draft2": dict(n_embd=512, n_layer=2, n_head=8, n_head_kv=2, n_ff=1536, **COMMON),
    "tiny": dict(n_embd=256, n_layer=2, n_head=4, n_head_kv=2, n_ff=512, n_ctx=128, rope_base=10000.0, rms_eps=1e-5),
}


def n_params(c, n_vocab=128256, tied=True):
    """Weights of config c (norms included)."""
    hd = c["n_embd"] // c["n_head"]
    layer = (c["n_embd"] * (2 * c["n_head"] * hd + 2 * c["n_head_kv"] * hd) + 3 * c["n_embd"] * c["n_ff"]
             + 2 * c["n_embd"])
    return n_vocab * c["n_embd"] * (1 if tied else 2) + c["n_layer"] * layer + c["n_embd"]
