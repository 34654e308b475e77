#pragma once
/// radix::nn: common layers as plain structs of Tensors, built from the public Tensor ops only
/// (nothing here knows about MLIR). A layer's `forward` takes exactly its inputs, so that
/// `radix::compile(cpu, &nn::LayerNorm::forward, ln, x)` and `radix::call(ln, &nn::LayerNorm::forward, x)`
/// work as for any model.
///
/// Axis tags: "s" sequence, "d" model width, "voc" vocabulary, "h" heads, "hd" head width,
/// "q" and "k" query and key positions in attention.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "radix/error.h"
#include "radix/module.h"
#include "radix/tensor.h"

namespace radix::nn {

namespace detail {

/// Runs a layer's body, prefixing its errors with the layer: "[nn.Linear] [dotGeneral] ...".
/// Notes the layer's line as the current op location (radix::Loc), so that a check failing
/// before the layer's first op does not name an earlier op's line.
template <class F>
auto inLayer(const char* layer, F&& f, Loc where = Loc::current()) -> decltype(f()) {
  (void)where;
  try {
    return f();
  } catch (const Error& e) {
    const std::string prefix = std::string("[") + layer + "] ";
    if (std::string_view(e.what()).starts_with(prefix)) throw;
    throw Error(prefix + e.what());
  }
}

inline void require(bool ok, const char* layer, const std::string& what) {
  if (!ok) throw Error(std::string("[") + layer + "] " + what);
}

/// Every axis of `t` by tag, in order (for transposes back to an input's layout).
inline std::vector<Axis> tagsOf(const Shape& s) {
  std::vector<Axis> out;
  for (int64_t i = 0; i < s.rank(); ++i) out.push_back(s.tag(i));
  return out;
}

inline Tensor as(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : t.convert(dtype); }

/// f32 for f16/bf16 inputs (normalizations and softmax compute in f32), else the dtype itself.
inline DType computeType(DType d) { return d == DType::f16 || d == DType::bf16 ? DType::f32 : d; }

}  // namespace detail

// ---- linear layers and embeddings ----

/// y = x · Wᵀ (+ b): contracts x's axis tagged `in` (its last axis when x has no such tag) with
/// the weight's input axis, and tags the new last axis `out`. The weight is 2-D: its axis
/// tagged `in` is the input axis (a tagged weight must have one); an untagged weight is
/// {out, in} as in PyTorch. The weight and bias are converted to x's dtype.
/// Linear{w {3072,768}, b {3072}, "d", "f"}.forward({s=5,d=768}) -> {s=5,f=3072}
struct Linear {
  Tensor weight;
  std::optional<Tensor> bias;
  Tag in = "d";
  Tag out = "d";

  Tensor forward(Tensor x) const {
    return detail::inLayer("nn.Linear", [&] {
      detail::require(weight.rank() == 2, "nn.Linear", "weight must be 2-D {out, in}, got " + weight.shape().str());
      const int64_t xIn = x.shape().hasTag(in) >= 0 ? x.shape().hasTag(in) : x.rank() - 1;
      detail::require(!weight.shape().isTagged() || weight.shape().hasTag(in) >= 0, "nn.Linear",
                      "weight " + weight.shape().str() + " has no axis tagged \"" + std::string(in.name()) +
                          "\" (the layer's `in`)");
      const int64_t wIn = weight.shape().hasTag(in) >= 0 ? weight.shape().hasTag(in) : 1;
      Tensor y = x.dotGeneral(detail::as(weight, x.dtype()), {{xIn, wIn}}, {}).withTag(-1, out);
      if (!bias) return y;
      detail::require(bias->rank() == 1, "nn.Linear", "bias must be 1-D {out}, got " + bias->shape().str());
      return y.add(detail::as(*bias, x.dtype()).withTags({out}).broad(y.shape()));
    });
  }
};

/// Looks up rows of a {voc, d} table by integer ids: ids {s=5}:i32 -> {s=5,d}. An untagged
/// weight is tagged {"voc","d"}; ids out of range are clamped (as gather does).
/// Embedding{w {voc=50,d=8}}.forward(ids {b=2,s=3}:i32) -> {b=2,s=3,d=8}
struct Embedding {
  Tensor weight;

