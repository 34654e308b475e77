#pragma once
/// radix::nn attention: sdpa and the KV cache of one layer.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "radix/nn/common.h"

namespace radix::detail {
/// Marks the radix::call function being traced as a kernel the compiler may replace (its body
/// stays the reference): `radix.kernel = kind`, options in `radix.kernel_options` (src/trace).
/// markKernel("attention", {{"causal", 1}}, {{"scale", 0.125}})
void markKernel(const std::string& kind, const std::vector<std::pair<std::string, int64_t>>& ints,
                const std::vector<std::pair<std::string, double>>& floats);
}  // namespace radix::detail

namespace radix::nn {

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
  /// Sliding-window attention (Mistral, Gemma 2), with `causal`: query i sees key j only when
  /// i + queryOffset - window < j, i.e. the last `window` positions including its own.
  std::optional<int64_t> window;
  /// Soft-capping of the scores after scaling (Gemma 2): cap * tanh(scores / cap).
  std::optional<double> softcap;
  /// Key-padding mask from lengths (BERT-style batches of unequal sequences): an integer tensor
  /// {b} (its axis tagged "b" or untagged, matching the axis "b" of q and k) or a scalar; keys at
  /// positions >= length are masked. A query whose every key is masked (length 0) gives NaN, as
  /// PyTorch does. {.keyLengths = lengths {b=2}:i32}
  std::optional<Tensor> keyLengths;
};

