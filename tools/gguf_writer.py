#!/usr/bin/python3
"""A small GGUF writer (v2 and v3, little-endian) for tests, test models and fuzz seeds.

    import sys; sys.path.insert(0, "tools")
    from gguf_writer import GGUFWriter, Value
    w = GGUFWriter(version=3, alignment=32)
    w.add("general.architecture", "llama")                 # str -> STRING
    w.add("llama.block_count", Value("UINT32", 2))          # explicit type
    w.add("llama.rope.freq_base", 10000.0)                  # float -> FLOAT32
    w.add("tokenizer.ggml.tokens", ["<unk>", "a", "b"])     # list -> ARRAY of the first item's type
    w.add("nested", Value("ARRAY", [[1, 2], [3]], elem="ARRAY"))
    w.add_tensor("token_embd.weight", numpy_array, "F16")  # row-major dims; ne[] is written reversed
    w.add_tensor_bytes("blk.0.attn_q.weight", [64, 64], "Q8_0", raw)  # any ggml type, raw blocks
    w.write("model.gguf")  # or w.to_bytes()
    add_vocab(w, "gpt2", tokens, pre="gpt-2", merges=["a b"], types=[1, 1, 3], eos=2)  # tokenizer.ggml.*

Metadata value types: UINT8 INT8 UINT16 INT16 UINT32 INT32 FLOAT32 BOOL STRING ARRAY UINT64 INT64
FLOAT64. Tensor types: every ggml type of src/io/gguf.cpp (F32, F16 and BF16 are converted from
numpy arrays; the others take raw bytes). Python ints default to INT32 (INT64 when out of range),
floats to FLOAT32, bools to BOOL.

Command line: `gguf_writer.py SPEC.json OUT.gguf` where SPEC is
{"version": 3, "alignment": 32, "metadata": {"key": value or {"type": T, "value": v, "elem": E}},
 "tensors": [{"name": n, "dims": [..], "type": "F32", "values": [..]} ...]}.
"""
import json
import struct
import sys

import numpy as np

VALUE_TYPES = {
    "UINT8": (0, "<B"), "INT8": (1, "<b"), "UINT16": (2, "<H"), "INT16": (3, "<h"),
    "UINT32": (4, "<I"), "INT32": (5, "<i"), "FLOAT32": (6, "<f"), "BOOL": (7, "<?"),
    "STRING": (8, None), "ARRAY": (9, None), "UINT64": (10, "<Q"), "INT64": (11, "<q"),
    "FLOAT64": (12, "<d"),
}

# name: (id, elements per block, bytes per block), as ggml defines them.
GGML_TYPES = {
    "F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20),
    "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q8_1": (9, 32, 36),
    "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176),
    "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292), "IQ2_XXS": (16, 256, 66), "IQ2_XS": (17, 256, 74),
    "IQ3_XXS": (18, 256, 98), "IQ1_S": (19, 256, 50), "IQ4_NL": (20, 32, 18), "IQ3_S": (21, 256, 110),
    "IQ2_S": (22, 256, 82), "IQ4_XS": (23, 256, 136), "I8": (24, 1, 1), "I16": (25, 1, 2),
    "I32": (26, 1, 4), "I64": (27, 1, 8), "F64": (28, 1, 8), "IQ1_M": (29, 256, 56),
    "BF16": (30, 1, 2), "TQ1_0": (34, 256, 54), "TQ2_0": (35, 256, 66), "MXFP4": (39, 32, 17),
}

NUMPY_TYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I8": np.int8,
               "I16": np.int16, "I32": np.int32, "I64": np.int64}


class Value:
    """A metadata value with an explicit type (elem: the element type of an ARRAY)."""

    def __init__(self, type, value, elem=None):
        assert type in VALUE_TYPES, type
        self.type, self.value, self.elem = type, value, elem


