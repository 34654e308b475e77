#!/usr/bin/python3
"""Generates from models/kjv with nothing but the committed files: an independent check.

    /usr/bin/python3 tools/kjv_sample.py --prompt "In the beginning" -n 60            # greedy
    /usr/bin/python3 tools/kjv_sample.py --prompt "And Jesus said" -n 60 --temp 0.8 --seed 7
    /usr/bin/python3 tools/kjv_sample.py --prompt "In the beginning" -n 20 --ids      # ids only

Shares no code with tools/train_kjv.py: its own safetensors reader (validating the header),
its own tokenizer.json BPE (GPT-2 regex via python3-regex), and a numpy GPT-2 forward pass that
follows config.json (Conv1D [in, out] weights, gelu_new, tied lm_head). Greedy output with --ids
is what `radix generate --ids` (no --model) should print for the same prompt.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np

try:
  import regex
  SPLIT = regex.compile(
      r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
except ImportError:  # exact on ASCII only
  import re
  SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")


def read_safetensors(path):
  """name -> float32 array. Checks the header's offsets: in the file, contiguous, sized by
  shape x dtype."""
  sizes = {"F32": 4, "F16": 2, "BF16": 2}
  with open(path, "rb") as f:
    blob = f.read()
  (n,) = struct.unpack_from("<Q", blob, 0)
  if 8 + n > len(blob):
    sys.exit(f"{path}: header length {n} runs past the file ({len(blob)} bytes)")
  header = json.loads(blob[8:8 + n])
  base = 8 + n
  meta = header.pop("__metadata__", {})
  out, end = {}, 0
  for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    a, b = info["data_offsets"]
    count = math.prod(info["shape"])
    if a != end or b - a != count * sizes[info["dtype"]] or base + b > len(blob):
      sys.exit(f"{path}: bad data_offsets {a},{b} for {name} {info}")
    end = b
    raw = blob[base + a:base + b]
    if info["dtype"] == "BF16":
      arr = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    elif info["dtype"] == "F16":
      arr = np.frombuffer(raw, "<f2").astype(np.float32)
    else:
      arr = np.frombuffer(raw, "<f4").astype(np.float32)
    out[name] = arr.reshape(info["shape"])
  if base + end != len(blob):
    sys.exit(f"{path}: {len(blob) - base - end} trailing bytes after the last tensor")
  return out, meta


class Tokenizer:
  """HF tokenizer.json, model BPE with ByteLevel pre-tokenizer and decoder."""

  def __init__(self, path):
    with open(path, encoding="utf-8") as f:
      tj = json.load(f)
    assert tj["model"]["type"] == "BPE" and tj["pre_tokenizer"]["type"] == "ByteLevel"
    self.vocab = tj["model"]["vocab"]
    self.inv = {i: t for t, i in self.vocab.items()}
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
              for m in tj["model"]["merges"]]
    self.ranks = {m: r for r, m in enumerate(merges)}
    self.special = {t["id"] for t in tj.get("added_tokens", []) if t.get("special")}
    bs = [*range(33, 127), *range(161, 173), *range(174, 256)]
    cs, n = list(bs), 0
    for b in range(256):  # the other bytes map to chr(256 + n), in byte order
      if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
    self.enc = {b: chr(c) for b, c in zip(bs, cs)}
    self.dec = {c: b for b, c in self.enc.items()}

  def _bpe(self, word):
    parts = list(word)
    while len(parts) > 1:
      best = min(range(len(parts) - 1),
                 key=lambda k: self.ranks.get((parts[k], parts[k + 1]), math.inf))
      pair = (parts[best], parts[best + 1])
      if pair not in self.ranks:
        break
      merged, k = [], 0
      while k < len(parts):
        if k + 1 < len(parts) and (parts[k], parts[k + 1]) == pair:
          merged.append(parts[k] + parts[k + 1])
          k += 2
        else:
          merged.append(parts[k])
          k += 1
      parts = merged
    return [self.vocab[p] for p in parts]

  def encode(self, text):
    ids = []
    for piece in SPLIT.findall(text):
      ids += self._bpe("".join(self.enc[b] for b in piece.encode("utf-8")))
    return ids

  def decode(self, ids):
    data = bytes(self.dec[c] for i in ids if i not in self.special for c in self.inv[i])
    return data.decode("utf-8", errors="replace")


def layer_norm(x, w, b, eps):
  mu = x.mean(-1, keepdims=True)
  var = ((x - mu) ** 2).mean(-1, keepdims=True)
  return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_new(x):
  return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(w, cfg, ids):
  """Logits [t, vocab] of HF GPT2LMHeadModel for one sequence."""
  t, d, nh = len(ids), cfg["n_embd"], cfg["n_head"]
  eps, hd = cfg["layer_norm_epsilon"], cfg["n_embd"] // cfg["n_head"]
  x = w["wte.weight"][ids] + w["wpe.weight"][:t]
  mask = np.triu(np.full((t, t), -np.inf, np.float32), 1)
  for i in range(cfg["n_layer"]):
    p = f"h.{i}."
    h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
    qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
    q, k, v = (qkv[:, j * d:(j + 1) * d].reshape(t, nh, hd).transpose(1, 0, 2) for j in range(3))
    att = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + mask
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    y = (att @ v).transpose(1, 0, 2).reshape(t, d)
    x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
    h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
    h = gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
    x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
  x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], eps)
  return x @ w["wte.weight"].T


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--model", default=os.path.join(os.path.dirname(__file__), "..", "models", "kjv"))
  ap.add_argument("--prompt", default="In the beginning")
  ap.add_argument("-n", type=int, default=60)
  ap.add_argument("--temp", type=float, default=0.0, help="0: greedy")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--ids", action="store_true", help="print only the generated token ids")
  args = ap.parse_args()

  with open(os.path.join(args.model, "config.json")) as f:
    cfg = json.load(f)
  assert cfg["model_type"] == "gpt2" and cfg["activation_function"] == "gelu_new"
  w, _ = read_safetensors(os.path.join(args.model, "model.safetensors"))
  tok = Tokenizer(os.path.join(args.model, "tokenizer.json"))
  rng = np.random.default_rng(args.seed)
  ids = tok.encode(args.prompt)
  gen = []
  for _ in range(args.n):
    logits = forward(w, cfg, (ids + gen)[-cfg["n_positions"]:])[-1].astype(np.float64)
    if args.temp == 0:
      nxt = int(logits.argmax())
    else:
      p = np.exp((logits - logits.max()) / args.temp)
      nxt = int(rng.choice(len(p), p=p / p.sum()))
    gen.append(nxt)
  if args.ids:
    print(" ".join(map(str, gen)))
  else:
    print(tok.decode(ids + gen))


if __name__ == "__main__":
  main()
