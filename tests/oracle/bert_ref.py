#!/usr/bin/python3
"""PyTorch references of encoders, with random weights, independent of Radix:
 - a BERT-style encoder written with torch.nn modules named as Hugging Face's BertModel
   (embeddings + positions + token types + LayerNorm, post-norm layers with separate
   query/key/value and a key-padding mask, exact GELU, tanh pooler);
 - torch.nn.TransformerEncoderLayer itself, post-norm (relu) and pre-norm (norm_first, gelu),
   with src_key_padding_mask.
  tests/oracle/bert_ref.py DIR
writes DIR/bert.safetensors (state_dict), DIR/bert_io.safetensors ("input_ids", "token_type_ids",
"lengths", "last_hidden_state", "pooler_output"), DIR/encoder_post.safetensors and
DIR/encoder_pre.safetensors (state_dicts) and DIR/encoder_io.safetensors ("x", "lengths",
"post", "pre")."""
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

VOCAB, WIDTH, LAYERS, HEADS, INTERMEDIATE, POSITIONS, TYPES, EPS = 50, 24, 2, 3, 40, 16, 2, 1e-12


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, WIDTH)
        self.position_embeddings = nn.Embedding(POSITIONS, WIDTH)
        self.token_type_embeddings = nn.Embedding(TYPES, WIDTH)
        self.LayerNorm = nn.LayerNorm(WIDTH, eps=EPS)

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1])
        return self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(pos)[None] +
                              self.token_type_embeddings(types))


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(WIDTH, WIDTH) for _ in range(3))

    def forward(self, x, keep):  # keep {b, s}: True for real tokens
        b, s, _ = x.shape
        hd = WIDTH // HEADS
        q, k, v = (p(x).reshape(b, s, HEADS, hd).transpose(1, 2) for p in (self.query, self.key, self.value))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        return (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, WIDTH)


class DenseResidualNorm(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.dense = nn.Linear(inner, WIDTH)
        self.LayerNorm = nn.LayerNorm(WIDTH, eps=EPS)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        setattr(self, "self", SelfAttention())
        self.output = DenseResidualNorm(WIDTH)


class Intermediate(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(WIDTH, INTERMEDIATE)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = Attention()
        self.intermediate = Intermediate()
        self.output = DenseResidualNorm(INTERMEDIATE)

    def forward(self, x, keep):
        h = self.attention.output(getattr(self.attention, "self")(x, keep), x)
        return self.output(torch.nn.functional.gelu(self.intermediate.dense(h)), h)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([Layer() for _ in range(LAYERS)])


class Pooler(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(WIDTH, WIDTH)


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.encoder = Encoder()
        self.pooler = Pooler()

    def forward(self, ids, types, lengths):
        keep = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
        x = self.embeddings(ids, types)
        for layer in self.encoder.layer:
            x = layer(x, keep)
        return x, torch.tanh(self.pooler.dense(x[:, 0]))


def randomize_norms(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = Bert().eval()
    randomize_norms(model)
    ids = torch.randint(0, VOCAB, (2, 7))
    types = torch.randint(0, TYPES, (2, 7))
    lengths = torch.tensor([7, 4])
    with torch.no_grad():
        hidden, pooled = model(ids, types, lengths)
    safetensors_io.write(os.path.join(out, "bert.safetensors"), model.state_dict())
    safetensors_io.write(os.path.join(out, "bert_io.safetensors"),
                         {"input_ids": ids.to(torch.int32), "token_type_ids": types.to(torch.int32), "lengths": lengths.to(torch.int32),
                          "last_hidden_state": hidden, "pooler_output": pooled})

    # torch.nn.TransformerEncoderLayer. Gradients stay on so that PyTorch takes its reference
    # path (the inference fast path writes zeros at padded positions).
    x = torch.randn(2, 5, 12)
    lengths = torch.tensor([5, 3])
    pad = torch.arange(5)[None, :] >= lengths[:, None]
    results = {"x": x, "lengths": lengths.to(torch.int32)}
    for name, norm_first, activation in (("post", False, "relu"), ("pre", True, "gelu")):
        layer = nn.TransformerEncoderLayer(12, 3, dim_feedforward=20, dropout=0.0, activation=activation,
                                           batch_first=True, norm_first=norm_first).eval()
        randomize_norms(layer)
        results[name] = layer(x, src_key_padding_mask=pad).detach()
        safetensors_io.write(os.path.join(out, "encoder_%s.safetensors" % name), layer.state_dict())
    safetensors_io.write(os.path.join(out, "encoder_io.safetensors"), results)


if __name__ == "__main__":
    main()