  Tensor forward(Tensor ids) const {
    return detail::inLayer("nn.Embedding", [&] {
      detail::require(weight.rank() == 2, "nn.Embedding", "weight must be 2-D {voc, d}, got " + weight.shape().str());
      detail::require(!isFloat(ids.dtype()) && ids.dtype() != DType::bool_, "nn.Embedding",
                      "ids must be integers, got " + ids.shape().str());
      const Tensor table = weight.shape().isTagged() ? weight : weight.withTags({"voc", "d"});
      return table.gather({{0, ids}});
    });
  }
};

// ---- normalizations (over the last axis) ----

/// (x - mean) / sqrt(var + eps) over the last axis, in f32 for f16/bf16 (ZML's normalizeVariance).
/// normalizeVariance({s=3,d=8}, 1e-5) -> {s=3,d=8}
inline Tensor normalizeVariance(const Tensor& x, double eps) {
  return detail::inLayer("nn.normalizeVariance", [&] {
    detail::require(isFloat(x.dtype()) && x.rank() >= 1, "nn.normalizeVariance",
                    "needs a float tensor with at least one axis, got " + x.shape().str());
    const double inv = 1.0 / static_cast<double>(x.dim(-1));
    const Tensor xf = detail::as(x, detail::computeType(x.dtype()));
    const Tensor centered = xf.sub(xf.sum(-1).mulConstant(inv));
    const Tensor variance = centered.mul(centered).sum(-1).mulConstant(inv);
    return detail::as(centered.mul(variance.addConstant(eps).rsqrt()), x.dtype());
  });
}

/// x / sqrt(sum(x²) + eps) over the last axis (ZML's normalizeL2, torch's F.normalize).
/// normalizeL2({2,2}, 1e-12) -> {2,2}
inline Tensor normalizeL2(const Tensor& x, double eps) {
  return detail::inLayer("nn.normalizeL2", [&] {
    detail::require(isFloat(x.dtype()) && x.rank() >= 1, "nn.normalizeL2",
                    "needs a float tensor with at least one axis, got " + x.shape().str());
    const Tensor xf = detail::as(x, detail::computeType(x.dtype()));
    return detail::as(xf.mul(xf.mul(xf).sum(-1).addConstant(eps).rsqrt()), x.dtype());
  });
}

/// (x - mean) / sqrt(var + eps) * weight (+ bias) over the last axis, computed in f32 for
/// f16/bf16 inputs. weight and bias are 1-D, of x's last dim.
/// LayerNorm{w {d=8}, b {d=8}, 1e-5}.forward({s=3,d=8}) -> {s=3,d=8}
struct LayerNorm {
  Tensor weight;
  std::optional<Tensor> bias;
  double eps = 1e-5;

  Tensor forward(Tensor x) const {
    return detail::inLayer("nn.LayerNorm", [&] {
      detail::require(isFloat(x.dtype()), "nn.LayerNorm", "needs a float tensor, got " + x.shape().str());
      Tensor y = normalizeVariance(x, eps);
      const int64_t last = x.rank() - 1;
      y = y.mul(detail::as(weight, x.dtype()).broadcast(y.shape(), {last}));
      if (bias) y = y.add(detail::as(*bias, x.dtype()).broadcast(y.shape(), {last}));
      return y;
    });
  }
};

/// x / sqrt(mean(x²) + eps) * weight over the last axis (Llama's RMSNorm), in f32 for f16/bf16.
/// RMSNorm{w {d=8}, 1e-6}.forward({s=3,d=8}) -> {s=3,d=8}
struct RMSNorm {
  Tensor weight;
  double eps = 1e-6;

  Tensor forward(Tensor x) const {
    return detail::inLayer("nn.RMSNorm", [&] {
      detail::require(isFloat(x.dtype()), "nn.RMSNorm", "needs a float tensor, got " + x.shape().str());
      detail::require(x.rank() >= 1, "nn.RMSNorm", "needs at least one axis, got " + x.shape().str());
      const double inv = 1.0 / static_cast<double>(x.dim(-1));
      const Tensor xf = detail::as(x, detail::computeType(x.dtype()));
      const Tensor meanSquare = xf.mul(xf).sum(-1).mulConstant(inv);
      Tensor y = detail::as(xf.mul(meanSquare.addConstant(eps).rsqrt()), x.dtype());
      return y.mul(detail::as(weight, x.dtype()).broadcast(y.shape(), {x.rank() - 1}));
    });
  }
};

// ---- rotary position embeddings ----

/// How the head axis pairs its values into rotated (real, imaginary) pairs.
enum class RopeLayout {
  /// Pairs (x[2i], x[2i+1]): GGUF / Meta checkpoints.
  interleaved,
  /// Pairs (x[i], x[i + hd/2]): Hugging Face checkpoints ("rotate_half").
  rotateHalf,
};

/// Rotary embeddings: rotates each pair of the "hd" axis by position * base^(-2i/hd), for the
/// positions offset + 0, 1, ... along the "s" axis. `offset` is a scalar integer tensor (the
/// number of tokens already in a KV cache). Angles are computed in f32.
/// Rope{}.forward({s=5,h=4,hd=8}, offset {}:i32) -> {s=5,h=4,hd=8}
struct Rope {
  RopeLayout layout = RopeLayout::rotateHalf;
  double base = 10000;