namespace detail {

/// The axis contract of nn::sdpa: every axis tagged, q {h, q, hd}, k and v {h, k, hd}, and q's
/// heads a multiple of k's. checkSdpaAxes(q {h=8,q=5,hd=16}, k {h=2,k=5,hd=16}, v) passes.
inline void checkSdpaAxes(const Tensor& q, const Tensor& k, const Tensor& v) {
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
  require(k.dim("h") > 0 && q.dim("h") % k.dim("h") == 0, "nn.sdpa",
          "q's heads must be a multiple of k's: " + q.shape().str() + " vs " + k.shape().str());
}

/// The composition of sdpa from ops: the reference the attention kernel must match, and what
/// runs where the kernel does not apply. Same contract as nn::sdpa.
inline Tensor sdpaReference(const Tensor& q, const Tensor& k0, const Tensor& v0, const AttentionOptions& options) {
  {
    checkSdpaAxes(q, k0, v0);
    // A cache of another dtype (f16 keys under f32 queries) is read in the queries' dtype.
    const Tensor k = k0.dtype() == q.dtype() ? k0 : detail::as(k0, q.dtype());
    const Tensor v = v0.dtype() == q.dtype() ? v0 : detail::as(v0, q.dtype());
    const int64_t heads = q.dim("h"), kvHeads = k.dim("h");
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
    if (options.softcap) {
      detail::require(*options.softcap > 0, "nn.sdpa", "softcap must be > 0, got " + std::to_string(*options.softcap));
      scores = scores.mulConstant(1.0 / *options.softcap).tanh().mulConstant(*options.softcap);
    }
    detail::require(!options.window || (options.causal && *options.window >= 1), "nn.sdpa",
                    "a sliding window needs causal attention and window >= 1");
    if (options.keyLengths) {
      const Tensor& lengths = *options.keyLengths;
      detail::require(!isFloat(lengths.dtype()) && lengths.dtype() != DType::bool_ &&
                          (lengths.rank() == 0 || (lengths.rank() == 1 && (lengths.shape().tag(0).empty() ||
                                                                           lengths.shape().tag(0) == Tag("b")))),
                      "nn.sdpa", "keyLengths must be integers {b} or a scalar, got " + lengths.shape().str());
      detail::require(lengths.rank() == 0 || (k.shape().hasTag("b") >= 0 && k.dim("b") == lengths.dim(0)), "nn.sdpa",
                      "keyLengths " + lengths.shape().str() + " needs a batch axis \"b\" of that size in k " +
                          k.shape().str());
      const int64_t keys = k.dim("k");
      const Shape grid = lengths.rank() == 0 ? Shape({keys}, DType::i32).withTags({"k"})
                                             : Shape({lengths.dim(0), keys}, DType::i32).withTags({"b", "k"});
      const Tensor len = detail::as(lengths, DType::i32);
      const Tensor valid = Tensor::iota(grid, "k").lt(lengths.rank() == 0 ? len : len.withTags({"b"}).broad(grid));
      const double minusInf = -std::numeric_limits<double>::infinity();
      scores = valid.broad(scores.shape().withDtype(DType::bool_)).select(scores, Tensor::scalar(minusInf, DType::f32));
    }
    if (options.causal) {
      const int64_t queries = q.dim("q"), keys = k.dim("k");
      const Shape grid = Shape({queries, keys}, DType::i32).withTags({"q", "k"});
      const Tensor offset = options.queryOffset ? detail::as(*options.queryOffset, DType::i32)
                                                : Tensor::scalar(static_cast<double>(keys - queries), DType::i32);
      const Tensor queryPosition = Tensor::iota(grid, "q").add(offset);
      Tensor visible = Tensor::iota(grid, "k").le(queryPosition);
      if (options.window)
        visible = visible.logicalAnd(Tensor::iota(grid, "k").gt(queryPosition.addConstant(-double(*options.window))));
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
  }
}

/// The compile-time options of a fused-attention call (hashed by radix::call with the shapes).
struct AttentionKernelSpec {
  bool causal = false;
  double scale = 1;
  int64_t window = 0;   // 0: none
  double softcap = 0;   // 0: none
};

/// Row-major strides of `s` by tag (0 for a tag it lacks).
inline int64_t strideOf(const Shape& s, Tag tag) {
  const int64_t axis = s.hasTag(tag);
  if (axis < 0) return 0;
  int64_t stride = 1;
  for (int64_t i = s.rank() - 1; i > axis; --i) stride *= s.dim(i);
  return stride;
}

/// The tags of `s` other than its head, sequence and head-dim axes (the batch axes), in order.
inline std::vector<Tag> batchTagsOf(const Shape& s, Tag sequence) {
  std::vector<Tag> out;
  for (int64_t i = 0; i < s.rank(); ++i)
    if (s.tag(i) != Tag("h") && s.tag(i) != sequence && s.tag(i) != Tag("hd")) out.push_back(s.tag(i));
  return out;
}

/// Whether the attention kernel can run this sdpa (else the composition runs as it is): no
/// bias; q f32 or bf16 with "hd" last; k and v alike, of q's dtype or (under an f32 q) f16 or
/// bf16, as a half-precision KV cache holds them; at most two batch axes, the same in q and k;
/// a scalar integer queryOffset.
inline bool attentionKernelApplies(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
  const DType d = q.dtype(), kv = k.dtype();
  if (o.bias || (d != DType::f32 && d != DType::bf16) || v.dtype() != kv) return false;
  if (kv != d && !(d == DType::f32 && (kv == DType::f16 || kv == DType::bf16))) return false;
  if (!(k.shape() == v.shape()) || q.shape().tag(q.rank() - 1) != Tag("hd") || k.shape().tag(k.rank() - 1) != Tag("hd") ||
      q.dim("hd") != k.dim("hd"))
    return false;
  if (q.shape().hasTag("k") >= 0 || k.shape().hasTag("q") >= 0 || k.shape().hasTag("hd") < 0) return false;
  const std::vector<Tag> qb = batchTagsOf(q.shape(), "q"), kb = batchTagsOf(k.shape(), "k");
  if (qb.size() > 2 || qb.size() != kb.size()) return false;
  for (Tag t : qb)
    if (k.shape().hasTag(t) < 0 || k.dim(t) != q.dim(t)) return false;
  if (o.queryOffset && (o.queryOffset->rank() != 0 || isFloat(o.queryOffset->dtype()) ||
                        o.queryOffset->dtype() == DType::bool_))
    return false;
  if (o.window && (!o.causal || *o.window < 1)) return false;
  if (o.softcap && !(*o.softcap > 0)) return false;
  if (o.keyLengths) {
    const Tensor& l = *o.keyLengths;
    if (isFloat(l.dtype()) || l.dtype() == DType::bool_ || l.rank() > 1) return false;
    if (l.rank() == 1 && (k.shape().hasTag("b") < 0 || k.dim("b") != l.dim(0) ||
                          !(l.shape().tag(0).empty() || l.shape().tag(0) == Tag("b"))))
      return false;
  }
  return true;
}

/// The traced body of the fused-attention function: the reference composition, marked
/// `radix.kernel = "attention"` with the layout the compiler's kernel call needs.
inline Tensor attentionKernelBody(const AttentionKernelSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const std::optional<Tensor>& offset, const std::optional<Tensor>& lengths) {
  AttentionOptions o;
  o.causal = spec.causal;
  o.queryOffset = offset;
  o.scale = spec.scale;
  if (spec.window > 0) o.window = spec.window;
  if (spec.softcap > 0) o.softcap = spec.softcap;
  o.keyLengths = lengths;
  Tensor out = sdpaReference(q, k, v, o);
  const std::vector<Tag> batch = batchTagsOf(q.shape(), "q");
  std::vector<std::pair<std::string, int64_t>> ints = {
      {"causal", spec.causal ? 1 : 0}, {"window", spec.window}, {"offset", offset ? 1 : 0},
      {"lengths", lengths ? 1 : 0}, {"dtype", q.dtype() == DType::bf16 ? 2 : 0},
      {"kv_dtype", k.dtype() == DType::bf16 ? 2 : k.dtype() == DType::f16 ? 1 : 0},
      {"hq", q.dim("h")}, {"hk", k.dim("h")}, {"nq", q.dim("q")}, {"nk", k.dim("k")}, {"hd", q.dim("hd")}};
  for (size_t i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    ints.push_back({"b" + n, i < batch.size() ? q.dim(batch[i]) : 1});
    const char* names[3] = {"q", "k", "v"};
    const Tensor* ts[3] = {&q, &k, &v};
    for (int x = 0; x < 3; ++x)
      ints.push_back({std::string(names[x]) + "_b" + n, i < batch.size() ? strideOf(ts[x]->shape(), batch[i]) : 0});
    ints.push_back({"len_b" + n, lengths && lengths->rank() == 1 && i < batch.size() && batch[i] == Tag("b") ? 1 : 0});
  }
  ints.push_back({"q_h", strideOf(q.shape(), "h")});
  ints.push_back({"q_s", strideOf(q.shape(), "q")});
  ints.push_back({"k_h", strideOf(k.shape(), "h")});
  ints.push_back({"k_s", strideOf(k.shape(), "k")});
  radix::detail::markKernel("attention", ints, {{"scale", spec.scale}, {"softcap", spec.softcap}});
  return out;
}

}  // namespace detail

/// softmax(q·kᵀ * scale + bias, masked) · v over tagged axes: q {.., h, q, hd}, k and v
/// {.., h, k, hd}; other tags (such as "b") are batch axes. k and v may have fewer heads than q
/// (grouped-query attention): query head i reads key head i / (hq / hk). The result has q's
/// shape. Scores and softmax are computed in f32.
/// sdpa(q {b=2,h=8,q=5,hd=16}, k {b=2,h=2,k=5,hd=16}, v, {.causal = true}) -> {b=2,h=8,q=5,hd=16}
/// Runs as one fused kernel (flash-style, reading only the visible keys) where
/// detail::attentionKernelApplies holds, unless RADIX_ATTENTION=composed at compile time; else,
/// or with a bias, as the composition of ops (docs/attention.md).
inline Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options = {},
                   Loc loc = Loc::current()) {
  return detail::inLayer("nn.sdpa", loc, [&] {
    detail::checkSdpaAxes(q, k, v);
    if (!detail::attentionKernelApplies(q, k, v, options)) return detail::sdpaReference(q, k, v, options);
    detail::AttentionKernelSpec spec;
    spec.causal = options.causal;
    spec.scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.dim("hd"))));
    spec.window = options.window.value_or(0);
    spec.softcap = options.softcap.value_or(0);
    std::optional<Tensor> offset, lengths;
    if (options.queryOffset) offset = detail::as(*options.queryOffset, DType::i32);
    if (options.keyLengths)
      lengths = options.keyLengths->rank() == 0 ? detail::as(*options.keyLengths, DType::i32)
                                                : detail::as(*options.keyLengths, DType::i32).withTags({"b"});
    return radix::call("radix_attention", &detail::attentionKernelBody, spec, q, k, v, offset, lengths);
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
  KvCache update(Tensor newK, Tensor newV, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.KvCache", *this, loc, [&] {
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
  /// update) over the cache: causal, with queryOffset = index - n. `base` gives the other
  /// options (scale, window, softcap, bias).
  /// cache.attend(q {q=5,h=8,hd=16}, {.window = 4096}) -> {q=5,h=8,hd=16}
  Tensor attend(Tensor q, AttentionOptions base = {}, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.KvCache", *this, loc, [&] {
      detail::require(q.shape().hasTag("q") >= 0, "nn.KvCache", "queries need an axis tagged \"q\", got " + q.shape().str());
      AttentionOptions options = std::move(base);
      options.causal = true;
      options.queryOffset = index.addConstant(-static_cast<double>(q.dim("q")));
      return sdpa(q, k, v, options, loc);
    });
  }
};

}  // namespace radix::nn
