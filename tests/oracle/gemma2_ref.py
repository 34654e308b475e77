#!/usr/bin/python3
"""PyTorch reference of Gemma 2 (HF folder, after modeling_gemma2.py): embeddings scaled by
sqrt(hidden_size), RMSNorm with (1 + w), pre and post norms around attention and the MLP, a
GELU-tanh gated MLP, scores scaled by query_pre_attn_scalar^-0.5 and soft-capped by
attn_logit_softcapping, sliding-window attention on the even layers, rotate-half RoPE, grouped KV
heads, head_dim apart from hidden_size / heads, tied lm_head, final-logit soft-capping.
Plain torch ops, independent of Radix.
  tests/oracle/gemma2_ref.py FOLDER --ids "1 2 3" --steps 4 [--dtype f32|bf16]"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * (1.0 + w)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def softcap(x, cap):
    return x if cap is None else torch.tanh(x / cap) * cap


def main():
    args = common.parse_args(__doc__)
    config, tensors = common.read_folder(args.folder)
    w = common.weights(args, tensors)
    d, heads = config["hidden_size"], config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    hd = config.get("head_dim", 256)
    eps, theta = config.get("rms_norm_eps", 1e-6), config.get("rope_theta", 10000.0)
    scale = config.get("query_pre_attn_scalar", 256) ** -0.5
    window = config.get("sliding_window", 4096)
    attn_cap = config.get("attn_logit_softcapping", 50.0)
    final_cap = config.get("final_logit_softcapping", 30.0)
    act = config.get("hidden_activation", "gelu_pytorch_tanh")
    gelu = {"gelu_pytorch_tanh": "tanh", "gelu": "none"}[act]
    embed = w["model.embed_tokens.weight"]

    def forward(ids):
        s = ids.shape[0]
        inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        angles = torch.outer(torch.arange(s, dtype=torch.float32), inv)
        cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
        rope = lambda t: t * cos + rotate_half(t) * sin  # noqa: E731 (t {heads, s, hd})
        i = torch.arange(s)
        causal = i[None, :] <= i[:, None]
        sliding = causal & (i[None, :] > i[:, None] - window)
        x = embed[ids] * torch.tensor(d ** 0.5, dtype=embed.dtype)
        for layer in range(config["num_hidden_layers"]):
            p = "model.layers.%d." % layer
            mask = sliding if layer % 2 == 0 else causal
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = (h @ w[p + "self_attn.q_proj.weight"].t()).reshape(s, heads, hd).transpose(0, 1)
            k = (h @ w[p + "self_attn.k_proj.weight"].t()).reshape(s, kv_heads, hd).transpose(0, 1)
            v = (h @ w[p + "self_attn.v_proj.weight"].t()).reshape(s, kv_heads, hd).transpose(0, 1)
            q, k = rope(q), rope(k)
            k = k.repeat_interleave(heads // kv_heads, dim=0)
            v = v.repeat_interleave(heads // kv_heads, dim=0)
            scores = softcap((q @ k.transpose(-1, -2)) * scale, attn_cap)
            a = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v
            a = a.transpose(0, 1).reshape(s, heads * hd) @ w[p + "self_attn.o_proj.weight"].t()
            x = x + rms_norm(a, w[p + "post_attention_layernorm.weight"], eps)
            h = rms_norm(x, w[p + "pre_feedforward_layernorm.weight"], eps)
            gate = torch.nn.functional.gelu(h @ w[p + "mlp.gate_proj.weight"].t(), approximate=gelu)
            m = (gate * (h @ w[p + "mlp.up_proj.weight"].t())) @ w[p + "mlp.down_proj.weight"].t()
            x = x + rms_norm(m, w[p + "post_feedforward_layernorm.weight"], eps)
        return softcap(rms_norm(x, w["model.norm.weight"], eps) @ embed.t(), final_cap)

    common.run(args, forward)


if __name__ == "__main__":
    main()