def infer(value):
    if isinstance(value, Value):
        return value
    if isinstance(value, (bool, np.bool_)):
        return Value("BOOL", bool(value))
    if isinstance(value, (int, np.integer)):
        return Value("INT32" if -2**31 <= value < 2**31 else "INT64", int(value))
    if isinstance(value, (float, np.floating)):
        return Value("FLOAT32", float(value))
    if isinstance(value, (str, bytes)):
        return Value("STRING", value)
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
        elem = infer(items[0]).type if items else "INT32"
        return Value("ARRAY", items, elem)
    raise TypeError(f"no GGUF type for {type(value)}")


def to_bf16_bytes(array):
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded.astype("<u2").tobytes()


class GGUFWriter:
    def __init__(self, version=3, alignment=32):
        assert version in (1, 2, 3), version  # 1 only to write files that readers must reject
        self.version, self.alignment = version, alignment
        self.metadata = []  # (key, Value)
        self.tensors = []   # (name, row-major dims, type name, bytes)
        if alignment != 32:
            self.add("general.alignment", Value("UINT32", alignment))

    def add(self, key, value):
        self.metadata.append((key, infer(value)))

    def add_tensor(self, name, array, type="F32"):
        array = np.asarray(array)
        if type == "BF16":
            data = to_bf16_bytes(array)
        elif type in NUMPY_TYPES:
            data = np.ascontiguousarray(array, dtype=NUMPY_TYPES[type]).astype(np.dtype(NUMPY_TYPES[type]).newbyteorder("<")).tobytes()
        else:
            raise ValueError(f"add_tensor converts F32/F16/BF16/F64/I*; use add_tensor_bytes for {type}")
        self.add_tensor_bytes(name, list(array.shape), type, data)

    def add_tensor_bytes(self, name, dims, type, data, check=True):
        if check:
            _, block, block_bytes = GGML_TYPES[type]
            count = 1
            for d in dims[:-1]:
                count *= d
            row = dims[-1] if dims else 1
            assert row % block == 0, f"{name}: row of {row} is not a multiple of {type}'s block {block}"
            assert len(data) == count * row // block * block_bytes, f"{name}: {len(data)} bytes for {dims} {type}"
        self.tensors.append((name, list(dims), type, bytes(data)))

    # ---- encoding ----
    def _count(self, n):
        return struct.pack("<Q" if self.version >= 2 else "<I", n)

    def _string(self, s):
        b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
        return self._count(len(b)) + b

    def _value(self, v):
        code, fmt = VALUE_TYPES[v.type]
        if v.type == "STRING":
            return self._string(v.value)
        if v.type == "ARRAY":
            out = struct.pack("<I", VALUE_TYPES[v.elem][0]) + self._count(len(v.value))
            for item in v.value:
                if isinstance(item, Value):
                    inner = item
                elif v.elem == "ARRAY":
                    inner = infer(list(item))
                else:
                    inner = Value(v.elem, item)
                assert inner.type == v.elem, f"array of {v.elem} holds a {inner.type}"
                out += self._value(inner)
            return out
        return struct.pack(fmt, v.value)

    def to_bytes(self):
        out = bytearray(b"GGUF" + struct.pack("<I", self.version))
        out += self._count(len(self.tensors)) + self._count(len(self.metadata))
        for key, v in self.metadata:
            out += self._string(key) + struct.pack("<I", VALUE_TYPES[v.type][0]) + self._value(v)
        offset = 0
        offsets = []
        for name, dims, type, data in self.tensors:
            offsets.append(offset)
            out += self._string(name) + struct.pack("<I", len(dims))
            for d in reversed(dims):  # ne[0] is the innermost (row) dimension
                out += self._count(d)
            out += struct.pack("<I", GGML_TYPES[type][0]) + struct.pack("<Q", offset)
            offset += (len(data) + self.alignment - 1) // self.alignment * self.alignment
        out += b"\0" * (-len(out) % self.alignment)
        for (name, dims, type, data), at in zip(self.tensors, offsets):
            out += data + b"\0" * (-len(data) % self.alignment)
        return bytes(out)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.to_bytes())


