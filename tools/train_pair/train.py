#!/usr/bin/env python3
"""Train a small llama (target or draft, configs.py) on make_corpus.py's tokens and export it to
GGUF f16 (export_gguf.py).

    train.py --config target --data CORPUS_DIR --vocab VOCAB.gguf --out OUT_DIR --minutes 6 --epochs 8 [--compile]
    train.py --config draft  --data CORPUS_DIR --vocab VOCAB.gguf --out OUT_DIR --minutes 3 --epochs 8 [--compile]
    train.py --tiny --vocab VOCAB.gguf --out OUT_DIR [--llmrt-generate PATH]   (2 steps: a smoke test)

The model is llama.cpp's LLM_ARCH_LLAMA exactly, so the exported file needs no conversion:
  - RMSNorm before attention and before the FFN, and before the output (eps from the config);
  - rope in llama.cpp's NORMAL mode: each head's dimensions (2i, 2i+1) rotate together by
    pos * base^(-2i/head_dim). (A Hugging Face llama rotates (i, i + head_dim/2), which is why
    convert_hf_to_gguf.py permutes its q/k rows; ours are written as they are.)
  - grouped-query attention: query head h reads kv head h // (n_head / n_head_kv), the scale
    1/sqrt(head_dim), causal;
  - SwiGLU: w_down(silu(w_gate x) * w_up x);
  - the output tied to the token embedding (no output.weight: llama.cpp and llmrt reuse
    token_embd.weight).

Training: AdamW (betas 0.9/0.95, weight decay 0.1 on matrices, none on norms), linear warmup then
cosine decay to 10% of the peak learning rate, bf16 autocast on CUDA, gradient clipping at 1.0,
random windows of seq_len + 1 tokens from train.bin. With --minutes the schedule runs on elapsed
time (progress = elapsed / budget) so the run ends on time whatever the GPU; otherwise on --steps.
--epochs caps the tokens seen (passes over train.bin): progress is the larger of the two, so the
run ends at whichever limit comes first. A step of --batch-size windows runs as micro-batches of
--micro-batch windows whose gradients add up: the 128256-wide logits of 32 x 1024 tokens alone
take some 60 GB in f32 with their gradients, more than an 80 GB GPU holds next to the activations.
Held-out loss on val_code.bin and val_prose.bin is printed every --eval-every steps and at the end;
the weights exported are those of the evaluation with the lowest mean held-out loss (the corpus
is small, so a long run can overfit), and OUT_DIR/CONFIG-train.json records the run.

After export, --llmrt-generate PATH checks the file: llmrt's greedy continuation of a held-out
prompt (on the CPU) against this model's own (in float32); most tokens should agree (f16 weights
can flip a near tie), and a wrong rope or head layout gives almost none. A barely trained model
(--tiny's 2 steps) only repeats the prompt's last token whatever the layout, so --tiny also checks
a random tiny model with large weights, whose continuation depends on the rope and the heads:
train.py exits with status 3 unless llmrt agrees with it on at least 12 of 16 tokens.

Needs torch (any CUDA build; a CPU works for --tiny), numpy and gguf.
"""
import argparse
import dataclasses
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS, n_params  # noqa: E402
from export_gguf import write_gguf  # noqa: E402

# Per-config training defaults (peak learning rate; the smaller model takes a larger one).
# micro_batch 8 (8192 tokens a pass) keeps the logits' share of GPU memory near 20 GB (see above).
DEFAULTS = {
    "target": dict(lr=6e-4, batch_size=32, micro_batch=8, seq_len=1024),
    "draft": dict(lr=1.5e-3, batch_size=32, micro_batch=8, seq_len=1024),
    "draft2": dict(lr=1e-3, batch_size=32, micro_batch=8, seq_len=1024),
    "tiny": dict(lr=1e-3, batch_size=2, micro_batch=1, seq_len=64),
}


