#!/usr/bin/env python3
"""Build the training corpus from what any Linux machine with Python holds, tokenized with the
Llama 3 vocabulary by llmrt's own tokenizer (llmrt-tokenize).

    make_corpus.py OUT_DIR --vocab VOCAB.gguf --tokenizer LLMRT_TOKENIZE [--max-mb N] [--jobs N]

Documents (README.md in this folder says the same):
  code   every *.py file under the running Python's standard library (sysconfig "stdlib"),
         outside site-packages, test/, tests/ and idlelib/ folders: the source as it is.
  prose  from every package installed for the running Python (sysconfig "purelib" and
         "platlib", the site-packages folders): each dist-info METADATA file's long description
         (the package's README, as PyPI shows it), and the module, class and function
         docstrings (ast.get_docstring) of its *.py files, those of one file joined into one
         document, docstrings shorter than 200 characters left out.
A document that is not UTF-8, is shorter than 64 characters, or holds "<|" (which could spell one
of the vocabulary's special tokens, see below) is skipped and counted.

Each document is tokenized with a leading <|begin_of_text|> (128000), as Llama 3 separates
documents. To start llmrt-tokenize once per batch rather than once per document, a batch is
joined with "<|begin_of_text|>" and tokenized with --special, which turns each such text into the
token (hence the "<|" rule above).

Every document goes to the held-out split when crc32(its path) % 1000 < --held-out-permille
(default 20, 2%), so the split does not depend on the file order or the machine. Written:
  OUT_DIR/train.bin       uint32 token ids, code and prose documents shuffled by path hash
  OUT_DIR/val_code.bin    held-out code documents
  OUT_DIR/val_prose.bin   held-out prose documents
  OUT_DIR/manifest.json   Python version, folders read, document and token counts, skip counts
"""
import argparse
import ast
import concurrent.futures
import email.parser
import json
import os
import subprocess
import sys
import sysconfig
import zlib
from pathlib import Path

import numpy as np

BOS_TEXT = "<|begin_of_text|>"
BOS = 128000
MIN_CHARS = 64
MIN_DOCSTRING = 200
SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "idlelib", "__pycache__"}


def read_text(path):
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def code_documents(stdlib):
    for root, dirs, files in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for f in sorted(files):
            if f.endswith(".py"):
                p = Path(root) / f
                yield str(p), read_text(p)


def docstrings_of(source):
    """Module, class and function docstrings of a Python source of at least MIN_DOCSTRING characters."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            d = ast.get_docstring(node)
            if d and len(d) >= MIN_DOCSTRING:
                out.append(d)
    return out


def file_docstrings(path):
    """A .py file's docstrings as one document (None when it is not UTF-8)."""
    source = read_text(Path(path))
    return None if source is None else "\n\n".join(docstrings_of(source))


def prose_documents(site_dirs, pool, chunk=512):
    """METADATA long descriptions and per-file docstrings, in a fixed order. Parsing every installed
    .py file is the slow part (minutes for a big site-packages on one core), so `pool` (processes)
    parses `chunk` files at a time; chunks keep --max-mb from parsing files it will not use."""
    parser = email.parser.Parser()
    for site in site_dirs:
        for meta in sorted(Path(site).glob("*.dist-info/METADATA")):
            text = read_text(meta)
            payload = None if text is None else parser.parsestr(text).get_payload()
            yield str(meta), payload if isinstance(payload, str) else None  # a multipart one: skipped
        files = []
        for root, dirs, names in os.walk(site):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__",) and not d.endswith(".dist-info"))
            files += [str(Path(root) / f) for f in sorted(names) if f.endswith(".py")]
        for i in range(0, len(files), chunk):
            part = files[i:i + chunk]
            for path, text in zip(part, pool.map(file_docstrings, part, chunksize=16)):
                yield path + ":docstrings", text


