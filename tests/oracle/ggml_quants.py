"""Reference decoders of GGUF's block formats and a minimal GGUF reader, for the quantized-model
oracles. Written from the format definitions (ggml-common.h's block structs, documented in
include/radix/quant.h), in numpy, independent of Radix.

  read_gguf(path) -> {name: (type name, row-major dims, bytes)}
  dequantize(type name, bytes, dims) -> float32 array of dims
"""
import struct

import numpy as np

# type id -> (name, elements per block, bytes per block)
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
         7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
         14: ("Q6_K", 256, 210), 30: ("BF16", 1, 2)}
BY_NAME = {v[0]: (k, v[1], v[2]) for k, v in TYPES.items()}


def read_gguf(path):
    """Tensor name -> (type name, row-major dims, raw bytes). Metadata is skipped."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"GGUF", path
    version, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    assert version in (2, 3)
    pos = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    alignment = 32

    def string(p):
        (n,) = struct.unpack_from("<Q", data, p)
        return data[p + 8:p + 8 + n].decode("utf-8", "replace"), p + 8 + n

    def skip(t, p):
        if t in sizes:
            return p + sizes[t]
        if t == 8:
            return string(p)[1]
        assert t == 9, t
        elem, count = struct.unpack_from("<IQ", data, p)
        p += 12
        if elem in sizes:
            return p + sizes[elem] * count
        for _ in range(count):
            p = skip(elem, p)
        return p

    for _ in range(n_kv):
        key, pos = string(pos)
        (t,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", data, pos)
        pos = skip(t, pos)
    infos = []
    for _ in range(n_tensors):
        name, pos = string(pos)
        (nd,) = struct.unpack_from("<I", data, pos)
        ne = struct.unpack_from("<%dQ" % nd, data, pos + 4)
        tid, offset = struct.unpack_from("<IQ", data, pos + 4 + 8 * nd)
        pos += 4 + 8 * nd + 12
        infos.append((name, list(ne), tid, offset))
    start = (pos + alignment - 1) // alignment * alignment
    out = {}
    for name, ne, tid, offset in infos:
        tname, block, block_bytes = TYPES[tid]
        count = int(np.prod(ne)) if ne else 1
        size = count // block * block_bytes
        out[name] = (tname, list(reversed(ne)), data[start + offset:start + offset + size])
    return out


def _f16(b, at):
    """The f16 at byte `at` of every block (b: uint8 {blocks, bytes}) as float32 {blocks, 1}."""
    return b[:, at:at + 2].copy().view("<f2").astype(np.float32)


def _q4_0(b):
    d = _f16(b, 0)
    qs = b[:, 2:18]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)  # low nibbles are elements 0..15
    return d * (q - 8)


def _q4_1(b):
    d, m = _f16(b, 0), _f16(b, 2)
    qs = b[:, 4:20]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)
    return d * q + m


def _high_bits(qh4):
    """qh: 4 bytes per block, a little-endian u32 whose bit j is element j's fifth bit."""
    bits = qh4.copy().view("<u4")  # {blocks, 1}
    return ((bits >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8)  # {blocks, 32}


def _q5_0(b):
    d = _f16(b, 0)
    hi = _high_bits(b[:, 2:6])
    qs = b[:, 6:22]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1) | (hi << 4)
    return d * (q.astype(np.float32) - 16)


def _q5_1(b):
    d, m = _f16(b, 0), _f16(b, 2)
    hi = _high_bits(b[:, 4:8])
    qs = b[:, 8:24]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1) | (hi << 4)
    return d * q.astype(np.float32) + m


def _q8_0(b):
    return _f16(b, 0) * b[:, 2:34].copy().view(np.int8).astype(np.float32)


def _k_scales(s):
    """The 8 six-bit scales and mins of a Q4_K/Q5_K super-block (s: uint8 {blocks, 12})."""
    s = s.astype(np.uint8)
    sc = np.empty((s.shape[0], 8), np.uint8)
    mn = np.empty((s.shape[0], 8), np.uint8)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc.astype(np.float32), mn.astype(np.float32)


def _q4_k(b):
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _k_scales(b[:, 4:16])
    qs = b[:, 16:144].reshape(-1, 4, 32)  # 4 chunks of 64 elements: low nibbles, then high nibbles
    q = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)  # sub-block j
    return ((d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]).reshape(-1, 256)


def _q5_k(b):
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _k_scales(b[:, 4:16])
    qh = b[:, 16:48]  # bit j of qh[l] is the fifth bit of element l of sub-block j
    qs = b[:, 48:176].reshape(-1, 4, 32)
    low = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(-1, 8, 32)
    high = ((qh[:, None, :] >> np.arange(8, dtype=np.uint8)[None, :, None]) & 1)
    q = (low | (high << 4)).astype(np.float32)
    return ((d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]).reshape(-1, 256)


def _q6_k(b):
    ql = b[:, 0:128].reshape(-1, 2, 64)   # per 128-element half: 64 bytes of low nibbles
    qh = b[:, 128:192].reshape(-1, 2, 32)  # per half: 32 bytes, four 2-bit fields each
    sc = b[:, 192:208].copy().view(np.int8).astype(np.float32).reshape(-1, 16)
    d = _f16(b, 208)
    parts = []
    for half in range(2):
        l, h = ql[:, half], qh[:, half]
        q1 = (l[:, :32] & 0x0F) | ((h & 3) << 4)
        q2 = (l[:, 32:] & 0x0F) | (((h >> 2) & 3) << 4)
        q3 = (l[:, :32] >> 4) | (((h >> 4) & 3) << 4)
        q4 = (l[:, 32:] >> 4) | (((h >> 6) & 3) << 4)
        parts += [q1, q2, q3, q4]  # elements 0-31, 32-63, 64-95, 96-127 of the half
    q = np.concatenate(parts, axis=1).astype(np.float32) - 32  # {blocks, 256}; 16 sub-blocks of 16
    return (d * np.repeat(sc, 16, axis=1)) * q


DECODERS = {"Q4_0": _q4_0, "Q4_1": _q4_1, "Q5_0": _q5_0, "Q5_1": _q5_1, "Q8_0": _q8_0, "Q4_K": _q4_k,
            "Q5_K": _q5_k, "Q6_K": _q6_k}


def dequantize(tname, raw, dims):
    """Decodes a stored tensor to float32 of `dims` (row-major)."""
    if tname == "F32":
        return np.frombuffer(raw, "<f4").reshape(dims).copy()
    if tname == "F16":
        return np.frombuffer(raw, "<f2").astype(np.float32).reshape(dims)
    if tname == "BF16":
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(dims)
    _, block, block_bytes = BY_NAME[tname]
    blocks = np.frombuffer(raw, np.uint8).reshape(-1, block_bytes)
    return DECODERS[tname](blocks).astype(np.float32).reshape(dims)
