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
  /// update) over the cache: causal, with queryOffset = index - n. `base` gives the other
  /// options (scale, window, softcap, bias).
  /// cache.attend(q {q=5,h=8,hd=16}, {.window = 4096}) -> {q=5,h=8,hd=16}
  Tensor attend(Tensor q, AttentionOptions base = {}) const {
    AttentionOptions options = std::move(base);
    options.causal = true;
    options.queryOffset = index.addConstant(-static_cast<double>(q.dim("q")));
    return sdpa(q, k, v, options);
  }
};

}  // namespace radix::nn
