#!/usr/bin/python3
"""PyTorch peer of `radix bench`: GPT-2 and Llama with random weights and a KV cache, measuring
prompt processing (pp) and decode (tg) tokens/s, printed as llama-bench style markdown rows,
exactly as `radix bench` prints them:

    | model | size | params | dtype | threads | test | t/s |
    | gpt2 | 474.7 MiB | 124.44 M | f32 | 1 | pp512 | 123.45 ± 1.20 |

    /usr/bin/python3 bench/torch_llm_peer.py --arch gpt2 --dtype f32 --threads 1 -p 512 -n 128
    /usr/bin/python3 bench/torch_llm_peer.py --config MODEL_DIR/config.json --dtype bf16 --threads 2
    python3 bench/torch_llm_peer.py --arch llama --dtype bf16 --device cuda    (on a GPU machine)

Shapes come from an HF config.json (--config) or the built-in defaults: GPT-2 small (124M) and a
Llama of about 110M (dim 768, 12 layers, 12 heads, ffn 2048, vocab 32000, tied embeddings).
As llama-bench: ppP runs one forward pass over P prompt tokens into an empty KV cache (logits of
the last position only); tgN decodes N tokens one at a time from an empty cache (greedy, each
token fed back). Each test warms up (the prefill, or 8 decode steps), then runs --reps times;
t/s is mean ± stddev.

Used by bench/llm_bench.py; the helpers config_of(), params_of() and decode_bytes_per_token()
(no torch needed) give the driver the model size and the decode roof's bytes per token.
"""
import argparse
import json
import math
import statistics
import sys
import time

GPT2_DEFAULT = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257,
                "n_positions": 1024, "layer_norm_epsilon": 1e-5}
LLAMA_DEFAULT = {"model_type": "llama", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "num_key_value_heads": 12, "intermediate_size": 2048, "vocab_size": 32000,
                 "max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
                 "tie_word_embeddings": True}


def config_of(arch=None, path=None):
    """A normalized config: from an HF config.json when given, else the built-in default of arch."""
    raw = dict(GPT2_DEFAULT if arch == "gpt2" else LLAMA_DEFAULT) if path is None else json.load(open(path))
    t = raw.get("model_type", arch)
    if t == "gpt2":
        d = raw["n_embd"]
        return {"arch": "gpt2", "d": d, "layers": raw["n_layer"], "heads": raw["n_head"], "kv_heads": raw["n_head"],
                "ffn": raw.get("n_inner") or 4 * d, "vocab": raw["vocab_size"], "positions": raw.get("n_positions", 1024),
                "eps": raw.get("layer_norm_epsilon", 1e-5), "tied": True}
    if t == "llama":
        heads = raw["num_attention_heads"]
        return {"arch": "llama", "d": raw["hidden_size"], "layers": raw["num_hidden_layers"], "heads": heads,
                "kv_heads": raw.get("num_key_value_heads") or heads, "ffn": raw["intermediate_size"],
                "vocab": raw["vocab_size"], "positions": raw.get("max_position_embeddings", 2048),
                "eps": raw.get("rms_norm_eps", 1e-6), "theta": raw.get("rope_theta", 10000.0),
                "tied": bool(raw.get("tie_word_embeddings", False))}
    raise SystemExit(f"torch_llm_peer: unsupported model_type {t!r} (gpt2 or llama)")