  Tensor forward(Tensor x, Tensor offset) const {
    return detail::inLayer("nn.Rope", [&] {
      detail::require(isFloat(x.dtype()), "nn.Rope", "needs a float tensor, got " + x.shape().str());
      detail::require(x.shape().hasTag("s") >= 0 && x.shape().hasTag("hd") >= 0, "nn.Rope",
                      "needs axes tagged \"s\" and \"hd\", got " + x.shape().str());
      detail::require(offset.rank() == 0 && !isFloat(offset.dtype()), "nn.Rope",
                      "offset must be a scalar integer tensor, got " + offset.shape().str());
      const int64_t hd = x.dim("hd"), seq = x.dim("s"), half = hd / 2;
      detail::require(hd % 2 == 0, "nn.Rope", "the \"hd\" axis must be even, got " + x.shape().str());
      const Tensor positions = Tensor::arange(seq, DType::f32).withTags({"s"}).add(offset.convert(DType::f32));
      const Tensor frequencies =
          Tensor::arange(half, DType::f32).mulConstant(-2.0 * std::log(base) / static_cast<double>(hd)).exp().withTags({"hd"});
      const Shape angleShape = Shape({seq, half}, DType::f32).withTags({"s", "hd"});
      const Tensor angles = positions.broad(angleShape).mul(frequencies.broad(angleShape));
      const bool interleaved = layout == RopeLayout::interleaved;
      const Tensor re = interleaved ? x.slice1d("hd", {.start = 0, .step = 2}) : x.slice1d("hd", {.end = half});
      const Tensor im = interleaved ? x.slice1d("hd", {.start = 1, .step = 2}) : x.slice1d("hd", {.start = half});
      const Tensor cos = angles.cos().convert(x.dtype()).broad(re.shape());
      const Tensor sin = angles.sin().convert(x.dtype()).broad(re.shape());
      const Tensor outRe = re.mul(cos).sub(im.mul(sin));
      const Tensor outIm = re.mul(sin).add(im.mul(cos));
      if (!interleaved) return Tensor::concatenate({outRe, outIm}, "hd");
      const int64_t after = x.shape().axis("hd") + 1;
      return Tensor::stack({outRe, outIm}, after, "ri").mergeAxes({"hd", "ri"}, "hd");
    });
  }
};

// ---- attention ----

/// Options of scaled dot-product attention.
struct AttentionOptions {
  /// Masks keys after each query: key j is visible to query i when j <= i + queryOffset.
  bool causal = false;
  /// Position of the first query among the keys, a scalar integer tensor (a KV cache's index);
  /// when absent, k - q (the queries are the last positions).
  std::optional<Tensor> queryOffset;
  /// Added to the scores {.., h, q, k} before the softmax, broadcast by tag (e.g. {q, k}).
  std::optional<Tensor> bias;
  /// Multiplies the scores; 1/sqrt(hd) when absent.
  std::optional<double> scale;
};

/// softmax(q·kᵀ * scale + bias, masked) · v over tagged axes: q {.., h, q, hd}, k and v
/// {.., h, k, hd}; other tags (such as "b") are batch axes. k and v may have fewer heads than q
/// (grouped-query attention): query head i reads key head i / (hq / hk). The result has q's
/// shape. Scores and softmax are computed in f32.
/// sdpa(q {b=2,h=8,q=5,hd=16}, k {b=2,h=2,k=5,hd=16}, v, {.causal = true}) -> {b=2,h=8,q=5,hd=16}
inline Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options = {}) {
  return detail::inLayer("nn.sdpa", [&] {
    for (const Tensor* t : {&q, &k, &v})
      for (int64_t i = 0; i < t->rank(); ++i)
        detail::require(!t->shape().tag(i).empty(), "nn.sdpa",
                        "q, k and v need every axis tagged, got " + q.shape().str() + ", " + k.shape().str() + ", " +
                            v.shape().str());
    detail::require(q.shape().hasTag("q") >= 0 && q.shape().hasTag("h") >= 0 && q.shape().hasTag("hd") >= 0, "nn.sdpa",
                    "q needs axes tagged \"h\", \"q\" and \"hd\", got " + q.shape().str());
    detail::require(k.shape().hasTag("k") >= 0 && k.shape().hasTag("h") >= 0 && v.shape().hasTag("k") >= 0 &&
                        v.shape().hasTag("h") >= 0,
                    "nn.sdpa", "k and v need axes tagged \"h\", \"k\" and \"hd\", got " + k.shape().str() + ", " +
                                   v.shape().str());
    const int64_t heads = q.dim("h"), kvHeads = k.dim("h");
    detail::require(kvHeads > 0 && heads % kvHeads == 0, "nn.sdpa",
                    "q's heads must be a multiple of k's: " + q.shape().str() + " vs " + k.shape().str());
    const bool grouped = heads != kvHeads;
    const Tensor qg = grouped ? q.splitAxis("h", {{"h", kvHeads}, {"hg", heads / kvHeads}}) : q;
    const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.dim("hd"))));
    Tensor scores = detail::as(qg.dot(k, {"hd"}), DType::f32).mulConstant(scale);  // {.., h, [hg], q, k}
    if (options.bias) {
      Tensor bias = detail::as(*options.bias, DType::f32);
      if (grouped && bias.shape().hasTag("h") >= 0 && bias.dim("h") == heads)
        bias = bias.splitAxis("h", {{"h", kvHeads}, {"hg", heads / kvHeads}});
      scores = scores.add(bias.broad(scores.shape()));
    }
    if (options.causal) {
      const int64_t queries = q.dim("q"), keys = k.dim("k");
      const Shape grid = Shape({queries, keys}, DType::i32).withTags({"q", "k"});
      const Tensor offset = options.queryOffset ? detail::as(*options.queryOffset, DType::i32)
                                                : Tensor::scalar(static_cast<double>(keys - queries), DType::i32);
      const Tensor visible = Tensor::iota(grid, "k").le(Tensor::iota(grid, "q").add(offset));
      const double minusInf = -std::numeric_limits<double>::infinity();
      scores = visible.broad(scores.shape().withDtype(DType::bool_)).select(scores, Tensor::scalar(minusInf, DType::f32));
    }
    const Tensor probabilities = detail::as(scores.softmax("k"), v.dtype());
    Tensor out = probabilities.dot(v, {"k"});  // {.., h, [hg], q, hd}, or {.., h, q, hg, hd} when q precedes h
    if (grouped) {
      std::vector<Axis> order;  // "hg" right after "h", so that the two merge
      for (const Axis& a : detail::tagsOf(out.shape()))
        if (a.tag() != "hg") order.push_back(a);
      order.insert(order.begin() + out.shape().axis("h") - (out.shape().axis("hg") < out.shape().axis("h") ? 1 : 0) + 1, "hg");
      out = out.transpose(order).mergeAxes({"h", "hg"}, "h");
    }
    return out.transpose(detail::tagsOf(q.shape()));
  });
}

