#pragma once
// A GPT-2-shaped model (d=768, 12 heads, 12 blocks, MLP 3072, vocab 50257) built from Radix's
// current ops, for compile-time benchmarks. Weights may be placeholders: compile needs shapes only.
// Missing until the op surface grows: token embedding lookup (gather) and the causal mask.
#include <radix/radix.h>

#include <cmath>

namespace gpt2 {

using radix::DType;
using radix::Shape;
using radix::Tensor;

struct LayerNorm {
  Tensor g, b;
  Tensor forward(Tensor x) const {
    const double inv = 1.0 / static_cast<double>(x.dim("d"));
    Tensor mean = x.sum("d").mulConstant(inv);
    Tensor centered = x.sub(mean);
    Tensor var = centered.mul(centered).sum("d").mulConstant(inv);
    Tensor normed = centered.mul(var.addConstant(1e-5).rsqrt());
    return normed.mul(g.broad(x.shape())).add(b.broad(x.shape()));
  }
};

struct Linear {
  Tensor w, b;  // w {i, o}, b {o}
  Tensor forward(Tensor x, radix::Tag out) const {
    Tensor y = x.dot(w, {"d"});
    return y.add(b.broad(y.shape())).withTags({"s", out});
  }
};

inline Tensor softmax(Tensor x, radix::Tag axis) {
  Tensor e = x.sub(x.max(axis)).exp();
  return e.div(e.sum(axis));
}

struct Attention {
  Linear q, k, v, o;
  int64_t heads;
  Tensor forward(Tensor x) const {
    const int64_t s = x.dim("s"), d = x.dim("d"), hd = d / heads;
    auto split = [&](Tensor t, radix::Tag seq) { return t.reshape({s, heads, hd}).withTags({seq, "h", "k"}); };
    Tensor qh = split(q.forward(x, "d"), "s");
    Tensor kh = split(k.forward(x, "d"), "t");
    Tensor vh = split(v.forward(x, "d"), "t");
    Tensor scores = qh.dot(kh, {"k"}).mulConstant(1.0 / std::sqrt(static_cast<double>(hd)));  // {h, s, t}
    Tensor mixed = softmax(scores, "t").dot(vh, {"t"});                                          // {h, s, k}
    Tensor merged = mixed.transpose({"s", "h", "k"}).reshape({s, d}).withTags({"s", "d"});
    return o.forward(merged, "d");
  }
};

struct Block {
  LayerNorm ln1, ln2;
  Attention attn;
  Linear fc, proj;
  Tensor forward(Tensor x) const {
    x = x.add(attn.forward(ln1.forward(x)));
    Tensor h = fc.forward(ln2.forward(x), "f");
    // GELU, tanh approximation.
    Tensor inner = h.add(h.mul(h).mul(h).mulConstant(0.044715)).mulConstant(0.7978845608028654);
    Tensor gelu = h.mul(inner.tanh().addConstant(1)).mulConstant(0.5).withTags({"s", "d"});
    return x.add(proj.forward(gelu, "d"));
  }
};

struct Model {
  std::vector<Block> blocks;
  LayerNorm lnf;
  Tensor wte;  // {v, d}
  Tensor forward(Tensor x) const {
    for (const Block& b : blocks) x = radix::call(b, &Block::forward, x);
    return radix::call(lnf, &LayerNorm::forward, x).dot(wte, {"d"});  // {s, v}
  }
};

/// A model whose weights come from `make(shape)`: Tensor(shape) for placeholders, or buffers.
template <class Make>
Model build(const Make& make, int64_t layers, int64_t d = 768, int64_t heads = 12, int64_t vocab = 50257) {
  auto t = [&](std::vector<int64_t> dims, std::initializer_list<radix::Tag> tags) {
    return make(Shape(dims, DType::f32).withTags(tags));
  };
  auto ln = [&] { return LayerNorm{t({d}, {"d"}), t({d}, {"d"})}; };
  auto lin = [&](int64_t i, int64_t o, radix::Tag out) { return Linear{t({i, o}, {"d", out}), t({o}, {out})}; };
  Model m;
  for (int64_t i = 0; i < layers; ++i)
    m.blocks.push_back(Block{ln(), ln(), Attention{lin(d, d, "o"), lin(d, d, "o"), lin(d, d, "o"), lin(d, d, "o"), heads},
                             lin(d, 4 * d, "f"), Linear{t({4 * d, d}, {"d", "o"}), t({d}, {"o"})}});
  m.lnf = ln();
  m.wte = t({vocab, d}, {"v", "d"});
  return m;
}

/// Shape-only weights for `layers` blocks of GPT-2 small.
inline Model placeholders(int64_t layers) {
  return build([](const Shape& s) { return Tensor(s); }, layers);
}

}  // namespace gpt2
