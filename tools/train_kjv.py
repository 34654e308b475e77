#!/usr/bin/python3
"""Trains Radix's embedded default model: a small GPT-2 on the King James Bible.

    /usr/bin/python3 tools/train_kjv.py --out models/kjv --minutes 30      # wall-clock budget
    /usr/bin/python3 tools/train_kjv.py --out models/kjv --steps 4000      # exact, reproducible

Steps:
  1. Text: Debian's bible-kjv (`bible -f Gen1:1-Rev22:21`), verse references stripped, one verse a
     line (31102 lines, ASCII).
  2. Tokenizer: byte-level BPE trained here (GPT-2 style: bytes_to_unicode, GPT-2's pre-tokenizer
     regex through python3-regex), 256 byte tokens + merges + `<|endoftext|>` (last id), written
     as an HF `tokenizer.json` (model BPE, ByteLevel pre-tokenizer/decoder/post-processor).
  3. Model: HF's GPT-2 architecture exactly (wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2,
     mlp.c_fc, mlp.c_proj}, ln_f, lm_head tied to wte; Conv1D weights stored [in, out]; gelu_new;
     layer norm eps 1e-5), trained with AdamW and a cosine schedule on 1 CPU thread.
  4. Files: config.json (HF GPT2Config keys), model.safetensors (written here, HF GPT-2 names
     without the "transformer." prefix, like the official gpt2 checkpoint), tokenizer.json.
  5. Samples: greedy and temperature 0.8 continuations of a few prompts.

With --minutes the cosine schedule follows wall-clock time (the build machine is shared, so
the step count depends on its load); with `--steps N` it follows steps and a run is
deterministic for a seed (1 thread, same torch build).
Uses only Debian's python3 with python3-torch, python3-numpy and python3-regex.
"""

import argparse
import heapq
import json
import math
import os
import re
import struct
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

try:  # Debian's python3-regex: \p{L} and \p{N} exactly as HF tokenizers (Oniguruma) read them.
  import regex as _regex
  GPT2_SPLIT = _regex.compile(
      r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
except ImportError:  # `re` fallback: exact on ASCII text (all of the KJV), approximate elsewhere.
  GPT2_SPLIT = re.compile(
      r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")

EOT = "<|endoftext|>"


# ----------------------------------------------------------------------------------------- text
def kjv_verses():
  """The KJV's 31102 verses, references ("Ge1:1 ", "1Cor13:4 ") stripped."""
  out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                       text=True).stdout
  ref = re.compile(r"^[1-3]?[A-Za-z]+\d+:\d+ ")
  verses = []
  for line in out.splitlines():
    if not line.strip():
      continue
    m = ref.match(line)
    if not m:
      sys.exit(f"unexpected line from `bible`: {line[:80]!r}")
    verses.append(line[m.end():].strip())
  if len(verses) != 31102:
    sys.exit(f"expected 31102 verses from `bible`, got {len(verses)}")
  return verses


# ------------------------------------------------------------------------------------ tokenizer
def bytes_to_unicode():
  """GPT-2's reversible byte -> printable character map (in GPT-2's id order)."""
  bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
        list(range(ord("®"), ord("ÿ") + 1)))
  cs = bs[:]
  n = 0
  for b in range(256):
    if b not in bs:
      bs.append(b)
      cs.append(256 + n)
      n += 1
  return dict(zip(bs, (chr(c) for c in cs)))


BYTE_ENCODER = bytes_to_unicode()


def pretokenize(text):
  """GPT-2 regex split, each piece's UTF-8 bytes mapped to GPT-2's byte characters."""
  return ["".join(BYTE_ENCODER[b] for b in piece.encode("utf-8"))
          for piece in GPT2_SPLIT.findall(text)]


