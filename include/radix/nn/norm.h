#pragma once
/// radix::nn normalizations over the last axis.
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

// ---- normalizations (over the last axis) ----

/// (x - mean) / sqrt(var + eps) over the last axis, in f32 for f16/bf16 (ZML's normalizeVariance).
/// normalizeVariance({s=3,d=8}, 1e-5) -> {s=3,d=8}
inline Tensor normalizeVariance(const Tensor& x, double eps, Loc loc = Loc::current()) {
  return detail::inLayer("nn.normalizeVariance", loc, [&] {
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
inline Tensor normalizeL2(const Tensor& x, double eps, Loc loc = Loc::current()) {
  return detail::inLayer("nn.normalizeL2", loc, [&] {
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

  Tensor forward(Tensor x, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.LayerNorm", *this, loc, [&] {
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

  Tensor forward(Tensor x, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.RMSNorm", *this, loc, [&] {
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

}  // namespace radix::nn
