#!/usr/bin/python3
"""PyTorch reference of Llama (HF folder: RMSNorm, rotate-half RoPE, SwiGLU, grouped KV heads,
tied or untied lm_head). Plain torch ops, independent of Radix.
  tests/oracle/llama_ref.py FOLDER --ids "1 2 3" --steps 4 [--dtype f32|bf16] [--gguf QUANTIZED.gguf]"""
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


def main():
    args = common.parse_args(__doc__)
    config, tensors = common.read_folder(args.folder)
    w = common.weights(args, tensors)
    d, heads = config["hidden_size"], config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    hd = config.get("head_dim", d // heads)

    def unpermute(n):  # llama.cpp's converter pairs RoPE rows (2i, 2i+1): back to rotate-half rows
        return lambda t: t.reshape(n, t.shape[0] // n // 2, 2, -1).transpose(1, 2).reshape(t.shape)

    names = [("model.embed_tokens.weight", "token_embd.weight", None), ("model.norm.weight", "output_norm.weight", None),
             ("lm_head.weight", "output.weight", None)]
    for i in range(config["num_hidden_layers"]):
        p, b = "model.layers.%d." % i, "blk.%d." % i
        names += [(p + "input_layernorm.weight", b + "attn_norm.weight", None),
                  (p + "self_attn.q_proj.weight", b + "attn_q.weight", unpermute(heads)),
                  (p + "self_attn.k_proj.weight", b + "attn_k.weight", unpermute(kv_heads)),
                  (p + "self_attn.v_proj.weight", b + "attn_v.weight", None),
                  (p + "self_attn.o_proj.weight", b + "attn_output.weight", None),
                  (p + "post_attention_layernorm.weight", b + "ffn_norm.weight", None),
                  (p + "mlp.gate_proj.weight", b + "ffn_gate.weight", None),
                  (p + "mlp.up_proj.weight", b + "ffn_up.weight", None),
                  (p + "mlp.down_proj.weight", b + "ffn_down.weight", None)]
    w = common.gguf_weights(args, w, names)
    eps, theta = config.get("rms_norm_eps", 1e-6), config.get("rope_theta", 10000.0)
    lm_head = w.get("lm_head.weight", w["model.embed_tokens.weight"])

    def forward(ids):
        s = ids.shape[0]
        inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        angles = torch.outer(torch.arange(s, dtype=torch.float32), inv)
        cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
        rope = lambda t: t * cos + rotate_half(t) * sin  # noqa: E731 (t {heads, s, hd})
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        x = w["model.embed_tokens.weight"][ids]
        for i in range(config["num_hidden_layers"]):
            p = "model.layers.%d." % i
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = (h @ w[p + "self_attn.q_proj.weight"].t()).reshape(s, heads, hd).transpose(0, 1)
            k = (h @ w[p + "self_attn.k_proj.weight"].t()).reshape(s, kv_heads, hd).transpose(0, 1)
            v = (h @ w[p + "self_attn.v_proj.weight"].t()).reshape(s, kv_heads, hd).transpose(0, 1)
            q, k = rope(q), rope(k)
            k = k.repeat_interleave(heads // kv_heads, dim=0)
            v = v.repeat_interleave(heads // kv_heads, dim=0)
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
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
