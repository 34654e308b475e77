"""Shared by the PyTorch oracles: reading a Hugging Face folder, the command line, the output.

Independent of Radix: plain json/numpy/torch. Each oracle prints one JSON object:
  {"logits": [[vocab floats] per step], "greedy": [ids]}
where logits[0] are the logits of the prompt's last token (prefill) and logits[i] those after
feeding greedy[i-1] (a decode step); greedy[i] = argmax(logits[i]) (first index on ties).
With --gguf FILE, the weights are those of a quantized GGUF of the same model, decoded by the
numpy reference decoders of ggml_quants.py.
Every step recomputes the whole sequence (no KV cache), so that a cache bug cannot hide.
"""
import argparse
import json
import os
import struct

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        a, b = info["data_offsets"]
        arr = np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=8 + n + a).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def read_folder(folder):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    return config, read_safetensors(os.path.join(folder, "model.safetensors"))


def parse_args(doc):
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("folder", help="Hugging Face folder (config.json + model.safetensors)")
    ap.add_argument("--ids", required=True, help="prompt token ids, space-separated")
    ap.add_argument("--steps", type=int, default=4, help="greedy tokens to generate")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"],
                    help="bf16: weights rounded to bf16, computed in f32")
    ap.add_argument("--gguf", default=None,
                    help="a quantized GGUF of the same model: its weights, dequantized (ggml_quants.py), replace "
                         "the folder's")
    return ap.parse_args()


def gguf_weights(args, w, names):
    """With --gguf: replaces w[hf] by the GGUF's tensor, dequantized, for each (hf, gguf name,
    fix) of `names` (fix undoes the converter's layout change: a transpose, a row permutation)."""
    if not args.gguf:
        return w
    import ggml_quants
    stored = ggml_quants.read_gguf(args.gguf)
    w = dict(w)
    for hf, name, fix in names:
        if name not in stored:
            continue
        tname, dims, raw = stored[name]
        t = torch.from_numpy(ggml_quants.dequantize(tname, raw, dims))
        w[hf] = fix(t) if fix else t
    return w


def weights(args, tensors):
    if args.dtype == "bf16":
        return {k: v.to(torch.bfloat16).to(torch.float32) for k, v in tensors.items()}
    return tensors


def run(args, forward):
    """forward(ids LongTensor {s}) -> logits {s, vocab}."""
    torch.set_grad_enabled(False)
    ids = [int(x) for x in args.ids.split()]
    logits, greedy = [], []
    for _ in range(args.steps):
        last = forward(torch.tensor(ids, dtype=torch.long))[-1]
        logits.append([float(x) for x in last])
        token = int(torch.argmax(last))
        greedy.append(token)
        ids.append(token)
    print(json.dumps({"logits": logits, "greedy": greedy}))
