#!/usr/bin/python3
"""PyTorch reference of GPT-2 (HF folder: fused c_attn, Conv1D {in, out} weights, learned
positions, tanh GELU, tied lm_head). Plain torch ops, independent of Radix.
  tests/oracle/gpt2_ref.py FOLDER --ids "1 2 3" --steps 4 [--dtype f32|bf16] [--gguf QUANTIZED.gguf]"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def main():
    args = common.parse_args(__doc__)
    config, tensors = common.read_folder(args.folder)
    w = common.weights(args, {k[len("transformer."):] if k.startswith("transformer.") else k: v
                              for k, v in tensors.items()})
    d, heads, eps = config["n_embd"], config["n_head"], config.get("layer_norm_epsilon", 1e-5)
    t = lambda x: x.t().contiguous()  # noqa: E731 (GGUF stores Conv1D weights {out, in})
    names = [("wte.weight", "token_embd.weight", None), ("wpe.weight", "position_embd.weight", None),
             ("ln_f.weight", "output_norm.weight", None), ("ln_f.bias", "output_norm.bias", None)]
    for i in range(config["n_layer"]):
        p, b = "h.%d." % i, "blk.%d." % i
        for hf, gg in (("attn.c_attn", "attn_qkv"), ("attn.c_proj", "attn_output"), ("mlp.c_fc", "ffn_up"),
                       ("mlp.c_proj", "ffn_down"), ("ln_1", "attn_norm"), ("ln_2", "ffn_norm")):
            names += [(p + hf + ".weight", b + gg + ".weight", None if hf.startswith("ln") else t),
                      (p + hf + ".bias", b + gg + ".bias", None)]
    w = common.gguf_weights(args, w, names)  # output.weight is not read: the head is tied to wte
    hd = d // heads

    def forward(ids):
        s = ids.shape[0]
        x = w["wte.weight"][ids] + w["wpe.weight"][torch.arange(s)]
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        for i in range(config["n_layer"]):
            p = "h.%d." % i
            h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
            qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
            q, k, v = (t.reshape(s, heads, hd).transpose(0, 1) for t in qkv.split(d, dim=-1))
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            scores = scores.masked_fill(~mask, float("-inf"))
            a = (torch.softmax(scores, -1) @ v).transpose(0, 1).reshape(s, d)
            x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
            m = gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
            x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], eps)
        return x @ w["wte.weight"].t()

    common.run(args, forward)


if __name__ == "__main__":
    main()
