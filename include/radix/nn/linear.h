#pragma once
/// radix::nn linear layers and embeddings.
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
#include "radix/quant.h"

namespace radix::nn {

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
  QuantType quant = QuantType::none;
  int64_t cols = 0;

  Tensor forward(Tensor x, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.Linear", *this, loc, [&] {
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
  QuantType quant = QuantType::none;
  int64_t cols = 0;

  Tensor forward(Tensor ids, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.Embedding", *this, loc, [&] {
      detail::require(weight.rank() == 2, "nn.Embedding", "weight must be 2-D {voc, d}, got " + weight.shape().str());
      detail::require(!isFloat(ids.dtype()) && ids.dtype() != DType::bool_, "nn.Embedding",
                      "ids must be integers, got " + ids.shape().str());
      const Tensor table = weight.shape().isTagged() ? weight : weight.withTags({"voc", "d"});
      return table.gather({{0, ids}});
    });
  }
};

}  // namespace radix::nn
