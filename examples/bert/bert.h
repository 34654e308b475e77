#pragma once
// A BERT-style encoder (Hugging Face BertModel: embeddings + positions + token types + LayerNorm,
// post-norm encoder layers with separate query/key/value, tanh pooler) over radix::nn, shared by
// examples/bert/main.cpp and the tests. Field names are BertModel's state_dict names, so its
// checkpoint loads with io::loadInto as it is (a BertFor... checkpoint: LoadSpec::prefixes "bert.").
#include <radix/io.h>
#include <radix/nn.h>
#include <radix/radix.h>

#include <optional>
#include <string>
#include <vector>

namespace bert {

namespace nn = radix::nn;
using radix::DType;
using radix::Shape;
using radix::Tensor;

struct Config {
  int64_t vocab = 100, width = 32, layers = 2, heads = 4, intermediate = 64, positions = 64, typeVocab = 2;
  double eps = 1e-12;
};

struct Embeddings {
  nn::Embedding word_embeddings;
  nn::Embedding position_embeddings;
  nn::Embedding token_type_embeddings;
  nn::LayerNorm LayerNorm;

  /// ids, types {b,s}:int -> {b,s,d}
  Tensor forward(Tensor ids, Tensor types) const {
    const Tensor words = word_embeddings.forward(ids.withTags({"b", "s"}));
    const Tensor positions = Tensor::iota(Shape({ids.dim(1)}, DType::i32).withTags({"s"}), "s");
    const Tensor x = words.add(position_embeddings.forward(positions).broad(words.shape()))
                         .add(token_type_embeddings.forward(types.withTags({"b", "s"})));
    return LayerNorm.forward(x);
  }
};

/// Dense + residual + LayerNorm (BertSelfOutput and BertOutput).
struct DenseResidualNorm {
  nn::Linear dense;
  nn::LayerNorm LayerNorm;
  Tensor forward(Tensor x, Tensor residual) const { return LayerNorm.forward(dense.forward(x).add(residual)); }
};

struct Attention {
  nn::MultiHeadAttention self;  // query, key, value
  DenseResidualNorm output;
};

struct Intermediate {
  nn::Linear dense;
};

struct Layer {
  Attention attention;
  Intermediate intermediate;
  DenseResidualNorm output;

  /// {b,s,d}, lengths {b}:i32 -> {b,s,d}
  Tensor forward(Tensor x, Tensor lengths) const {
    const Tensor h = attention.output.forward(attention.self.forward(x, lengths), x);
    return output.forward(intermediate.dense.forward(h).geluErf(), h);
  }
};

struct Encoder {
  std::vector<Layer> layer;
};

struct Pooler {
  nn::Linear dense;
};

/// What BertModel returns.
struct Output {
  Tensor last_hidden_state;  // {b,s,d}
  Tensor pooler_output;      // {b,d}
};

struct Bert {
  Embeddings embeddings;
  Encoder encoder;
  Pooler pooler;

  /// ids, types {b,s}:int and lengths {b}:i32 (keys at positions >= length are padding) ->
  /// {last_hidden_state {b,s,d}, pooler_output {b,d}}
  Output forward(Tensor ids, Tensor types, Tensor lengths) const {
    Tensor x = embeddings.forward(ids, types);
    const Tensor len = lengths.withTags({"b"});
    for (const Layer& l : encoder.layer) x = radix::call(l, &Layer::forward, x, len);
    return {x, pooler.dense.forward(x.choose1d("s", 0)).tanh()};
  }
};

inline Tensor placeholder(std::vector<int64_t> dims) { return Tensor(Shape(dims, DType::f32)); }
inline nn::Linear linear(int64_t out, int64_t in) { return {placeholder({out, in}), placeholder({out})}; }
inline nn::LayerNorm layerNorm(int64_t d, double eps) { return {placeholder({d}), placeholder({d}), eps}; }

/// A Bert of shape-only placeholders (for io::loadInto, or random weights).
inline Bert placeholders(const Config& c) {
  Bert m;
  m.embeddings = {{placeholder({c.vocab, c.width})}, {placeholder({c.positions, c.width})},
                  {placeholder({c.typeVocab, c.width})}, layerNorm(c.width, c.eps)};
  for (int64_t i = 0; i < c.layers; ++i) {
    Layer l;
    l.attention.self = {.query = linear(c.width, c.width), .key = linear(c.width, c.width),
                        .value = linear(c.width, c.width), .heads = c.heads};
    l.attention.output = {linear(c.width, c.width), layerNorm(c.width, c.eps)};
    l.intermediate.dense = linear(c.intermediate, c.width);
    l.output = {linear(c.width, c.intermediate), layerNorm(c.width, c.eps)};
    m.encoder.layer.push_back(l);
  }
  m.pooler.dense = linear(c.width, c.width);
  return m;
}

/// The config of a BertModel checkpoint from its tensor shapes; `heads` is not stored in the
/// tensors (config.json's num_attention_heads): pass it.
inline Config configOf(const radix::io::Checkpoint& ckpt, int64_t heads, double eps = 1e-12) {
  auto dims = [&](const std::string& name) {
    const radix::io::TensorInfo* t = ckpt.find(name);
    if (!t || t->dims.size() != 2) throw radix::Error("[bert] " + ckpt.folder() + ": no 2-D tensor \"" + name + "\"");
    return t->dims;
  };
  Config c;
  c.vocab = dims("embeddings.word_embeddings.weight")[0];
  c.width = dims("embeddings.word_embeddings.weight")[1];
  c.positions = dims("embeddings.position_embeddings.weight")[0];
  c.typeVocab = dims("embeddings.token_type_embeddings.weight")[0];
  c.intermediate = dims("encoder.layer.0.intermediate.dense.weight")[0];
  c.layers = 0;
  while (ckpt.find("encoder.layer." + std::to_string(c.layers) + ".attention.self.query.weight")) ++c.layers;
  c.heads = heads;
  c.eps = eps;
  return c;
}

}  // namespace bert