def tokenize_batch(tokenizer, vocab, texts):
    """The token ids of each text (each starting with BOS), from one llmrt-tokenize run."""
    joined = BOS_TEXT + BOS_TEXT.join(texts)
    r = subprocess.run([tokenizer, vocab, "--no-bos", "--special"], input=joined.encode("utf-8"),
                       capture_output=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{tokenizer} failed: {r.stderr.decode(errors='replace').strip()}")
    ids = np.array([int(x) for x in r.stdout.decode().strip().split(",")], dtype=np.uint32)
    starts = np.flatnonzero(ids == BOS)
    if len(starts) != len(texts) or (len(ids) and ids[0] != BOS):
        raise SystemExit(f"{tokenizer}: {len(texts)} documents gave {len(starts)} <|begin_of_text|> tokens")
    return np.split(ids, starts[1:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--vocab", required=True, help="a GGUF file with the Llama 3 tokenizer (ggml-vocab-llama-bpe.gguf)")
    p.add_argument("--tokenizer", required=True, help="the llmrt-tokenize program (build/examples/tokenize/)")
    p.add_argument("--max-mb", type=float, default=0, help="stop each kind (code, prose) after this many MB of text "
                   "(0: no limit; a small value makes a quick test corpus)")
    p.add_argument("--held-out-permille", type=int, default=20)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="llmrt-tokenize processes at once")
    p.add_argument("--batch-mb", type=float, default=4.0, help="text per llmrt-tokenize run")
    a = p.parse_args()

    paths = sysconfig.get_paths()
    site_dirs = sorted({paths["purelib"], paths["platlib"]})
    skipped = {"not utf-8": 0, f"under {MIN_CHARS} characters": 0, "holds '<|'": 0}
    docs = []  # (kind, path, text)
    parsers = concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs))
    for kind, source in (("code", code_documents(paths["stdlib"])), ("prose", prose_documents(site_dirs, parsers))):
        total = 0
        for path, text in source:
            if text is None:
                skipped["not utf-8"] += 1
            elif len(text) < MIN_CHARS:
                skipped[f"under {MIN_CHARS} characters"] += 1
            elif "<|" in text:
                skipped["holds '<|'"] += 1
            else:
                docs.append((kind, path, text))
                total += len(text.encode("utf-8"))
                if a.max_mb and total >= a.max_mb * 1e6:
                    break
    parsers.shutdown(cancel_futures=True)  # a --max-mb stop leaves parses nobody reads
    if not docs:
        raise SystemExit("no documents found")
    # Shuffled by a hash of the path: code and prose interleave in train.bin, the same on every run.
    docs.sort(key=lambda d: zlib.crc32(d[1].encode()) ^ 0x5A5A5A5A)

    batches, batch, size = [], [], 0
    for d in docs:
        batch.append(d)
        size += len(d[2])
        if size >= a.batch_mb * 1e6:
            batches.append(batch)
            batch, size = [], 0
    if batch:
        batches.append(batch)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        tokenized = list(pool.map(lambda b: tokenize_batch(a.tokenizer, a.vocab, [d[2] for d in b]), batches))

    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    splits = {"train": [], "val_code": [], "val_prose": []}
    counts = {k: {"documents": 0, "tokens": 0, "bytes": 0} for k in
              ("train_code", "train_prose", "val_code", "val_prose")}
    for b, ids in zip(batches, tokenized):
        for (kind, path, text), t in zip(b, ids):
            held_out = zlib.crc32(path.encode()) % 1000 < a.held_out_permille
            split = f"val_{kind}" if held_out else "train"
            splits[split].append(t)
            c = counts[f"val_{kind}" if held_out else f"train_{kind}"]
            c["documents"] += 1
            c["tokens"] += len(t)
            c["bytes"] += len(text.encode("utf-8"))
    for name, arrays in splits.items():
        data = np.concatenate(arrays) if arrays else np.zeros(0, np.uint32)
        data.astype("<u4").tofile(out / f"{name}.bin")
    manifest = {"python": sys.version, "stdlib": paths["stdlib"], "site_packages": site_dirs,
                "vocab": Path(a.vocab).name, "bos": BOS, "max_mb": a.max_mb,
                "held_out_permille": a.held_out_permille, "counts": counts, "skipped": skipped}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for k, c in counts.items():
        print(f"{k:12s} {c['documents']:6d} documents {c['tokens']:10d} tokens {c['bytes'] / 1e6:8.1f} MB")
    print(f"skipped: {skipped}; wrote {out}/train.bin, val_code.bin, val_prose.bin, manifest.json")


if __name__ == "__main__":
    main()
