#pragma once
// A GPT-2-shaped model (d=768, 12 heads, 12 blocks, MLP 3072, vocab 50257, 1024 positions) built
// from radix::nn layers, for compile-time benchmarks. Weights may be placeholders: compile needs
// shapes only. Tags: "s" tokens, "d" model width, "f" MLP width, "voc" vocabulary.
#include <radix/nn.h>
#include <radix/radix.h>

namespace gpt2 {

using radix::DType;
using radix::Shape;
using radix::Tensor;
namespace nn = radix::nn;

/// Causal self-attention: x {s, d} -> {s, d}.
struct Attention {
  nn::Linear q, k, v, o;
  int64_t heads;
  Tensor forward(Tensor x) const {
    auto split = [&](const nn::Linear& l, radix::Tag positions) {
      return l.forward(x).splitAxis("d", {{"h", heads}, {"hd", -1}}).rename({{"s", positions}});
    };
    nn::AttentionOptions causal;
    causal.causal = true;
    Tensor mixed = nn::sdpa(split(q, "q"), split(k, "k"), split(v, "k"), causal);  // {q, h, hd}
    return o.forward(mixed.rename({{"q", "s"}}).mergeAxes({"h", "hd"}, "d"));
  }
};

struct Block {
  nn::LayerNorm ln1, ln2;
  Attention attn;
  nn::GeluMlp mlp;  // d -> f -> d
  Tensor forward(Tensor x) const {
    x = x.add(attn.forward(ln1.forward(x)));
    return x.add(mlp.forward(ln2.forward(x)));
  }
};

struct Model {
  nn::Embedding wte;  // {voc, d}
  Tensor wpe;         // {s=positions, d}
  std::vector<Block> blocks;
  nn::LayerNorm lnf;
  /// Token ids {s}:i32 -> logits {s, voc}.
  Tensor forward(Tensor ids) const {
    Tensor x = wte.forward(ids);
    x = x.add(wpe.slice1d("s", {.end = ids.dim("s")}));
    for (const Block& b : blocks) x = radix::call(b, &Block::forward, x);
    return radix::call(lnf, &nn::LayerNorm::forward, x).dot(wte.weight, {"d"});  // tied output embedding
  }
};

/// A model whose weights come from `make(shape)`: Tensor(shape) for placeholders, or buffers.
template <class Make>
Model build(const Make& make, int64_t layers, int64_t d = 768, int64_t heads = 12, int64_t vocab = 50257,
            int64_t positions = 1024) {
  auto t = [&](std::vector<int64_t> dims, std::initializer_list<radix::Tag> tags) {
    return make(Shape(dims, DType::f32).withTags(tags));
  };
  auto ln = [&] { return nn::LayerNorm{t({d}, {"d"}), t({d}, {"d"}), 1e-5}; };
  // Weights as GPT-2 stores them (Conv1D: {in, out}); the axis tagged `in` is contracted.
  auto lin = [&](int64_t i, int64_t o, radix::Tag in, radix::Tag out) {
    return nn::Linear{t({i, o}, {in, in == out ? radix::Tag("o") : out}), t({o}, {out}), in, out};
  };
  Model m;
  m.wte = nn::Embedding{t({vocab, d}, {"voc", "d"})};
  m.wpe = t({positions, d}, {"s", "d"});
  for (int64_t i = 0; i < layers; ++i)
    m.blocks.push_back(Block{ln(), ln(),
                             Attention{lin(d, d, "d", "d"), lin(d, d, "d", "d"), lin(d, d, "d", "d"),
                                       lin(d, d, "d", "d"), heads},
                             nn::GeluMlp{lin(d, 4 * d, "d", "f"), lin(4 * d, d, "f", "d")}});
  m.lnf = ln();
  return m;
}

/// Shape-only weights for `layers` blocks of GPT-2 small.
inline Model placeholders(int64_t layers) {
  return build([](const Shape& s) { return Tensor(s); }, layers);
}

}  // namespace gpt2
