#!/usr/bin/python3
"""PyTorch reference of Phi-3 / Phi-3.5 (HF folder, after modeling_phi3.py): fused qkv_proj and
gate_up_proj, RMSNorm, rotate-half RoPE over the first partial_rotary_factor of each head,
longrope scaling (short factors up to original_max_position_embeddings, long factors beyond, and
the attention factor on cos/sin), sliding-window causal attention when sliding_window is set,
grouped KV heads, tied or untied lm_head. Plain torch ops, independent of Radix.
  tests/oracle/phi3_ref.py FOLDER --ids "1 2 3" --steps 4 [--dtype f32|bf16]"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def rope_tables(config, hd, s):
    """cos, sin {s, rotary dims} as Phi3RotaryEmbedding computes them for a sequence of s tokens."""
    theta = config.get("rope_theta", 10000.0)
    dim = int(hd * config.get("partial_rotary_factor", 1.0))
    scaling = config.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    ext, attention = torch.ones(dim // 2), 1.0
    if kind in ("longrope", "su"):
        original = config.get("original_max_position_embeddings", config["max_position_embeddings"])
        factor = config["max_position_embeddings"] / original
        attention = scaling.get("attention_factor")
        if attention is None:
            attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
        # HF switches to the long factors once the sequence is longer than the original context.
        ext = torch.tensor(scaling["long_factor"] if s > original else scaling["short_factor"], dtype=torch.float32)
    elif kind != "default":
        raise SystemExit("phi3_ref.py: rope scaling %r is not modelled" % kind)
    inv = 1.0 / (ext * theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    angles = torch.outer(torch.arange(s, dtype=torch.float32), inv)
    emb = torch.cat([angles, angles], -1)
    return emb.cos() * attention, emb.sin() * attention


def main():
    args = common.parse_args(__doc__)
    config, tensors = common.read_folder(args.folder)
    w = common.weights(args, tensors)
    d, heads = config["hidden_size"], config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    hd = config.get("head_dim") or d // heads
    eps = config.get("rms_norm_eps", 1e-5)
    window = config.get("sliding_window")
    lm_head = w.get("lm_head.weight", w["model.embed_tokens.weight"])

    def forward(ids):
        s = ids.shape[0]
        cos, sin = rope_tables(config, hd, s)
        rot = cos.shape[-1]

        def rope(t):  # t {heads, s, hd}: rotates the first `rot` dims, passes the rest
            r, rest = t[..., :rot], t[..., rot:]
            return torch.cat([r * cos + rotate_half(r) * sin, rest], -1)

        i = torch.arange(s)
        mask = i[None, :] <= i[:, None]
        if window is not None:
            mask &= i[None, :] > i[:, None] - window
        x = w["model.embed_tokens.weight"][ids]
        for layer in range(config["num_hidden_layers"]):
            p = "model.layers.%d." % layer
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            qkv = h @ w[p + "self_attn.qkv_proj.weight"].t()
            q, k, v = qkv.split([heads * hd, kv_heads * hd, kv_heads * hd], dim=-1)
            q = q.reshape(s, heads, hd).transpose(0, 1)
            k = k.reshape(s, kv_heads, hd).transpose(0, 1)
            v = v.reshape(s, kv_heads, hd).transpose(0, 1)
            q, k = rope(q), rope(k)
            k = k.repeat_interleave(heads // kv_heads, dim=0)
            v = v.repeat_interleave(heads // kv_heads, dim=0)
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            a = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v
            x = x + a.transpose(0, 1).reshape(s, heads * hd) @ w[p + "self_attn.o_proj.weight"].t()
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            gate, up = (h @ w[p + "mlp.gate_up_proj.weight"].t()).chunk(2, dim=-1)
            x = x + (up * torch.nn.functional.silu(gate)) @ w[p + "mlp.down_proj.weight"].t()
        return rms_norm(x, w["model.norm.weight"], eps) @ lm_head.t()

    common.run(args, forward)


if __name__ == "__main__":
    main()