@dataclasses.dataclass
class Config:
    n_embd: int = 0
    n_layer: int = 0
    n_head: int = 0
    n_head_kv: int = 0
    n_ff: int = 0
    n_ctx: int = 0
    rope_base: float = 10000.0
    rms_eps: float = 1e-5
    n_vocab: int = 128256


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        x32 = x.float()  # llama.cpp normalizes in f32
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_tables(head_dim, n_ctx, base, device):
    """cos and sin of pos * base^(-2i/head_dim), (n_ctx, head_dim/2)."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)
    angles = torch.outer(torch.arange(n_ctx, dtype=torch.float32, device=device), inv)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    """llama.cpp's NORMAL rope: x (B, T, H, D); the pairs (x[2i], x[2i+1]) rotate by angle i."""
    b, t, h, d = x.shape
    xp = x.float().view(b, t, h, d // 2, 2)
    x0, x1 = xp[..., 0], xp[..., 1]
    c, s = cos[:t].view(1, t, 1, d // 2), sin[:t].view(1, t, 1, d // 2)
    out = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1)
    return out.view(b, t, h, d).type_as(x)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        hd = c.n_embd // c.n_head
        self.attn_norm = RMSNorm(c.n_embd, c.rms_eps)
        self.wq = nn.Linear(c.n_embd, c.n_head * hd, bias=False)
        self.wk = nn.Linear(c.n_embd, c.n_head_kv * hd, bias=False)
        self.wv = nn.Linear(c.n_embd, c.n_head_kv * hd, bias=False)
        self.wo = nn.Linear(c.n_head * hd, c.n_embd, bias=False)
        self.ffn_norm = RMSNorm(c.n_embd, c.rms_eps)
        self.w_gate = nn.Linear(c.n_embd, c.n_ff, bias=False)
        self.w_up = nn.Linear(c.n_embd, c.n_ff, bias=False)
        self.w_down = nn.Linear(c.n_ff, c.n_embd, bias=False)

    def forward(self, x, cos, sin):
        c = self.c
        b, t, _ = x.shape
        hd = c.n_embd // c.n_head
        h = self.attn_norm(x)
        # Rows of wq are heads one after another (head h: rows h*hd .. h*hd + hd - 1), as ggml reshapes Q.
        q = apply_rope(self.wq(h).view(b, t, c.n_head, hd), cos, sin)
        k = apply_rope(self.wk(h).view(b, t, c.n_head_kv, hd), cos, sin)
        v = self.wv(h).view(b, t, c.n_head_kv, hd)
        rep = c.n_head // c.n_head_kv  # query head h reads kv head h // rep
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, t, c.n_head * hd))
        h = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Llama(nn.Module):
    """State-dict names are export_gguf.NAMES': tok_embd, layers.N.{attn_norm,wq,wk,wv,wo,ffn_norm,
    w_gate,w_up,w_down}, norm; no output.weight (tied)."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.tok_embd = nn.Embedding(c.n_vocab, c.n_embd)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.n_layer))
        self.norm = RMSNorm(c.n_embd, c.rms_eps)
        cos, sin = rope_tables(c.n_embd // c.n_head, c.n_ctx, c.rope_base, None)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                # GPT-2's scaled init: the two projections into the residual stream shrink with depth.
                std = 0.02 / math.sqrt(2 * c.n_layer) if name.endswith(("wo.weight", "w_down.weight")) else 0.02
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, ids):
        x = self.tok_embd(ids)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin)
        return self.norm(x) @ self.tok_embd.weight.t()  # tied output: logits = h · token_embd


class LossOf(nn.Module):
    """The mean next-token loss of a model: one module, so torch.compile fuses the f32 cast and the
    cross entropy into the output matmul's consumer instead of keeping f32 logits alive."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        logits = self.model(x)
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))


def batches(data, batch_size, seq_len, device, gen):
    """Random windows of seq_len + 1 tokens from a uint32 memmap: (inputs, targets)."""
    starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,), generator=gen).tolist()
    w = torch.from_numpy(np.stack([data[s:s + seq_len + 1].astype(np.int64) for s in starts]))
    w = w.to(device, non_blocking=True)
    return w[:, :-1], w[:, 1:]


def lr_at(progress, peak, warmup):
    if progress < warmup:
        return peak * progress / warmup
    p = min(1.0, (progress - warmup) / max(1e-9, 1.0 - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * p)))


