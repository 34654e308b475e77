#pragma once
/// radix::nn multi-head attention and the transformer encoder layer, with PyTorch's state_dict
/// names (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer) or HF BERT's
/// (query/key/value). Inputs are {b, s, d} or {s, d}; untagged inputs of rank 3 or 2 are read so.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "radix/nn/attention.h"
#include "radix/nn/conv.h"
#include "radix/nn/linear.h"
#include "radix/nn/norm.h"

namespace radix::nn {

namespace detail {

/// `x` as {[b,] s, d}: untagged rank 3 or 2 gets those tags; a tagged input needs "s" and "d".
inline Tensor sequenceInput(const Tensor& x, const char* layer) {
  if (!x.shape().isTagged()) {
    require(x.rank() == 2 || x.rank() == 3, layer, "needs an input {b, s, d} or {s, d}, got " + x.shape().str());
    return x.rank() == 3 ? x.withTags({"b", "s", "d"}) : x.withTags({"s", "d"});
  }
  require(x.shape().hasTag("s") >= 0 && x.shape().hasTag("d") >= 0, layer,
          "a tagged input needs axes tagged \"s\" and \"d\", got " + x.shape().str());
  return x;
}

}  // namespace detail

/// Multi-head attention over {b, s, d} inputs, in one of two weight layouts:
///  - fused, as torch.nn.MultiheadAttention: in_proj_weight {3d, d} (q, k, v rows) and
///    in_proj_bias {3d}, then out_proj;
///  - separate, as HF BERT's self-attention: query, key and value Linears (BERT's output
///    projection lives in another module, so out_proj may be absent).
/// `heads` splits d into {h, hd}; `causal` masks later keys. keyLengths {b}:i32 masks padded keys
/// (AttentionOptions::keyLengths). The result is {b, s, d} (out_proj's width when present).
/// MultiHeadAttention{.in_proj_weight = w {24,8}, .in_proj_bias = b {24}, .out_proj = {{wo {8,8}, bo}},
/// .heads = 2}.forward({b=2,s=5,d=8}, {}) -> {b=2,s=5,d=8}
struct MultiHeadAttention {
  std::optional<Tensor> in_proj_weight;
  std::optional<Tensor> in_proj_bias;
  std::optional<Linear> query;
  std::optional<Linear> key;
  std::optional<Linear> value;
  std::optional<Linear> out_proj;
  int64_t heads = 1;
  bool causal = false;

  /// Self-attention of x {b, s, d}: x.forward(x, lengths) -> {b, s, d}
  Tensor forward(Tensor x, std::optional<Tensor> keyLengths) const { return attend(x, x, std::move(keyLengths)); }

  /// Attention of `queries` {b, s=n, d} over `keysValues` {b, s=m, d} (cross-attention):
  /// attend({b=2,s=3,d=8}, {b=2,s=7,d=8}, {}) -> {b=2,s=3,d=8}
  Tensor attend(Tensor queries, Tensor keysValues, std::optional<Tensor> keyLengths) const {
    return detail::inLayer("nn.MultiHeadAttention", [&] {
      const char* name = "nn.MultiHeadAttention";
      const Tensor xq = detail::sequenceInput(queries, name), xkv = detail::sequenceInput(keysValues, name);
      const bool fused = in_proj_weight.has_value();
      detail::require(fused != (query && key && value), name,
                      "needs either in_proj_weight (fused q, k, v) or the query, key and value Linears, not both");
      std::optional<Linear> projections[3];
      if (fused) {
        const Tensor& w = *in_proj_weight;
        detail::require(w.rank() == 2 && w.dim(0) % 3 == 0, name,
                        "in_proj_weight must be {3*d, d}, got " + w.shape().str());
        const int64_t d = w.dim(0) / 3;
        detail::require(!in_proj_bias || (in_proj_bias->rank() == 1 && in_proj_bias->dim(0) == 3 * d), name,
                        "in_proj_bias must be {3*d} = {" + std::to_string(3 * d) + "}, got " +
                            (in_proj_bias ? in_proj_bias->shape().str() : std::string()));
        for (int64_t i = 0; i < 3; ++i) {
          projections[i] = Linear{detail::untagged(w).slice1d(0, {.start = i * d, .end = (i + 1) * d}), std::nullopt};
          if (in_proj_bias) projections[i]->bias = detail::untagged(*in_proj_bias).slice1d(0, {.start = i * d, .end = (i + 1) * d});
        }
      } else {
        projections[0] = query;
        projections[1] = key;
        projections[2] = value;
      }
      for (auto& p : projections) p->in = p->out = "d";
      const Tensor q = projections[0]->forward(xq), k = projections[1]->forward(xkv), v = projections[2]->forward(xkv);
      detail::require(heads >= 1 && q.dim("d") % heads == 0 && k.dim("d") == q.dim("d"), name,
                      "heads = " + std::to_string(heads) + " must divide the projected width of q " + q.shape().str() +
                          " and k " + k.shape().str());
      auto split = [&](const Tensor& t, Tag position) {
        return t.splitAxis("d", {{"h", heads}, {"hd", -1}}).rename({{"s", position}});
      };
      AttentionOptions options;
      options.causal = causal;
      options.keyLengths = std::move(keyLengths);
      Tensor out = sdpa(split(q, "q"), split(k, "k"), split(v, "k"), options).mergeAxes({"h", "hd"}, "d").rename({{"q", "s"}});
      if (!out_proj) return out;
      Linear o = *out_proj;
      o.in = o.out = "d";
      return o.forward(out);
    });
  }
};

/// The activation between linear1 and linear2 of a TransformerEncoderLayer.
enum class EncoderActivation {
  relu,  ///< PyTorch's default
  gelu,  ///< exact (erf) GELU, PyTorch's "gelu"
};

/// torch.nn.TransformerEncoderLayer in inference (no dropout), on {b, s, d}:
///  post-norm (norm_first=False, PyTorch's default): x = norm1(x + self_attn(x)); x = norm2(x + ff(x))
///  pre-norm (normFirst): x = x + self_attn(norm1(x)); x = x + ff(norm2(x))
/// with ff(x) = linear2(activation(linear1(x))). State-dict names: self_attn.in_proj_weight,
/// self_attn.in_proj_bias, self_attn.out_proj.*, linear1.*, linear2.*, norm1.*, norm2.*.
/// layer.forward({b=2,s=5,d=8}, lengths {b=2}:i32) -> {b=2,s=5,d=8}
struct TransformerEncoderLayer {
  MultiHeadAttention self_attn;
  Linear linear1;
  Linear linear2;
  LayerNorm norm1;
  LayerNorm norm2;
  bool normFirst = false;
  EncoderActivation activation = EncoderActivation::relu;

  Tensor forward(Tensor x, std::optional<Tensor> keyLengths) const {
    return detail::inLayer("nn.TransformerEncoderLayer", [&] {
      const Tensor t = detail::sequenceInput(x, "nn.TransformerEncoderLayer");
      auto feedForward = [&](const Tensor& h) {
        Linear l1 = linear1, l2 = linear2;
        l1.in = l1.out = l2.in = l2.out = "d";
        const Tensor u = l1.forward(h);
        return l2.forward(activation == EncoderActivation::gelu ? u.geluErf() : u.relu());
      };
      if (normFirst) {
        const Tensor h = t.add(self_attn.forward(norm1.forward(t), keyLengths));
        return h.add(feedForward(norm2.forward(h)));
      }
      const Tensor h = norm1.forward(t.add(self_attn.forward(t, keyLengths)));
      return norm2.forward(h.add(feedForward(h)));
    });
  }
};

}  // namespace radix::nn
