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

#include "radix/collectives.h"
#include "radix/nn/common.h"
#include "radix/quant.h"

namespace radix::nn {

// ---- linear layers and embeddings ----

namespace detail {

/// x · Wᵀ (+ b) for a 2-D weight already in x's dtype (Linear and QuantizedLinear share it).
inline Tensor linearApply(const char* layer, const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias,
                          Tag in, Tag out) {
  require(weight.rank() == 2, layer, "weight must be 2-D {out, in}, got " + weight.shape().str());
  const int64_t xIn = x.shape().hasTag(in) >= 0 ? x.shape().hasTag(in) : x.rank() - 1;
  require(!weight.shape().isTagged() || weight.shape().hasTag(in) >= 0, layer,
          "weight " + weight.shape().str() + " has no axis tagged \"" + std::string(in.name()) + "\" (the layer's `in`)");
  const int64_t wIn = weight.shape().hasTag(in) >= 0 ? weight.shape().hasTag(in) : 1;
  Tensor y = x.dotGeneral(as(weight, x.dtype()), {{xIn, wIn}}, {}).withTag(-1, out);
  if (!bias) return y;
  require(bias->rank() == 1, layer, "bias must be 1-D {out}, got " + bias->shape().str());
  return y.add(as(*bias, x.dtype()).withTags({out}).broad(y.shape()));
}

/// The dtype a quantized weight is decoded to for activations of `d`: d itself when it is a float.
inline DType decodeType(DType d) { return isFloat(d) ? d : DType::f32; }

}  // namespace detail

/// y = x · Wᵀ (+ b): contracts x's axis tagged `in` (its last axis when x has no such tag) with
/// the weight's input axis, and tags the new last axis `out`. The weight is 2-D: its axis
/// tagged `in` is the input axis (a tagged weight must have one); an untagged weight is
/// {out, in} as in PyTorch. The weight and bias are converted to x's dtype.
/// With `quant` a GGUF block type (q8_0 .. q6_k), `weight` is the packed u8 {out, rowBytes}
/// tensor and `cols` the input dim: the weight is decoded inside the contraction's kernel
/// (QuantizedTensor::dequantize), never materialized.
/// Linear{w {3072,768}, b {3072}, "d", "f"}.forward({s=5,d=768}) -> {s=5,f=3072}
/// Linear{w {3072,432}:u8, {}, "d", "f", QuantType::q4_0, 768}.forward({s=5,d=768}) -> {s=5,f=3072}
/// With `rowParallel` (Megatron's row-parallel layer in a tensor-parallel model), x and the
/// weight hold this process's block of the input axis: the partial products of the processes
/// are summed with allReduce (radix/collectives.h), then the bias is added once.
struct Linear {
  Tensor weight;
  std::optional<Tensor> bias;
  Tag in = "d";
  Tag out = "d";
  QuantType quant = QuantType::none;
  int64_t cols = 0;  // logical input dim when quant != none
  bool rowParallel = false;

  Tensor forward(Tensor x, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.Linear", *this, loc, [&] {
      const std::optional<Tensor> fused = rowParallel ? std::nullopt : bias;
      Tensor y;
      if (quant == QuantType::none) {
        y = detail::linearApply("nn.Linear", x, weight, fused, in, out);
      } else {
        detail::require(ggmlTypeId(quant) >= 0, "nn.Linear",
                        std::string(quantName(quant)) + " needs separate scales: use nn::QuantizedLinear");
        const QuantizedTensor q{weight, {}, {}, quant, cols};
        y = detail::linearApply("nn.Linear", x, q.dequantize(detail::decodeType(x.dtype()), loc), fused, in, out);
      }
      if (!rowParallel) return y;
      y = allReduce(y, ReduceOp::sum, loc);
      return bias ? y.add(detail::as(*bias, y.dtype()).withTags({out}).broad(y.shape())) : y;
    });
  }
};

/// Linear over a QuantizedTensor of any format (GGUF blocks, i8_channel, i4_group): the weight
/// {out, in} is decoded inside the contraction's kernel; activations keep their dtype.
/// QuantizedLinear{{w {768,384}:u8, s {768,24}:f16, {}, QuantType::i4_group, 768, 32}, {}, "d", "f"}
///     .forward({s=5,d=768}) -> {s=5,f=768}
struct QuantizedLinear {
  QuantizedTensor weight;
  std::optional<Tensor> bias;
  Tag in = "d";
  Tag out = "d";

  Tensor forward(Tensor x, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.QuantizedLinear", *this, loc, [&] {
      return detail::linearApply("nn.QuantizedLinear", x, weight.dequantize(detail::decodeType(x.dtype()), loc), bias,
                                 in, out);
    });
  }
};

/// Looks up rows of a {voc, d} table by integer ids: ids {s=5}:i32 -> {s=5,d}. An untagged
/// weight is tagged {"voc","d"}; ids out of range are clamped (as gather does).
/// With `quant` a GGUF block type, `weight` is the packed u8 {voc, rowBytes} table and `cols` the
/// row length d: the packed rows are gathered first and only those are decoded (to f32).
/// Embedding{w {voc=50,d=8}}.forward(ids {b=2,s=3}:i32) -> {b=2,s=3,d=8}
/// Embedding{w {50,18}:u8, QuantType::q4_0, 32}.forward(ids {s=3}:i32) -> {s=3,d=32}:f32
struct Embedding {
  Tensor weight;
  QuantType quant = QuantType::none;
  int64_t cols = 0;  // logical row length when quant != none

  Tensor forward(Tensor ids, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.Embedding", *this, loc, [&] {
      detail::require(weight.rank() == 2, "nn.Embedding", "weight must be 2-D {voc, d}, got " + weight.shape().str());
      detail::require(!isFloat(ids.dtype()) && ids.dtype() != DType::bool_, "nn.Embedding",
                      "ids must be integers, got " + ids.shape().str());
      const Tensor table = weight.shape().isTagged() ? weight : weight.withTags({"voc", "d"});
      if (quant == QuantType::none) return table.gather({{0, ids}});
      detail::require(ggmlTypeId(quant) >= 0, "nn.Embedding",
                      std::string(quantName(quant)) + " is not a GGUF block type (q8_0 .. q6_k)");
      // The packed rows of the ids, as a 2-D {n, rowBytes} table, decoded, then shaped as ids.
      const Tensor rows = table.gather({{0, ids.flatten()}});
      const Tensor packed = rows.withTags({Tag(), Tag()});
      const Tensor decoded = QuantizedTensor{packed, {}, {}, quant, cols}.dequantize(DType::f32, loc);
      std::vector<int64_t> dims = ids.shape().dims();
      dims.push_back(decoded.shape().dim(1));
      std::vector<Tag> tags;
      for (int64_t i = 0; i < ids.rank(); ++i) tags.push_back(ids.shape().tag(i));
      tags.push_back(table.shape().tag(1));
      return decoded.reshape(dims).withTags(tags);
    });
  }
};

}  // namespace radix::nn