# tokenizer.ggml.pre spellings that llama.cpp's loader (src/llama-vocab.cpp) accepts for BPE
# vocabularies and Radix reads; GPT-2 is "gpt-2" (not "gpt2"), Llama 3 "llama-bpe".
LLAMA_CPP_PRE = {
    "default", "gpt-2", "phi-2", "mpt", "olmo", "jais", "llama-bpe", "llama3", "llama-v3", "dbrx", "qwen2", "qwen35",
    "stablelm2", "starcoder", "refact", "command-r", "smollm", "falcon", "deepseek-llm", "deepseek-coder", "deepseek-v3",
    "tekken", "gpt-4o", "llama4", "bloom", "poro-chat", "viking", "chatglm-bpe", "glm4", "seed-coder", "exaone", "minerva-7b",
}


def add_vocab(w, model, tokens, pre=None, scores=None, types=None, merges=None, bos=None, eos=None, unk=None,
              add_bos=None, add_space_prefix=None, chat_template=None):
    """Writes tokenizer.ggml.* with the types llama.cpp's loader requires: model / pre STRING,
    tokens and merges STRING arrays, scores FLOAT32 and token_type INT32 arrays as long as tokens,
    token ids UINT32, flags BOOL. model "gpt2" (byte-level BPE) needs merges and a pre spelling of
    LLAMA_CPP_PRE; "llama" (SentencePiece) gets pre "default"."""
    assert model in ("gpt2", "llama"), model
    if pre is None:
        pre = "default"
    assert pre in LLAMA_CPP_PRE, f"tokenizer.ggml.pre {pre!r} is not a llama.cpp spelling"
    assert len(set(tokens)) == len(tokens) and all(tokens), "tokens must be unique and non-empty"
    w.add("tokenizer.ggml.model", model)
    w.add("tokenizer.ggml.pre", pre)
    w.add("tokenizer.ggml.tokens", Value("ARRAY", list(tokens), elem="STRING"))
    if scores is not None:
        assert len(scores) == len(tokens)
        w.add("tokenizer.ggml.scores", Value("ARRAY", [float(x) for x in scores], elem="FLOAT32"))
    if types is not None:
        assert len(types) == len(tokens) and all(0 <= t <= 6 for t in types)
        w.add("tokenizer.ggml.token_type", Value("ARRAY", [int(t) for t in types], elem="INT32"))
    if model == "gpt2":
        assert merges is not None, "a gpt2 vocabulary needs merges"
    if merges is not None:
        w.add("tokenizer.ggml.merges", Value("ARRAY", list(merges), elem="STRING"))
    for key, id_ in (("bos", bos), ("eos", eos), ("unknown", unk)):
        if id_ is not None:
            assert 0 <= id_ < len(tokens), f"{key} id {id_} out of range"
            w.add(f"tokenizer.ggml.{key}_token_id", Value("UINT32", id_))
    if add_bos is not None:
        w.add("tokenizer.ggml.add_bos_token", bool(add_bos))
    if add_space_prefix is not None:
        w.add("tokenizer.ggml.add_space_prefix", bool(add_space_prefix))
    if chat_template is not None:
        w.add("tokenizer.chat_template", chat_template)


def from_spec(spec):
    w = GGUFWriter(spec.get("version", 3), spec.get("alignment", 32))
    for key, value in spec.get("metadata", {}).items():
        if isinstance(value, dict) and "type" in value:
            value = Value(value["type"], value["value"], value.get("elem"))
        w.add(key, value)
    for t in spec.get("tensors", []):
        values = np.asarray(t["values"], dtype=np.float64).reshape(t["dims"])
        w.add_tensor(t["name"], values, t.get("type", "F32"))
    return w


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        from_spec(json.load(f)).write(sys.argv[2])