/// Keys and values of past positions for one attention layer, {k=max, h, hd} (any other
/// tagged axes, such as "b", may come first), and `index`, the scalar i32 position where the
/// next keys go.
/// KvCache{Tensor(Shape({64,2,16}, f32).withTags({"k","h","hd"})), ...same, index}
struct KvCache {
  Tensor k, v;
  Tensor index;

  /// Writes `newK` and `newV` ({k=n, h, hd}) at `index`, in place: the results reuse the buffers
  /// of the cache, which must be arguments of the compiled function (its buffers are donated).
  /// Returns the cache with index + n. Positions past max are clamped (dynamicUpdateSlice).
  KvCache update(Tensor newK, Tensor newV) const {
    return detail::inLayer("nn.KvCache", [&] {
      detail::require(newK.shape().hasTag("k") >= 0 && newV.shape().hasTag("k") >= 0, "nn.KvCache",
                      "new keys and values need an axis tagged \"k\", got " + newK.shape().str() + ", " +
                          newV.shape().str());
      const int64_t n = newK.dim("k");
      Tensor keys = k.dynamicUpdateSlice({{"k", index}}, detail::as(newK, k.dtype())).reuseBuffer(k);
      Tensor values = v.dynamicUpdateSlice({{"k", index}}, detail::as(newV, v.dtype())).reuseBuffer(v);
      return KvCache{keys, values, index.addConstant(static_cast<double>(n))};
    });
  }

