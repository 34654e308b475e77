"""Simple quantizers to GGUF's block formats (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), in numpy, for the test
and benchmark models of tools/make_test_models.py, and llama.cpp's per-tensor recipes of its
Q8_0 / Q4_0 / Q4_K_M / Q5_K_M / Q6_K file types. The blocks are valid for any decoder of the
format; the scales are chosen plainly (round to nearest, no search), as llama.cpp's *_ref
quantizers do for the 32-element formats.

  quantize(type, array {rows, cols} f32) -> bytes
  recipe(file type, tensor name, layer, layers) -> the tensor's type ("Q6_K", "F32", ...)
"""
import numpy as np

FILE_TYPES = {"q8_0": 7, "q4_0": 2, "q4_k_m": 15, "q5_k_m": 17, "q6_k": 18}


def _f16(x):
    return np.asarray(x, np.float32).astype("<f2")


def _blocks(x, n):
    x = np.ascontiguousarray(x, np.float32)
    assert x.shape[-1] % n == 0, (x.shape, n)
    return x.reshape(-1, n)


def q8_0(x):
    b = _blocks(x, 32)
    amax = np.abs(b).max(1, keepdims=True)
    d = amax / 127
    inv = np.where(d > 0, 1 / np.where(d > 0, d, 1), 0)
    q = np.clip(np.round(b * inv), -127, 127).astype(np.int8)
    return np.concatenate([_f16(d).view(np.uint8), q.view(np.uint8)], 1).tobytes()


def q4_0(x):
    b = _blocks(x, 32)
    idx = np.abs(b).argmax(1)
    mx = b[np.arange(len(b)), idx][:, None]  # the signed value of largest magnitude
    d = mx / -8
    inv = np.where(d != 0, 1 / np.where(d != 0, d, 1), 0)
    q = np.minimum(15, np.floor(b * inv + 8.5)).astype(np.uint8)
    qs = q[:, :16] | (q[:, 16:] << 4)
    return np.concatenate([_f16(d).view(np.uint8), qs], 1).tobytes()


def _scale_min(b, levels):
    """Per 32-element sub-block of super-blocks b {n, 256}: 6-bit scales and mins with x ~ d*sc*q - dmin*m."""
    s = b.reshape(-1, 8, 32)
    lo = np.minimum(s.min(2), 0)
    hi = s.max(2)
    scale = (hi - lo) / levels
    mn = -lo
    d = scale.max(1, keepdims=True) / 63
    dmin = mn.max(1, keepdims=True) / 63
    d16, dmin16 = _f16(d), _f16(dmin)
    df, dminf = d16.astype(np.float32), dmin16.astype(np.float32)
    sc = np.clip(np.round(scale / np.where(df > 0, df, 1)), 0, 63).astype(np.uint8)
    m = np.clip(np.round(mn / np.where(dminf > 0, dminf, 1)), 0, 63).astype(np.uint8)
    step = (df * sc)[:, :, None]
    q = np.clip(np.round((s + (dminf * m)[:, :, None]) / np.where(step > 0, step, 1)), 0, levels).astype(np.uint8)
    q[np.broadcast_to(step, q.shape) == 0] = 0
    packed = np.zeros((len(b), 12), np.uint8)
    packed[:, 0:4] = (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6)
    packed[:, 4:8] = (m[:, :4] & 63) | ((m[:, 4:] >> 4) << 6)
    packed[:, 8:12] = (sc[:, 4:] & 0x0F) | ((m[:, 4:] & 0x0F) << 4)
    return d16, dmin16, packed, q


def q4_k(x):
    b = _blocks(x, 256)
    d, dmin, scales, q = _scale_min(b, 15)
    q = q.reshape(-1, 4, 2, 32)
    qs = (q[:, :, 0] | (q[:, :, 1] << 4)).reshape(-1, 128)
    return np.concatenate([d.view(np.uint8), dmin.view(np.uint8), scales, qs], 1).tobytes()


def q5_k(x):
    b = _blocks(x, 256)
    d, dmin, scales, q = _scale_min(b, 31)  # q {n, 8, 32}
    low = (q & 0x0F).reshape(-1, 4, 2, 32)
    qs = (low[:, :, 0] | (low[:, :, 1] << 4)).reshape(-1, 128)
    high = (q >> 4) & 1
    qh = np.zeros((len(b), 32), np.uint8)
    for j in range(8):
        qh |= high[:, j] << j
    return np.concatenate([d.view(np.uint8), dmin.view(np.uint8), scales, qh, qs], 1).tobytes()


def q6_k(x):
    b = _blocks(x, 256)
    s = b.reshape(-1, 16, 16)
    amax_i = np.abs(s).argmax(2)
    mx = np.take_along_axis(s, amax_i[:, :, None], 2)[:, :, 0]
    scale = mx / -32  # signed, as the 32-element formats: the extreme maps to -32
    big = np.abs(scale).argmax(1)
    smax = scale[np.arange(len(b)), big][:, None]
    d = smax / -128
    d16 = _f16(d)
    df = d16.astype(np.float32)
    sc = np.clip(np.round(scale / np.where(df != 0, df, 1)), -128, 127).astype(np.int8)
    step = (df * sc)[:, :, None]
    q = np.clip(np.round(s / np.where(step != 0, step, 1)), -32, 31) + 32
    q[np.broadcast_to(step, q.shape) == 0] = 32
    q = q.astype(np.uint8).reshape(-1, 2, 128)  # two halves of 128
    ql = np.zeros((len(b), 2, 64), np.uint8)
    qh = np.zeros((len(b), 2, 32), np.uint8)
    for part in range(4):  # elements 32*part .. of each half
        v = q[:, :, 32 * part:32 * part + 32]
        if part < 2:
            ql[:, :, 32 * part:32 * part + 32] |= v & 0x0F
        else:
            ql[:, :, 32 * (part - 2):32 * (part - 2) + 32] |= (v & 0x0F) << 4
        qh |= ((v >> 4) & 3) << (2 * part)
    return np.concatenate([ql.reshape(-1, 128), qh.reshape(-1, 64), sc.view(np.uint8), d16.view(np.uint8)],
                          1).tobytes()


QUANTIZERS = {"Q8_0": q8_0, "Q4_0": q4_0, "Q4_K": q4_k, "Q5_K": q5_k, "Q6_K": q6_k}
BLOCK = {"Q8_0": 32, "Q4_0": 32, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256}


def quantize(type, x):
    return QUANTIZERS[type](x)


def _more_bits(layer, layers):
    """llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def recipe(file_type, name, layer, layers, cols):
    """The type llama.cpp's file type gives a 2-D weight (a simplified llama_tensor_get_type:
    output Q6_K, attn_v / ffn_down Q6_K in the layers of _more_bits for the K mixes, attn_qkv Q5_K
    in Q4_K_M); F32 for 1-D tensors; Q8_0 where the row is not a whole number of 256-blocks."""
    base = {"q8_0": "Q8_0", "q4_0": "Q4_0", "q4_k_m": "Q4_K", "q5_k_m": "Q5_K", "q6_k": "Q6_K"}[file_type]
    if name == "output.weight" and file_type != "q8_0":
        t = "Q6_K"
    elif file_type in ("q4_k_m", "q5_k_m") and layer >= 0 and (".attn_v." in name or ".ffn_down." in name) \
            and _more_bits(layer, layers):
        t = "Q6_K"
    elif file_type == "q4_k_m" and ".attn_qkv." in name:
        t = "Q5_K"
    else:
        t = base
    if cols % BLOCK[t] != 0:
        t = "Q8_0" if cols % 32 == 0 else "F32"
    return t
