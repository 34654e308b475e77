#!/usr/bin/python3
"""Writes the starting seeds of the loader fuzz targets (small, valid files of every feature):
tests/fuzz/make_seeds.py DIR writes DIR/safetensors/* and DIR/gguf/*. The committed corpora
(tests/fuzz/safetensors, tests/fuzz/gguf) are these seeds after a fuzzing session and a set-cover
merge (README, robustness): writing the seeds there again only adds files."""
import hashlib
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from gguf_writer import GGML_TYPES, GGUFWriter, Value  # noqa: E402


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + data


def st_seeds():
    f = np.arange(6, dtype=np.float32) - 2.5
    yield safetensors([("w", "F32", [2, 3], f.tobytes())], {"format": "pt"})
    yield safetensors([
        ("a.f64", "F64", [2], np.array([1.5, -2], np.float64).tobytes()),
        ("b.f16", "F16", [3], f[:3].astype(np.float16).tobytes()),
        ("c.bf16", "BF16", [1, 2], b"\x80\x3f\x00\xc0"),
        ("d.i64", "I64", [1], struct.pack("<q", -7)),
        ("e.i32", "I32", [2], struct.pack("<ii", 1, 2)),
        ("f.i16", "I16", [1], struct.pack("<h", 3)),
        ("g.i8", "I8", [2], b"\x01\xff"),
        ("h.u8", "U8", [2], b"\x00\xff"),
        ("i.bool", "BOOL", [2], b"\x00\x01"),
        ("j.f8", "F8_E4M3", [2], b"\x38\x40"),
        ("k.scalar", "F32", [], struct.pack("<f", 5)),
        ("l.empty", "F32", [0, 4], b""),
        ("m.u16", "U16", [1], b"\x01\x00"),
        ("n.u32", "U32", [1], b"\x01\x00\x00\x00"),
        ("o.u64", "U64", [1], b"\x01" + b"\x00" * 7),
        ("p.f8", "F8_E5M2", [1], b"\x3c"),
    ])
    yield safetensors([])
    yield safetensors([("h.0.attn.c_attn.weight", "F32", [2, 6], np.zeros(12, np.float32).tobytes()),
                       ("h.0.attn.c_attn.bias", "F32", [6], np.ones(6, np.float32).tobytes())],
                      {"format": "pt", "note": "gpt2"})
    # A config.json (the same target parses its input as one too).
    yield json.dumps({"model_type": "gpt2", "n_embd": 8, "n_layer": 2, "layer_norm_epsilon": 1e-5,
                      "architectures": ["GPT2LMHeadModel"], "task_specific_params": {"a": {"b": [1, 2]}},
                      "n_inner": None, "tie_word_embeddings": True, "big": 18446744073709551615}).encode()


def gguf_seeds():
    w = GGUFWriter(version=3)
    w.add("general.architecture", "llama")
    w.add("general.name", "tiny")
    for key, v in [("embedding_length", 8), ("block_count", 1), ("attention.head_count", 2),
                   ("attention.head_count_kv", 1), ("feed_forward_length", 16), ("context_length", 32)]:
        w.add("llama." + key, Value("UINT32", v))
    w.add("llama.rope.freq_base", 10000.0)
    w.add("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add("tokenizer.ggml.model", "llama")
    w.add("tokenizer.ggml.tokens", ["<unk>", "<s>", "</s>", "a", "b"])
    w.add("tokenizer.ggml.scores", Value("ARRAY", [0.0, 0.0, 0.0, -1.0, -2.0], elem="FLOAT32"))
    w.add("tokenizer.ggml.token_type", Value("ARRAY", [2, 3, 3, 1, 1], elem="INT32"))
    w.add("tokenizer.ggml.bos_token_id", Value("UINT32", 1))
    w.add_tensor("token_embd.weight", np.ones((5, 8)), "F16")
    w.add_tensor("blk.0.attn_norm.weight", np.ones(8), "F32")
    w.add_tensor("blk.0.attn_q.weight", np.ones((8, 8)), "BF16")
    w.add_tensor("output_norm.weight", np.ones(8), "F32")
    yield w.to_bytes()

    g = GGUFWriter(version=2, alignment=64)
    g.add("general.architecture", "gpt2")
    g.add("gpt2.embedding_length", Value("UINT32", 4))
    g.add("gpt2.block_count", Value("UINT32", 1))
    g.add("gpt2.attention.head_count", Value("UINT32", 1))
    g.add("tokenizer.ggml.model", "gpt2")
    g.add("tokenizer.ggml.merges", ["a b", "ab c"])
    g.add_tensor("token_embd.weight", np.ones((3, 4)), "F32")
    g.add_tensor("position_embd.weight", np.ones((2, 4)), "F32")
    g.add_tensor("blk.0.attn_qkv.bias", np.ones(12), "F32")
    yield g.to_bytes()

    t = GGUFWriter(version=3, alignment=8)
    for name, (_, block, block_bytes) in GGML_TYPES.items():
        t.add_tensor_bytes(name, [1, block], name, bytes(block_bytes))
    yield t.to_bytes()

    # Quantized tensors of every block format Radix computes in: random quants, finite f16 scales
    # (0.5, and the largest), then one NaN scale (rejected by checkBlocks).
    rng = np.random.default_rng(18)
    scales = {"Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q4_K": [0, 2], "Q5_K": [0, 2],
              "Q6_K": [208]}
    for poison in (False, True):
        q = GGUFWriter(version=3)
        q.add("general.architecture", "llama")
        for name, offsets in scales.items():
            _, block, block_bytes = GGML_TYPES[name]
            raw = bytearray(rng.integers(0, 256, 2 * block_bytes, dtype=np.uint8).tobytes())
            for b in range(2):
                for i, off in enumerate(offsets):
                    raw[b * block_bytes + off:b * block_bytes + off + 2] = struct.pack("<H", 0x3800 if i == 0 else 0x7bff)
            if poison:
                raw[block_bytes + offsets[-1]:block_bytes + offsets[-1] + 2] = struct.pack("<H", 0x7e00)
            q.add_tensor_bytes("blk.0." + name.lower() + ".weight", [2, block], name, bytes(raw))
        yield q.to_bytes()

    v = GGUFWriter(version=3)
    v.add("u8", Value("UINT8", 1)); v.add("i8", Value("INT8", -1)); v.add("u16", Value("UINT16", 2))
    v.add("i16", Value("INT16", -2)); v.add("u32", Value("UINT32", 3)); v.add("i32", Value("INT32", -3))
    v.add("f32", Value("FLOAT32", 0.5)); v.add("b", True); v.add("s", "x")
    v.add("u64", Value("UINT64", 2**64 - 1)); v.add("i64", Value("INT64", -4)); v.add("f64", Value("FLOAT64", 0.25))
    v.add("nested", Value("ARRAY", [[1, 2], [3]], elem="ARRAY"))
    v.add("empty", Value("ARRAY", [], elem="STRING"))
    v.add("bools", [True, False])
    v.add_tensor("i32", np.array([1, 2]), "I32")
    v.add_tensor("i8", np.array([1, 2, 3]), "I8")
    v.add_tensor("f64", np.array([1.0]), "F64")
    yield v.to_bytes()


def write(folder, blobs):
    os.makedirs(folder, exist_ok=True)
    for blob in blobs:
        with open(os.path.join(folder, hashlib.sha1(blob).hexdigest()), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__)
    write(os.path.join(out, "safetensors"), st_seeds())
    write(os.path.join(out, "gguf"), gguf_seeds())