  /// Attention of `q` {.., h, q=n, hd} (the queries at positions index - n ... index - 1, after
  /// update) over the cache: causal, with queryOffset = index - n.
  Tensor attend(Tensor q) const {
    AttentionOptions options;
    options.causal = true;
    options.queryOffset = index.addConstant(-static_cast<double>(q.dim("q")));
    return sdpa(q, k, v, options);
  }
};

// ---- activations and MLPs ----

/// x if x >= 0, else alpha * (e^x - 1) (float only): elu({3}, 1.0) -> {3}
inline Tensor elu(const Tensor& x, double alpha) {
  return detail::inLayer("nn.elu", [&] { return x.ge(0).select(x, x.expm1().mulConstant(alpha)); });
}

/// The activations nn::Activation chooses from.
enum class ActivationKind { relu, sigmoid, tanh, silu, gelu, geluErf, quickGelu, leakyRelu, elu };

/// An activation chosen by configuration (a compile-time constant of the trace), as ZML's
/// nn.Activation: Activation{ActivationKind::leakyRelu, 0.1}.forward({3}) -> {3}
struct Activation {
  ActivationKind kind = ActivationKind::gelu;
  double alpha = 0.01;  // leakyRelu's slope, elu's scale

  Tensor forward(Tensor x) const {
    switch (kind) {
      case ActivationKind::relu: return x.relu();
      case ActivationKind::sigmoid: return x.sigmoid();
      case ActivationKind::tanh: return x.tanh();
      case ActivationKind::silu: return x.silu();
      case ActivationKind::gelu: return x.gelu();
      case ActivationKind::geluErf: return x.geluErf();
      case ActivationKind::quickGelu: return x.quickGelu();
      case ActivationKind::leakyRelu: return x.leakyRelu(alpha);
      case ActivationKind::elu: return elu(x, alpha);
    }
    throw Error("[nn.Activation] unknown kind " + std::to_string(static_cast<int>(kind)));
  }
};

/// down(gelu(up(x))) with the tanh approximation of GELU (GPT-2). Give `up` an `out` tag for the
/// hidden axis (such as "f") and `down` the same tag as `in`.
/// GeluMlp{Linear{w1, b1, "d", "f"}, Linear{w2, b2, "f", "d"}}.forward({s=3,d=8}) -> {s=3,d=8}
struct GeluMlp {
  Linear up, down;

  Tensor forward(Tensor x) const { return down.forward(up.forward(x).gelu()); }
};

/// down(silu(gate(x)) * up(x)) (Llama's SwiGLU MLP).
/// SwiGluMlp{gate, up, down}.forward({s=3,d=8}) -> {s=3,d=8}
struct SwiGluMlp {
  Linear gate, up, down;

  Tensor forward(Tensor x) const { return down.forward(gate.forward(x).silu().mul(up.forward(x))); }
};

// ---- resizing ----

/// Nearest-neighbour resize of the given axes (ZML's upsample/nearest): output index i of an axis
/// of size n reads input index floor((i + 0.5) * in / n). Tags and other axes are kept.
/// upsampleNearest({b=1,c=2,h=3,w=4}, {{"h", 6}, {"w", 8}}) -> {b=1,c=2,h=6,w=8}
inline Tensor upsampleNearest(const Tensor& x, const std::vector<std::pair<Axis, int64_t>>& sizes) {
  return detail::inLayer("nn.upsampleNearest", [&] {
    Tensor y = x;
    for (const auto& [axis, n] : sizes) {
      const int64_t a = y.shape().axis(axis, "nn.upsampleNearest");
      detail::require(n >= 1, "nn.upsampleNearest", "new sizes must be >= 1, got " + std::to_string(n) + " for " +
                                                         y.shape().str());
      const double ratio = static_cast<double>(y.dim(a)) / static_cast<double>(n);
      const Tensor source = Tensor::arange(n, DType::f32).addConstant(0.5).mulConstant(ratio).floor().convert(DType::i32);
      const Tag tag = y.shape().tag(a);
      y = y.gather({{a, source}});  // the new axis takes the indexed one's place, untagged
      if (!tag.empty()) y = y.withTag(a, tag);
    }
    return y;
  });
}