def train_bpe(text, vocab_size):
  """Byte-level BPE merges for vocab_size = 256 bytes + merges + <|endoftext|>.

  Greedy on pair frequency over pre-token counts; ties go to the smallest pair (deterministic)."""
  counts = Counter(pretokenize(text))
  words = [list(w) for w in sorted(counts)]
  freqs = [counts[w] for w in sorted(counts)]
  pair_counts = Counter()
  where = {}
  for i, (w, f) in enumerate(zip(words, freqs)):
    for p in zip(w, w[1:]):
      pair_counts[p] += f
      where.setdefault(p, set()).add(i)
  heap = [(-c, p) for p, c in pair_counts.items()]
  heapq.heapify(heap)
  merges = []
  n_merges = vocab_size - 256 - 1
  while len(merges) < n_merges and heap:
    c, best = heapq.heappop(heap)
    if -c != pair_counts.get(best, 0):
      continue  # stale heap entry
    if -c < 2:
      break
    merges.append(best)
    a, b = best
    ab = a + b
    changed = set()
    for i in sorted(where.pop(best, ())):
      w, f = words[i], freqs[i]
      if len(w) < 2:
        continue
      for p in zip(w, w[1:]):
        pair_counts[p] -= f
        changed.add(p)
      j, nw = 0, []
      while j < len(w):
        if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
          nw.append(ab)
          j += 2
        else:
          nw.append(w[j])
          j += 1
      words[i] = nw
      for p in zip(nw, nw[1:]):
        pair_counts[p] += f
        changed.add(p)
        where.setdefault(p, set()).add(i)
    pair_counts.pop(best, None)
    for p in changed:
      if p != best and pair_counts.get(p, 0) > 0:
        heapq.heappush(heap, (-pair_counts[p], p))
  return merges


class BPE:
  """Rank-based byte-level BPE encoding, as GPT-2's encoder.py and HF tokenizers apply it."""

  def __init__(self, vocab, merges):
    self.vocab = vocab
    self.inv = {i: t for t, i in vocab.items()}
    self.ranks = {tuple(m): r for r, m in enumerate(merges)}
    self.cache = {}
    self.byte_decoder = {c: b for b, c in BYTE_ENCODER.items()}

  def word(self, w):
    if w in self.cache:
      return self.cache[w]
    parts = list(w)
    while len(parts) > 1:
      pairs = [(self.ranks.get(p, 1 << 30), k) for k, p in enumerate(zip(parts, parts[1:]))]
      r, k = min(pairs)
      if r == 1 << 30:
        break
      a, b = parts[k], parts[k + 1]
      j, out = 0, []
      while j < len(parts):  # merge every occurrence of this pair, left to right
        if j + 1 < len(parts) and parts[j] == a and parts[j + 1] == b:
          out.append(a + b)
          j += 2
        else:
          out.append(parts[j])
          j += 1
      parts = out
    ids = [self.vocab[p] for p in parts]
    self.cache[w] = ids
    return ids

  def encode(self, text):
    ids = []
    for w in pretokenize(text):
      ids.extend(self.word(w))
    return ids

  def decode(self, ids):
    s = "".join(self.inv[i] for i in ids if self.inv[i] != EOT)
    return bytes(self.byte_decoder[c] for c in s).decode("utf-8", errors="replace")


def make_vocab(merges):
  vocab = {}
  for b, c in BYTE_ENCODER.items():  # GPT-2's order: printable bytes first, then the rest
    vocab[c] = len(vocab)
  for a, b in merges:
    vocab[a + b] = len(vocab)
  vocab[EOT] = len(vocab)
  return vocab


def tokenizer_json(vocab, merges):
  """An HF tokenizer.json in the layout of the official gpt2 one."""
  eot = vocab[EOT]
  byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                "use_regex": True}
  return {
      "version": "1.0",
      "truncation": None,
      "padding": None,
      "added_tokens": [{"id": eot, "content": EOT, "single_word": False, "lstrip": False,
                        "rstrip": False, "normalized": True, "special": True}],
      "normalizer": None,
      "pre_tokenizer": byte_level,
      "post_processor": dict(byte_level, trim_offsets=False),
      "decoder": byte_level,
      "model": {"type": "BPE", "dropout": None, "unk_token": None,
                "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                "byte_fallback": False, "vocab": vocab,
                "merges": [f"{a} {b}" for a, b in merges]},
  }