def _layer_params(c):
    d, f, hd = c["d"], c["ffn"], c["d"] // c["heads"]
    kv = c["kv_heads"] * hd
    if c["arch"] == "gpt2":  # c_attn, c_proj, c_fc, mlp c_proj (weights and biases), ln_1, ln_2
        return (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    return d * d + 2 * d * kv + d * d + 3 * d * f + 2 * d  # q, k, v, o, gate, up, down, 2 RMSNorms


def params_of(c):
    """Parameter count, as the checkpoint stores them (a tied lm head is not counted twice)."""
    embed = c["vocab"] * c["d"]
    head = 0 if c["tied"] else c["vocab"] * c["d"]
    pos = c["positions"] * c["d"] if c["arch"] == "gpt2" else 0
    final_norm = 2 * c["d"] if c["arch"] == "gpt2" else c["d"]
    return embed + pos + c["layers"] * _layer_params(c) + final_norm + head


def decode_bytes_per_token(c, bytes_per_param):
    """Weight bytes one decode step reads: every layer, the final norm and the lm head (the
    embedding table when tied); of the token and position embeddings only one row each."""
    head = c["vocab"] * c["d"]
    rows = 2 * c["d"] if c["arch"] == "gpt2" else c["d"]
    final_norm = 2 * c["d"] if c["arch"] == "gpt2" else c["d"]
    return (c["layers"] * _layer_params(c) + final_norm + head + rows) * bytes_per_param


def row(name, size_bytes, params, dtype, threads, test, mean, std):
    return (f"| {name} | {size_bytes / 2**20:.1f} MiB | {params / 1e6:.2f} M | {dtype} | {threads} | {test} | "
            f"{mean:.2f} ± {std:.2f} |")


def build(c, torch, nn, F):
    """GPT-2 or Llama with random weights (std 0.02) and a preallocated KV cache."""
    d, heads, kv_heads = c["d"], c["heads"], c["kv_heads"]
    hd = d // heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            if c["arch"] == "gpt2":
                self.ln_1, self.ln_2 = nn.LayerNorm(d, eps=c["eps"]), nn.LayerNorm(d, eps=c["eps"])
                self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
                self.c_fc, self.mlp_proj = nn.Linear(d, c["ffn"]), nn.Linear(c["ffn"], d)
            else:
                self.in_norm, self.post_norm = nn.Parameter(torch.ones(d)), nn.Parameter(torch.ones(d))
                self.q = nn.Linear(d, d, bias=False)
                self.k = nn.Linear(d, kv_heads * hd, bias=False)
                self.v = nn.Linear(d, kv_heads * hd, bias=False)
                self.o = nn.Linear(d, d, bias=False)
                self.gate = nn.Linear(d, c["ffn"], bias=False)
                self.up = nn.Linear(d, c["ffn"], bias=False)
                self.down = nn.Linear(c["ffn"], d, bias=False)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(c["vocab"], d)
            if c["arch"] == "gpt2":
                self.pos = nn.Embedding(c["positions"], d)
                self.ln_f = nn.LayerNorm(d, eps=c["eps"])
            else:
                self.norm = nn.Parameter(torch.ones(d))
                inv = 1.0 / (c["theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
                angles = torch.outer(torch.arange(c["positions"], dtype=torch.float32), inv)
                self.register_buffer("cos", torch.cat([angles.cos()] * 2, -1), persistent=False)
                self.register_buffer("sin", torch.cat([angles.sin()] * 2, -1), persistent=False)
                if not c["tied"]:
                    self.lm_head = nn.Linear(d, c["vocab"], bias=False)
            self.blocks = nn.ModuleList(Block() for _ in range(c["layers"]))

        def rms(self, x, w):  # as HF's LlamaRMSNorm: in f32, back to the input dtype
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + c["eps"])).to(x.dtype) * w

        def rope(self, x, start):  # x {h, s, hd}, HF's rotate_half layout
            s = x.shape[1]
            cos, sin = self.cos[start:start + s].to(x.dtype), self.sin[start:start + s].to(x.dtype)
            x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
            return x * cos + torch.cat((-x2, x1), -1) * sin

        def forward(self, ids, start, cache_k, cache_v):
            """ids {s}: positions start..start+s-1; fills the cache; logits {voc} of the last position."""
            s = ids.shape[0]
            x = self.embed(ids)
            if c["arch"] == "gpt2":
                x = x + self.pos(torch.arange(start, start + s, device=ids.device))
            end = start + s
            mask = None
            if s > 1:
                mask = torch.full((s, end), float("-inf"), dtype=x.dtype, device=ids.device).triu(start + 1)
            for i, b in enumerate(self.blocks):
                if c["arch"] == "gpt2":
                    h = b.ln_1(x)
                    q, k, v = b.c_attn(h).split(d, dim=-1)
                else:
                    h = self.rms(x, b.in_norm)
                    q, k, v = b.q(h), b.k(h), b.v(h)
                q = q.view(s, heads, hd).transpose(0, 1)
                k = k.view(s, kv_heads, hd).transpose(0, 1)
                v = v.view(s, kv_heads, hd).transpose(0, 1)
                if c["arch"] == "llama":
                    q, k = self.rope(q, start), self.rope(k, start)
                cache_k[i, :, start:end] = k
                cache_v[i, :, start:end] = v
                keys, values = cache_k[i, :, :end], cache_v[i, :, :end]
                if kv_heads != heads:
                    keys = keys.repeat_interleave(heads // kv_heads, 0)
                    values = values.repeat_interleave(heads // kv_heads, 0)
                att = (q @ keys.transpose(1, 2)) * (1.0 / math.sqrt(hd))
                if mask is not None:
                    att = att + mask
                y = (att.softmax(-1) @ values).transpose(0, 1).reshape(s, d)
                if c["arch"] == "gpt2":
                    x = x + b.c_proj(y)
                    x = x + b.mlp_proj(F.gelu(b.c_fc(b.ln_2(x)), approximate="tanh"))
                else:
                    x = x + b.o(y)
                    h = self.rms(x, b.post_norm)
                    x = x + b.down(F.silu(b.gate(h)) * b.up(h))
            last = self.ln_f(x[-1:]) if c["arch"] == "gpt2" else self.rms(x[-1:], self.norm)
            head = self.embed.weight if c["tied"] or c["arch"] == "gpt2" else self.lm_head.weight
            return (last @ head.t())[0]

    model = Model()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=["gpt2", "llama"], default="gpt2")
    parser.add_argument("--config", help="an HF config.json (overrides --arch)")
    parser.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    parser.add_argument("--threads", "-t", type=int, default=1)
    parser.add_argument("-p", type=int, default=512, help="prompt tokens (0: no pp test)")
    parser.add_argument("-n", type=int, default=128, help="decoded tokens (0: no tg test)")
    parser.add_argument("--reps", "-r", type=int, default=3)
    parser.add_argument("--no-header", action="store_true")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (the threads column then names the device)")
    args = parser.parse_args()

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = config_of(args.arch, args.config)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    device = torch.device(args.device)
    model = build(c, torch, nn, F).to(dtype).to(device).eval()
    hd = c["d"] // c["heads"]
    capacity = max(args.p, args.n) + 1
    if capacity > c["positions"]:
        raise SystemExit(f"torch_llm_peer: {capacity} tokens exceed the model's {c['positions']} positions")
    cache_k = torch.zeros(c["layers"], c["kv_heads"], capacity, hd, dtype=dtype, device=device)
    cache_v = torch.zeros_like(cache_k)
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, c["vocab"], (max(args.p, 1),), generator=gen).to(device)
    where = args.threads if device.type == "cpu" else str(device) if device.index is not None else "cuda:0"

    def sync():  # a GPU runs asynchronously: the clock stops when its work has
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    bpp = 4 if args.dtype == "f32" else 2
    params = params_of(c)
    name = c["arch"]
    sys.stderr.write(f"torch_llm_peer: torch {torch.__version__} threads={torch.get_num_threads()} {name} {args.dtype}\n")

    def prefill():
        model(prompt, 0, cache_k, cache_v)

    def decode(n):
        token = prompt[:1]
        for i in range(n):
            token = model(token, i, cache_k, cache_v).argmax().view(1)

    if not args.no_header:
        print("| model | size | params | dtype | threads | test | t/s |")
        print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    tests = ([("pp%d" % args.p, prefill, prefill, args.p)] if args.p > 0 else []) + \
            ([("tg%d" % args.n, lambda: decode(args.n), lambda: decode(min(args.n, 8)), args.n)] if args.n > 0 else [])
    with torch.inference_mode():
        for test, fn, warm_up, tokens in tests:
            warm_up()
            rates = []
            for _ in range(max(1, args.reps)):
                sync()
                t0 = time.perf_counter()
                fn()
                sync()
                rates.append(tokens / (time.perf_counter() - t0))
            std = statistics.stdev(rates) if len(rates) > 1 else 0.0
            print(row(name, params * bpp, params, args.dtype, where, test, statistics.mean(rates), std), flush=True)


if __name__ == "__main__":
    main()