// ---- testing against recorded activations ----

namespace testing {

/// How a layer's output compares with the expected one.
struct Comparison {
  bool ok = false;
  int64_t mismatches = 0;    // elements with |a - e| > atol + rtol * |e|
  double maxAbsError = 0;
  int64_t worst = -1;        // flat index of the largest |a - e|
  std::string report;        // one paragraph: shapes, counts, the first mismatches
  explicit operator bool() const { return ok; }
};

/// Compares bound tensors elementwise as numpy.allclose does: |a - e| <= atol + rtol * |e|
/// (NaN equals NaN). Dims and dtypes must agree (tags are not compared).
/// EXPECT_TRUE(compare(y, expected, 1e-4, 1e-3)) << compare(y, expected, 1e-4, 1e-3).report;
inline Comparison compare(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  Comparison c;
  if (!actual.shape().sameDimsAndDtype(expected.shape())) {
    c.report = "shapes differ: got " + actual.shape().str() + ", expected " + expected.shape().str();
    return c;
  }
  const std::vector<double> a = actual.toVector<double>(), e = expected.toVector<double>();
  std::string firsts;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool bothNan = std::isnan(a[i]) && std::isnan(e[i]);
    const double err = bothNan ? 0 : std::fabs(a[i] - e[i]);
    if (!bothNan && (std::isnan(err) || err > c.maxAbsError)) {
      c.maxAbsError = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
      c.worst = static_cast<int64_t>(i);
    }
    if (bothNan || a[i] == e[i] || err <= atol + rtol * std::fabs(e[i])) continue;
    if (c.mismatches++ < 5)
      firsts += " [" + std::to_string(i) + "] " + std::to_string(a[i]) + " vs " + std::to_string(e[i]) + ";";
  }
  c.ok = c.mismatches == 0;
  c.report = actual.shape().str() + ": " + std::to_string(c.mismatches) + " of " + std::to_string(a.size()) +
             " elements differ beyond atol " + std::to_string(atol) + " + rtol " + std::to_string(rtol) +
             " (max |error| " + std::to_string(c.maxAbsError) + " at " + std::to_string(c.worst) + ")" +
             (firsts.empty() ? std::string() : ":" + firsts);
  return c;
}

/// Activations recorded from a reference run (e.g. PyTorch forward hooks saved to safetensors):
/// "<layer>.in.0", "<layer>.in.1", ... are its inputs and "<layer>.out.0" its output.
using Activations = std::map<std::string, Tensor>;

namespace detail {
template <class M>
struct ForwardArity;
template <class L, class R, class... P>
struct ForwardArity<R (L::*)(P...) const> : std::integral_constant<size_t, sizeof...(P)> {};

inline const Tensor& recorded(const Activations& activations, const std::string& key) {
  auto it = activations.find(key);
  if (it == activations.end()) throw Error("[nn.testing] no activation \"" + key + "\" was recorded");
  return it->second;
}
}  // namespace detail

/// Compiles `layer.forward` for the recorded inputs of `name`, runs it, and compares its output
/// with the recorded one.
/// auto c = nn::testing::testLayer(cpu, activations, "h.0.mlp", model.blocks[0].mlp, 1e-4, 1e-3);
/// EXPECT_TRUE(c) << c.report;
template <class Layer>
Comparison testLayer(const Platform& platform, const Activations& activations, const std::string& name,
                     const Layer& layer, double atol, double rtol) {
  constexpr size_t arity = detail::ForwardArity<decltype(&Layer::forward)>::value;
  const Tensor& expected = detail::recorded(activations, name + ".out.0");
  auto input = [&](size_t i) -> const Tensor& { return detail::recorded(activations, name + ".in." + std::to_string(i)); };
  auto run = [&]<size_t... I>(std::index_sequence<I...>) -> Tensor {
    auto exe = compile(platform, &Layer::forward, layer, input(I)...);
    return exe(layer, input(I)...);
  };
  Comparison c = compare(run(std::make_index_sequence<arity>()), expected, atol, rtol);
  c.report = name + ": " + c.report;
  return c;
}

}  // namespace testing

}  // namespace radix::nn