# ---------------------------------------------------------------------------------------- model
class Conv1D(nn.Module):
  """HF's Conv1D: y = x @ weight + bias with weight stored [in, out]."""

  def __init__(self, n_in, n_out):
    super().__init__()
    self.weight = nn.Parameter(torch.empty(n_in, n_out).normal_(0.0, 0.02))
    self.bias = nn.Parameter(torch.zeros(n_out))

  def forward(self, x):
    return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(
        *x.shape[:-1], -1)


class Attention(nn.Module):
  def __init__(self, cfg):
    super().__init__()
    self.n_head = cfg["n_head"]
    d = cfg["n_embd"]
    self.c_attn = Conv1D(d, 3 * d)
    self.c_proj = Conv1D(d, d)

  def forward(self, x):
    b, t, d = x.shape
    q, k, v = self.c_attn(x).split(d, dim=2)
    hd = d // self.n_head
    q, k, v = (z.view(b, t, self.n_head, hd).transpose(1, 2) for z in (q, k, v))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    y = (att @ v).transpose(1, 2).reshape(b, t, d)
    return self.c_proj(y)


class MLP(nn.Module):
  def __init__(self, cfg):
    super().__init__()
    d = cfg["n_embd"]
    self.c_fc = Conv1D(d, 4 * d)
    self.c_proj = Conv1D(4 * d, d)

  def forward(self, x):
    return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))  # gelu_new


class Block(nn.Module):
  def __init__(self, cfg):
    super().__init__()
    d, eps = cfg["n_embd"], cfg["layer_norm_epsilon"]
    self.ln_1 = nn.LayerNorm(d, eps=eps)
    self.attn = Attention(cfg)
    self.ln_2 = nn.LayerNorm(d, eps=eps)
    self.mlp = MLP(cfg)

  def forward(self, x):
    x = x + self.attn(self.ln_1(x))
    return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
  """HF GPT2Model's parameter names; logits through the tied wte (GPT2LMHeadModel)."""

  def __init__(self, cfg):
    super().__init__()
    self.cfg = cfg
    self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
    self.wpe = nn.Embedding(cfg["n_positions"], cfg["n_embd"])
    self.h = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
    self.ln_f = nn.LayerNorm(cfg["n_embd"], eps=cfg["layer_norm_epsilon"])
    nn.init.normal_(self.wte.weight, 0.0, 0.02)
    nn.init.normal_(self.wpe.weight, 0.0, 0.01)
    for name, p in self.named_parameters():  # GPT-2's scaled init of residual projections
      if name.endswith("c_proj.weight"):
        nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * cfg["n_layer"]))

  def forward(self, idx):
    t = idx.shape[1]
    x = self.wte(idx) + self.wpe(torch.arange(t))
    for block in self.h:
      x = block(x)
    return self.ln_f(x) @ self.wte.weight.t()


# ---------------------------------------------------------------------------------- safetensors
ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def write_safetensors(path, tensors, metadata):
  """The safetensors format: u64 LE header length, JSON header (dtype, shape, data_offsets
  relative to the data start, __metadata__), header padded with spaces to 8 bytes, raw LE data."""
  header = {"__metadata__": metadata}
  blobs, offset = [], 0
  for name, t in tensors.items():
    t = t.detach().contiguous().cpu()
    raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else \
        t.numpy().tobytes()
    header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape),
                    "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
  hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
  hb += b" " * (-len(hb) % 8)
  with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(hb)))
    f.write(hb)
    for raw in blobs:
      f.write(raw)


# ------------------------------------------------------------------------------------- training
@torch.no_grad()
def estimate_loss(model, data, block, batches, batch_size):
  model.eval()
  g = torch.Generator().manual_seed(1234)
  losses = []
  for _ in range(batches):
    ix = torch.randint(len(data) - block - 1, (batch_size,), generator=g)
    x = torch.stack([data[i:i + block] for i in ix])
    y = torch.stack([data[i + 1:i + block + 1] for i in ix])
    logits = model(x)
    losses.append(F.cross_entropy(logits.view(-1, logits.shape[-1]), y.reshape(-1)).item())
  model.train()
  return sum(losses) / len(losses)


