#!/usr/bin/python3
"""PyTorch reference of Qwen3, after transformers' modeling_qwen3.py (HF folder): Llama's
decoder with head_dim from the config (it may differ from hidden_size / heads), an RMSNorm
over head_dim on every head of q and k (q_norm, k_norm) applied before RoPE, no q/k/v bias
(attention_bias false), and lm_head tied to embed_tokens when the checkpoint has none.
Plain torch ops, independent of Radix.
  tests/oracle/qwen3_ref.py FOLDER --ids "1 2 3" --steps 4 [--dtype f32|bf16]"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from llama_ref import rms_norm, rotate_half  # noqa: E402


def main():
    args = common.parse_args(__doc__)
    config, tensors = common.read_folder(args.folder)
    w = common.weights(args, tensors)
    assert not config.get("use_sliding_window", False), "the oracle has no sliding window"
    assert not config.get("attention_bias", False), "the oracle has no attention bias"
    d, heads = config["hidden_size"], config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    hd = config.get("head_dim") or d // heads
    eps, theta = config.get("rms_norm_eps", 1e-6), config.get("rope_theta", 10000.0)
    lm_head = w.get("lm_head.weight", w["model.embed_tokens.weight"])

    def forward(ids):
        s = ids.shape[0]
        inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        freqs = torch.outer(torch.arange(s, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        x = w["model.embed_tokens.weight"][ids]
        for i in range(config["num_hidden_layers"]):
            p = "model.layers.%d." % i
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            # q_norm(q_proj(h).view(s, heads, hd)): the norm runs over each head's hd values.
            q = rms_norm((h @ w[p + "self_attn.q_proj.weight"].t()).view(s, heads, hd),
                         w[p + "self_attn.q_norm.weight"], eps).transpose(0, 1)
            k = rms_norm((h @ w[p + "self_attn.k_proj.weight"].t()).view(s, kv_heads, hd),
                         w[p + "self_attn.k_norm.weight"], eps).transpose(0, 1)
            v = (h @ w[p + "self_attn.v_proj.weight"].t()).view(s, kv_heads, hd).transpose(0, 1)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(heads // kv_heads, dim=0)  # repeat_kv
            v = v.repeat_interleave(heads // kv_heads, dim=0)
            scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
            a = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v
            x = x + a.transpose(0, 1).reshape(s, heads * hd) @ w[p + "self_attn.o_proj.weight"].t()
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            gate = h @ w[p + "mlp.gate_proj.weight"].t()
            up = h @ w[p + "mlp.up_proj.weight"].t()
            x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].t()
        return rms_norm(x, w["model.norm.weight"], eps) @ lm_head.t()

    common.run(args, forward)


if __name__ == "__main__":
    main()