@torch.no_grad()
def held_out_loss(loss_of, data, a, device, autocast):
    """Mean loss over 2 * batch_size fixed windows of `data`, micro_batch windows at a time."""
    if data is None or len(data) < a.seq_len + 2:
        return float("nan")
    gen = torch.Generator().manual_seed(1234)  # the same windows at every evaluation
    loss_of.eval()
    n = max(1, 2 * a.batch_size // a.micro_batch)
    total = 0.0
    for _ in range(n):
        x, y = batches(data, a.micro_batch, a.seq_len, device, gen)
        with autocast():
            total += loss_of(x, y).item()
    loss_of.train()
    return total / n


@torch.no_grad()
def greedy(model, prompt, n):
    ids = torch.tensor([prompt], dtype=torch.long, device=model.cos.device)
    out = []
    for _ in range(n):
        nxt = int(model(ids)[0, -1].float().argmax())
        out.append(nxt)
        ids = torch.cat([ids, torch.tensor([[nxt]], device=ids.device)], dim=1)
    return out


def check_with_llmrt(cfg, state, gguf_path, llmrt_generate, prompt, n=16):
    """How many of llmrt's first greedy ids for `prompt` (CPU, the f16 file) equal those of the
    torch model with weights `state` (float32 on the CPU)."""
    cpu = Llama(cfg)
    cpu.load_state_dict({k: v.float().cpu() for k, v in state.items()})
    cpu.eval()
    ours = greedy(cpu, prompt, n)
    r = subprocess.run([llmrt_generate, str(gguf_path), "--backend", "cpu", "--prompt", ",".join(map(str, prompt)),
                        "-n", str(n)], capture_output=True, text=True, check=False)
    line = next((x for x in r.stdout.splitlines() if x.startswith("output:")), None)
    if r.returncode != 0 or line is None:
        raise SystemExit(f"{llmrt_generate} failed: {r.stderr.strip() or r.stdout.strip()}")
    theirs = [int(x) for x in line.split()[1:]]
    # llmrt stops early at an end-of-generation token; the ids it gave are compared.
    same = next((i for i, (p, q) in enumerate(zip(ours, theirs)) if p != q), min(len(ours), len(theirs)))
    print(f"check {Path(gguf_path).name}: torch greedy {ours}\n       llmrt greedy {theirs}\n"
          f"       first {same} of {n} agree", flush=True)
    return same


def layout_check(cfg, vocab, out, llmrt_generate, seed=0):
    """Export a random model whose greedy output depends on the rope and the head layout and check
    llmrt agrees. Weights 10x the init (q and k 50x): attention scores of several units make every
    position and head count, and the blocks outweigh the tied embedding (with the init's small
    weights the model just repeats its input's last token, which any layout does)."""
    torch.manual_seed(seed)
    m = Llama(cfg)
    with torch.no_grad():
        for name, w in m.named_parameters():
            if w.dim() == 2 and not name.startswith("tok_embd"):
                w.mul_(50.0 if name.endswith(("wq.weight", "wk.weight")) else 10.0)
    path = Path(out) / "tiny-layout-f16.gguf"
    state = m.state_dict()
    write_gguf(path, {k: v.numpy() for k, v in state.items()}, dataclasses.asdict(cfg), vocab, name="layout check")
    prompt = [128000] + np.random.default_rng(seed + 1).integers(1000, 30000, 31).tolist()
    same = check_with_llmrt(cfg, state, path, llmrt_generate, prompt)
    if same < 12:
        print(f"LAYOUT CHECK FAILED: llmrt agrees on {same} of 16 tokens of a model whose output depends on the "
              "rope and head layout (export_gguf.py and train.py's Block disagree with llmrt)", flush=True)
        sys.exit(3)
    return same


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", choices=[k for k in CONFIGS if k != "tiny"])
    p.add_argument("--tiny", "--dry-run", action="store_true",
                   help="the tiny config, 2 steps unless --steps (random tokens unless --data): a smoke test in seconds")
    p.add_argument("--data", help="make_corpus.py's folder (train.bin, val_code.bin, val_prose.bin)")
    p.add_argument("--vocab", required=True, help="the vocabulary GGUF the corpus was tokenized with")
    p.add_argument("--out", required=True, help="folder for CONFIG-f16.gguf and CONFIG-train.json")
    p.add_argument("--minutes", type=float, help="train for this long (the schedule follows elapsed time)")
    p.add_argument("--steps", type=int, help="steps when --minutes is not given (default 2000; --tiny: 2)")
    p.add_argument("--epochs", type=float, help="stop after this many passes over train.bin if that comes first")
    p.add_argument("--lr", type=float)
    p.add_argument("--batch-size", type=int, help="windows per optimizer step")
    p.add_argument("--micro-batch", type=int, help="windows per forward/backward pass (divides --batch-size)")
    p.add_argument("--seq-len", type=int)
    p.add_argument("--warmup", type=float, default=0.03, help="warmup fraction of the run (default 0.03)")
    p.add_argument("--eval-every", type=int, default=200, help="steps between held-out evaluations (0: at the end)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (about a minute, then faster)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--llmrt-generate", help="the llmrt-generate program: check the exported file's greedy output")
    a = p.parse_args()
    if a.tiny:
        name, a.steps, a.minutes, a.epochs = "tiny", a.steps or 2, None, None
    elif a.config:
        name = a.config
        if not a.data:
            p.error("--data is needed (make_corpus.py's folder); --tiny runs without it")
    else:
        p.error("give --config target|draft|draft2, or --tiny")
    a.steps = a.steps or 2000
    for k, v in DEFAULTS[name].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.micro_batch = min(a.micro_batch, a.batch_size)
    if a.batch_size % a.micro_batch:
        p.error(f"--micro-batch {a.micro_batch} does not divide --batch-size {a.batch_size}")
    n_micro = a.batch_size // a.micro_batch

    torch.manual_seed(a.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.set_float32_matmul_precision("high")  # TF32 for what autocast leaves in f32

    def autocast():
        return torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda" else torch.autocast("cpu", enabled=False)

    cfg = Config(**CONFIGS[name])
    if a.seq_len > cfg.n_ctx:
        p.error(f"--seq-len {a.seq_len} is longer than the {name} config's n_ctx {cfg.n_ctx}")
    if a.data:
        d = Path(a.data)
        train = np.memmap(d / "train.bin", dtype="<u4", mode="r")
        val = {k: np.memmap(d / f"val_{k}.bin", dtype="<u4", mode="r") for k in ("code", "prose")}
        if int(train.max()) >= cfg.n_vocab:
            raise SystemExit(f"{d / 'train.bin'} holds token {int(train.max())}, outside the {cfg.n_vocab}-token vocabulary")
    else:
        rng = np.random.default_rng(a.seed)
        train = rng.integers(0, cfg.n_vocab, 4 * a.batch_size * (a.seq_len + 1)).astype(np.uint32)
        val = {"code": train, "prose": train}

    model = Llama(cfg).to(device)
    loss_of = LossOf(model)
    limits = [f"{a.minutes} minutes" if a.minutes else f"{a.steps} steps"] + ([f"{a.epochs} epochs"] if a.epochs else [])
    print(f"{name}: {dataclasses.asdict(cfg)}; {n_params(CONFIGS[name]) / 1e6:.1f}M weights; device {device}"
          f"{' (' + torch.cuda.get_device_name() + ')' if device == 'cuda' else ''}; batch {a.batch_size} x {a.seq_len} "
          f"({n_micro} passes of {a.micro_batch}); peak lr {a.lr}; train.bin {len(train):,} tokens; "
          f"until {' or '.join(limits)}", flush=True)
    decay = [p_ for n_, p_ in model.named_parameters() if p_.dim() >= 2]
    no_decay = [p_ for n_, p_ in model.named_parameters() if p_.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, fused=device == "cuda")
    step_fn = torch.compile(loss_of) if a.compile else loss_of
    gen = torch.Generator().manual_seed(a.seed)

    best, last = {"loss": float("inf")}, {"step": -1}

    def evaluate(step):
        """Held-out losses now; keeps a CPU copy of the weights when their mean is the lowest yet."""
        losses = {k: held_out_loss(loss_of, val[k], a, device, autocast) for k in ("code", "prose")}
        mean = (losses["code"] + losses["prose"]) / 2
        print(f"  held-out loss at step {step}: code {losses['code']:.4f}, prose {losses['prose']:.4f}", flush=True)
        last.update(step=step, losses=losses)
        if not mean >= best["loss"]:  # also true for the first evaluation when a loss is nan
            best.update(loss=mean, step=step, losses=losses,
                        state={k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()})
        return losses

    def micro_step(fn, x, y):
        """Forward and backward of one micro-batch (its gradients add to the step's); its loss share."""
        with autocast():
            loss = fn(x, y) / n_micro
        loss.backward()  # outside autocast, as torch recommends
        return loss.detach()

    start, step, tokens = time.time(), 0, 0
    rate = {"time": start, "tokens": 0, "last": 0.0}
    while True:
        elapsed = time.time() - start
        progress = elapsed / (a.minutes * 60) if a.minutes else step / a.steps
        if a.epochs:
            progress = max(progress, tokens / (a.epochs * len(train)))
        if progress >= 1.0:
            break
        lr = lr_at(progress, a.lr, a.warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        try:
            loss_sum = sum(micro_step(step_fn, *batches(train, a.micro_batch, a.seq_len, device, gen))
                           for _ in range(n_micro))
        except Exception as e:  # noqa: BLE001  (a compiler failure must not cost the GPU run)
            if step_fn is loss_of or step > 0 or isinstance(e, torch.cuda.OutOfMemoryError):
                raise
            print(f"torch.compile failed ({type(e).__name__}: {str(e)[:300]}); training without it", flush=True)
            step_fn = loss_of
            continue  # the first step again, eagerly
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += a.batch_size * a.seq_len
        if step % 20 == 0 or step <= 2:
            # tokens/s since the last line: the run's mean includes the compile and the evaluations
            loss_now = float(loss_sum)  # waits for the GPU, so the clock below sees the work done
            now = time.time()
            rate["last"] = (tokens - rate["tokens"]) / (now - rate["time"])
            rate.update(time=now, tokens=tokens)
            mem = f"  {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB peak" if device == "cuda" else ""
            print(f"step {step:6d}  loss {loss_now:.4f}  lr {lr:.2e}  {rate['last']:,.0f} tokens/s  "
                  f"epoch {tokens / len(train):.2f}{mem}", flush=True)
        if a.eval_every and step % a.eval_every == 0:
            evaluate(step)
    seconds = time.time() - start
    final = last["losses"] if last["step"] == step else evaluate(step)
    print(f"trained {step} steps, {tokens:,} tokens ({tokens / len(train):.2f} epochs) in {seconds:.0f} s "
          f"({tokens / seconds:,.0f} tokens/s); exporting the weights of step {best['step']} "
          f"(held-out code {best['losses']['code']:.4f}, prose {best['losses']['prose']:.4f})", flush=True)

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-f16.gguf"
    write_gguf(path, {k: v.float().numpy() for k, v in best["state"].items()}, dataclasses.asdict(cfg), a.vocab,
               name=f"llmrt train_pair {name}")
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)", flush=True)
    record = dict(config=name, shape=dataclasses.asdict(cfg), device=device if device == "cpu" else
                  torch.cuda.get_device_name(), steps=step, tokens=tokens, epochs=tokens / len(train),
                  seconds=round(seconds, 1), tokens_per_s=round(tokens / seconds), tokens_per_s_last=round(rate["last"]), batch_size=a.batch_size,
                  micro_batch=a.micro_batch, seq_len=a.seq_len, lr=a.lr, compiled=step_fn is not loss_of,
                  final_loss=final, exported_step=best["step"], exported_loss=best["losses"], file=path.name,
                  peak_gib=round(torch.cuda.max_memory_allocated() / 2**30, 1) if device == "cuda" else None)
    if a.llmrt_generate:
        prompt_source = val["code"] if len(val["code"]) >= 32 else train
        record["llmrt_agree"] = check_with_llmrt(cfg, best["state"], path, a.llmrt_generate,
                                                 [int(t) for t in prompt_source[:32]])
        if a.tiny:
            record["layout_agree"] = layout_check(cfg, a.vocab, out, a.llmrt_generate, a.seed)
    (out / f"{name}-train.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