@torch.no_grad()
def generate(model, ids, n, temperature, g, n_positions):
  ids = list(ids)
  for _ in range(n):
    x = torch.tensor([ids[-n_positions:]])
    logits = model(x)[0, -1].float()
    if temperature == 0:
      nxt = int(logits.argmax())
    else:
      nxt = int(torch.multinomial((logits / temperature).softmax(-1), 1, generator=g))
    ids.append(nxt)
  return ids


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--out", default="models/kjv", help="output folder")
  ap.add_argument("--minutes", type=float, default=30.0,
                  help="training budget; sets the step count from the first steps' speed")
  ap.add_argument("--steps", type=int, default=0, help="exact step count (overrides --minutes)")
  ap.add_argument("--seed", type=int, default=1611)
  ap.add_argument("--vocab", type=int, default=4096, help="tokens: 256 bytes + merges + EOT")
  ap.add_argument("--n-embd", type=int, default=192)
  ap.add_argument("--n-layer", type=int, default=4)
  ap.add_argument("--n-head", type=int, default=6)
  ap.add_argument("--ctx", type=int, default=128, help="n_positions = training block size")
  ap.add_argument("--batch", type=int, default=16)
  ap.add_argument("--lr", type=float, default=2e-3)
  ap.add_argument("--min-lr-frac", type=float, default=0.05)
  ap.add_argument("--warmup", type=int, default=100)
  ap.add_argument("--weight-decay", type=float, default=0.1)
  ap.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="bf16",
                  help="stored weight dtype")
  ap.add_argument("--eval-every", type=int, default=250)
  ap.add_argument("--threads", type=int, default=1)
  args = ap.parse_args()

  torch.set_num_threads(args.threads)
  torch.manual_seed(args.seed)
  t_start = time.time()

  verses = kjv_verses()
  text = "\n".join(verses) + "\n"
  print(f"text: {len(verses)} verses, {len(text)} characters", flush=True)

  t0 = time.time()
  merges = train_bpe(text, args.vocab)
  vocab = make_vocab(merges)
  bpe = BPE(vocab, merges)
  ids = bpe.encode(text)
  assert bpe.decode(ids) == text, "tokenizer round trip failed"
  print(f"tokenizer: {len(vocab)} tokens ({len(merges)} merges), {len(ids)} tokens in the text "
        f"({len(text) / len(ids):.2f} chars/token), {time.time() - t0:.1f} s", flush=True)

  # Held-out split: every 20th block of 4096 tokens.
  data = torch.tensor(ids, dtype=torch.long)
  blocks = data.split(4096)
  val = torch.cat([b for i, b in enumerate(blocks) if i % 20 == 10])
  train = torch.cat([b for i, b in enumerate(blocks) if i % 20 != 10])
  print(f"split: {len(train)} train tokens, {len(val)} validation tokens", flush=True)

  eot = vocab[EOT]
  cfg = {"vocab_size": len(vocab), "n_positions": args.ctx, "n_embd": args.n_embd,
         "n_layer": args.n_layer, "n_head": args.n_head, "layer_norm_epsilon": 1e-5}
  model = GPT2(cfg)
  n_params = sum(p.numel() for p in model.parameters())
  print(f"model: {n_params / 1e6:.3f} M parameters, n_embd {args.n_embd}, {args.n_layer} layers,"
        f" {args.n_head} heads, context {args.ctx}", flush=True)

  decay = [p for p in model.parameters() if p.dim() == 2]
  no_decay = [p for p in model.parameters() if p.dim() < 2]
  opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                           {"params": no_decay, "weight_decay": 0.0}],
                          lr=args.lr, betas=(0.9, 0.95))
  g = torch.Generator().manual_seed(args.seed)

  # Progress runs from 0 to 1: by steps with --steps (deterministic), else by wall-clock time
  # (the machine is shared, so a step count fixed up front would over- or undershoot).
  total = args.steps
  t_train = time.time()
  budget = args.minutes * 60 - (t_train - t_start) - 60  # leave a minute for files and samples
  step = 0
  train_loss_ema = None
  while True:
    progress = step / total if total else (time.time() - t_train) / budget
    if progress >= 1:
      break
    if step < args.warmup:
      lr = args.lr * (step + 1) / args.warmup
    else:
      lr = args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 *
                      (1 + math.cos(math.pi * progress)))
    for group in opt.param_groups:
      group["lr"] = lr
    ix = torch.randint(len(train) - args.ctx - 1, (args.batch,), generator=g)
    x = torch.stack([train[i:i + args.ctx] for i in ix])
    y = torch.stack([train[i + 1:i + args.ctx + 1] for i in ix])
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    step += 1
    li = loss.item()
    train_loss_ema = li if train_loss_ema is None else 0.98 * train_loss_ema + 0.02 * li
    if step % args.eval_every == 0:
      vl = estimate_loss(model, val, args.ctx, 8, 32)
      print(f"step {step}: lr {lr:.2e}, train loss {train_loss_ema:.3f} (ema), "
            f"val loss {vl:.3f}, {(time.time() - t_train) / 60:.1f} min", flush=True)

  train_eval = estimate_loss(model, train, args.ctx, 8, 32)
  val_eval = estimate_loss(model, val, args.ctx, 8, 32)
  print(f"final (f32): train loss {train_eval:.3f}, val loss {val_eval:.3f}, "
        f"{step} steps, {step * args.batch * args.ctx / 1e6:.1f} M tokens seen", flush=True)

  # Round the weights to the stored dtype so that samples and losses show what is shipped.
  st_dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
  with torch.no_grad():
    for p in model.parameters():
      p.copy_(p.to(st_dtype).float())
  val_rounded = estimate_loss(model, val, args.ctx, 8, 32)
  print(f"final ({args.dtype} weights): val loss {val_rounded:.3f}", flush=True)

  os.makedirs(args.out, exist_ok=True)
  tensors = {k: v.to(st_dtype) for k, v in model.state_dict().items()}
  write_safetensors(os.path.join(args.out, "model.safetensors"), tensors, {"format": "pt"})
  config = {
      "architectures": ["GPT2LMHeadModel"],
      "model_type": "gpt2",
      "vocab_size": len(vocab),
      "n_positions": args.ctx,
      "n_ctx": args.ctx,
      "n_embd": args.n_embd,
      "n_layer": args.n_layer,
      "n_head": args.n_head,
      "n_inner": None,
      "activation_function": "gelu_new",
      "layer_norm_epsilon": 1e-5,
      "initializer_range": 0.02,
      "resid_pdrop": 0.0,
      "embd_pdrop": 0.0,
      "attn_pdrop": 0.0,
      "scale_attn_weights": True,
      "tie_word_embeddings": True,
      "use_cache": True,
      "bos_token_id": eot,
      "eos_token_id": eot,
      "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[args.dtype],
  }
  with open(os.path.join(args.out, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
  with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
    json.dump(tokenizer_json(vocab, merges), f, ensure_ascii=False, separators=(",", ":"))
  sizes = {n: os.path.getsize(os.path.join(args.out, n))
           for n in ("config.json", "model.safetensors", "tokenizer.json")}
  print("wrote " + ", ".join(f"{args.out}/{n} ({s / 1e6:.2f} MB)" for n, s in sizes.items()),
        flush=True)

  model.eval()
  gs = torch.Generator().manual_seed(args.seed)
  for prompt in ["In the beginning", "And Jesus said", "The LORD is my shepherd",
                 "And it came to pass"]:
    p = bpe.encode(prompt)
    for temp in (0.0, 0.8):
      out = generate(model, p, 60, temp, gs, args.ctx)
      print(f"--- {prompt!r}, {'greedy' if temp == 0 else f'temperature {temp}'}:\n"
            f"{bpe.decode(out)}", flush=True)
  print(f"total {(time.time() - t_start) / 60:.1f} min", flush=True)


if __name__ == "__main__":
  main()
