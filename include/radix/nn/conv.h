#pragma once
/// radix::nn convolutions and the normalizations of CNNs (BatchNorm, GroupNorm), channels first as
/// in PyTorch. Field names are those of PyTorch's state_dict, so a checkpoint saved from torch
/// loads with io::loadInto and no renaming (num_batches_tracked is ignored, see io::LoadSpec).
///
/// Axis tags: "b" batch, "c" channels, "h" and "w" image rows and columns (Conv2d, pooling), "s"
/// the positions of Conv1d. An untagged input is read as PyTorch's layout ({b,c,h,w} or {b,c,s})
/// and the result comes back tagged so; a tagged input needs "c" and the spatial tags, and its
/// one other axis is the batch.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "radix/nn/common.h"
#include "radix/nn/norm.h"

namespace radix::nn {

namespace detail {

inline std::string dimsText(const int64_t* dims, size_t n) {
  std::string s = "(";
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + ")";
}

/// The spatial tags of an N-d layer: {"s"} for 1-d, {"h","w"} for 2-d.
template <size_t N>
std::vector<Tag> spatialTags() {
  static_assert(N == 1 || N == 2, "radix::nn: 1-d and 2-d layers only");
  if constexpr (N == 1) return {"s"};
  else return {"h", "w"};
}

/// `x` as {batch, c, spatial...}: an untagged input of rank 2 + N gets PyTorch's tags, a tagged
/// one must have "c" (when `needChannels`) and the spatial tags, and one more axis for the batch.
template <size_t N>
Tensor channelsFirst(const Tensor& x, const char* layer, bool needChannels = true) {
  const std::vector<Tag> spatial = spatialTags<N>();
  std::string want = N == 1 ? "{b, c, s}" : "{b, c, h, w}";
  require(x.rank() == static_cast<int64_t>(N) + 2, layer,
          "needs a batched " + want + " input (PyTorch's layout), got " + x.shape().str());
  if (!x.shape().isTagged()) {
    std::vector<Tag> tags = {"b", "c"};
    tags.insert(tags.end(), spatial.begin(), spatial.end());
    return x.withTags(tags);
  }
  bool ok = !needChannels || x.shape().hasTag("c") >= 0;
  for (Tag t : spatial) ok = ok && x.shape().hasTag(t) >= 0;
  require(ok, layer, "a tagged input needs axes tagged " + std::string(needChannels ? "\"c\" and " : "") +
                         (N == 1 ? "\"s\"" : "\"h\", \"w\"") + ", got " + x.shape().str() + " (untagged inputs are read as " +
                         want + ")");
  return x;
}

/// The axis of `x` that is neither "c" nor spatial (the batch of a channelsFirst input).
template <size_t N>
int64_t batchAxis(const Shape& s) {
  const std::vector<Tag> spatial = spatialTags<N>();
  for (int64_t i = 0; i < s.rank(); ++i) {
    const Tag t = s.tag(i);
    bool named = t == Tag("c");
    for (Tag u : spatial) named = named || t == u;
    if (!named) return i;
  }
  return 0;
}

/// `t` with every tag removed (kernels are addressed by position).
inline Tensor untagged(const Tensor& t) { return t.withTags(std::vector<Tag>(static_cast<size_t>(t.rank()))); }

/// The channel axis of a BatchNorm/GroupNorm input: "c" when tagged, else axis 1 (PyTorch's).
inline int64_t channelAxis(const Tensor& x, const char* layer) {
  require(x.rank() >= 2, layer, "needs an input {b, c, ...} of rank >= 2, got " + x.shape().str());
  if (!x.shape().isTagged()) return 1;
  const int64_t c = x.shape().hasTag("c");
  require(c >= 0, layer, "a tagged input needs an axis tagged \"c\" (channels), got " + x.shape().str());
  return c;
}

template <size_t N>
constexpr std::array<int64_t, N> filled(int64_t v) {
  std::array<int64_t, N> a{};
  a.fill(v);
  return a;
}

}  // namespace detail

// ---- convolutions ----

/// PyTorch's Conv1d/Conv2d: a cross-correlation of {b, c=in, spatial...} by `weight`
/// {out, in/groups, k...} (PyTorch's layout), plus `bias` {out}, giving {b, c=out, spatial'...}
/// with each spatial size (n + 2*padding - dilation*(k-1) - 1) / stride + 1. `samePadding` is
/// PyTorch's padding="same" (stride 1; the odd padding goes after, as in PyTorch). Weights
/// convert to x's dtype; floats accumulate in f32.
/// Conv2d{w {8,3,3,3}, b {8}, .stride = {2, 2}, .padding = {1, 1}}.forward({b=2,c=3,h=9,w=9}) -> {b=2,c=8,h=5,w=5}
template <size_t N>
struct ConvNd {
  Tensor weight;
  std::optional<Tensor> bias;
  std::array<int64_t, N> stride = detail::filled<N>(1);
  std::array<int64_t, N> padding = detail::filled<N>(0);
  std::array<int64_t, N> dilation = detail::filled<N>(1);
  int64_t groups = 1;
  bool samePadding = false;

  Tensor forward(Tensor x) const {
    constexpr const char* kName = N == 1 ? "nn.Conv1d" : "nn.Conv2d";
    return detail::inLayer(kName, [&] {
      const Tensor t = detail::channelsFirst<N>(x, kName);
      const int64_t channels = t.dim("c");
      const std::string wantW = N == 1 ? "{out, in/groups, k}" : "{out, in/groups, kh, kw}";
      detail::require(weight.rank() == static_cast<int64_t>(N) + 2, kName,
                      "weight must be " + wantW + " (PyTorch's layout), got " + weight.shape().str());
      detail::require(groups >= 1 && channels % groups == 0 && weight.dim(0) % groups == 0, kName,
                      "groups = " + std::to_string(groups) + " must divide the input channels (" + std::to_string(channels) +
                          ") and the output channels (" + std::to_string(weight.dim(0)) + ")");
      detail::require(weight.dim(1) * groups == channels, kName,
                      "weight " + weight.shape().str() + " takes " + std::to_string(weight.dim(1)) + " x " +
                          std::to_string(groups) + " (groups) input channels, the input " + t.shape().str() + " has " +
                          std::to_string(channels));
      Tensor::ConvOptions o;
      for (size_t i = 0; i < N; ++i) {
        detail::require(stride[i] >= 1 && dilation[i] >= 1 && padding[i] >= 0, kName,
                        "needs stride >= 1, dilation >= 1 and padding >= 0, got stride " + detail::dimsText(stride.data(), N) +
                            ", dilation " + detail::dimsText(dilation.data(), N) + ", padding " +
                            detail::dimsText(padding.data(), N));
        detail::require(!samePadding || stride[i] == 1, kName,
                        "padding \"same\" needs stride 1 (as in PyTorch), got stride " + detail::dimsText(stride.data(), N));
        if (samePadding) {
          const int64_t total = dilation[i] * (weight.dim(static_cast<int64_t>(i) + 2) - 1);
          o.padding.push_back({total / 2, total - total / 2});
        } else {
          o.padding.push_back({padding[i], padding[i]});
        }
        o.strides.push_back(stride[i]);
        o.rhsDilation.push_back(dilation[i]);
        o.kernelSpatial.push_back(static_cast<int64_t>(i) + 2);
      }
      o.featureGroups = groups;
      o.inputBatch = detail::batchAxis<N>(t.shape());
      o.inputFeature = "c";
      for (Tag s : detail::spatialTags<N>()) o.inputSpatial.push_back(s);
      Tensor y = t.convolution(detail::untagged(detail::as(weight, t.dtype())), o);
      if (!bias) return y;
      detail::require(bias->rank() == 1 && bias->dim(0) == weight.dim(0), kName,
                      "bias must be {out} = {" + std::to_string(weight.dim(0)) + "}, got " + bias->shape().str());
      return y.add(detail::untagged(detail::as(*bias, y.dtype())).broadcast(y.shape(), {y.shape().axis("c")}));
    });
  }
};

/// PyTorch's Conv1d: {b, c, s} by weight {out, in/groups, k}.
/// Conv1d{w {4,2,3}}.forward({b=1,c=2,s=7}) -> {b=1,c=4,s=5}
using Conv1d = ConvNd<1>;
/// PyTorch's Conv2d: {b, c, h, w} by weight {out, in/groups, kh, kw}.
/// Conv2d{w {4,2,3,3}, .samePadding = true}.forward({b=1,c=2,h=5,w=6}) -> {b=1,c=4,h=5,w=6}
using Conv2d = ConvNd<2>;

// ---- normalizations of CNNs ----

/// PyTorch's BatchNorm1d/2d in inference: (x - running_mean) / sqrt(running_var + eps) * weight
/// + bias per channel ("c", or axis 1 of an untagged input), in f32 for f16/bf16. weight and bias
/// are absent for affine=False. The state dict's num_batches_tracked is not a field: io::loadInto
/// ignores it and says so in its LoadReport.
/// BatchNorm{w {c=4}, b, mean, var}.forward({b=2,c=4,h=3,w=3}) -> {b=2,c=4,h=3,w=3}
struct BatchNorm {
  std::optional<Tensor> weight;
  std::optional<Tensor> bias;
  Tensor running_mean;
  Tensor running_var;
  double eps = 1e-5;

  Tensor forward(Tensor x) const {
    return detail::inLayer("nn.BatchNorm", [&] {
      detail::require(isFloat(x.dtype()), "nn.BatchNorm", "needs a float tensor, got " + x.shape().str());
      const int64_t c = detail::channelAxis(x, "nn.BatchNorm");
      const DType ct = detail::computeType(x.dtype());
      auto channel = [&](const Tensor& p, const char* what) {
        detail::require(p.rank() == 1 && p.dim(0) == x.dim(c), "nn.BatchNorm",
                        std::string(what) + " must be {c} = {" + std::to_string(x.dim(c)) + "}, got " + p.shape().str());
        return detail::untagged(detail::as(p, ct));
      };
      Tensor scale = channel(running_var, "running_var").addConstant(eps).rsqrt();
      if (weight) scale = scale.mul(channel(*weight, "weight"));
      Tensor shift = channel(running_mean, "running_mean").mul(scale).neg();
      if (bias) shift = shift.add(channel(*bias, "bias"));
      const Tensor xf = detail::as(x, ct);
      const Tensor y = xf.mul(scale.broadcast(xf.shape(), {c})).add(shift.broadcast(xf.shape(), {c}));
      return detail::as(y, x.dtype());
    });
  }
};
/// PyTorch's BatchNorm1d ({b, c} or {b, c, s}); the same layer as BatchNorm.
using BatchNorm1d = BatchNorm;
/// PyTorch's BatchNorm2d ({b, c, h, w}); the same layer as BatchNorm.
using BatchNorm2d = BatchNorm;

/// PyTorch's GroupNorm: the channels ("c", or axis 1 of an untagged input; it must follow the
/// batch axis) split into `groups` groups, each normalized over its channels and all spatial
/// positions, then scaled by weight {c} and shifted by bias {c} (absent for affine=False).
/// GroupNorm{w {c=6}, b {c=6}, .groups = 3}.forward({b=2,c=6,h=4,w=5}) -> {b=2,c=6,h=4,w=5}
struct GroupNorm {
  std::optional<Tensor> weight;
  std::optional<Tensor> bias;
  int64_t groups = 1;
  double eps = 1e-5;

  Tensor forward(Tensor x) const {
    return detail::inLayer("nn.GroupNorm", [&] {
      detail::require(isFloat(x.dtype()), "nn.GroupNorm", "needs a float tensor, got " + x.shape().str());
      const int64_t c = detail::channelAxis(x, "nn.GroupNorm");
      detail::require(c == 1, "nn.GroupNorm", "the channel axis must be axis 1 ({b, c, ...}), got " + x.shape().str());
      const int64_t channels = x.dim(c);
      detail::require(groups >= 1 && channels % groups == 0, "nn.GroupNorm",
                      "groups = " + std::to_string(groups) + " must divide the channels of " + x.shape().str());
      std::vector<Tag> tags;
      for (int64_t i = 0; i < x.rank(); ++i) tags.push_back(x.shape().tag(i));
      const int64_t perGroup = x.shape().count() / std::max<int64_t>(1, x.dim(0) * groups);
      Tensor y = normalizeVariance(x.reshape({x.dim(0), groups, perGroup}), eps).reshape(x.shape().dims()).withTags(tags);
      auto channel = [&](const Tensor& p, const char* what) {
        detail::require(p.rank() == 1 && p.dim(0) == channels, "nn.GroupNorm",
                        std::string(what) + " must be {c} = {" + std::to_string(channels) + "}, got " + p.shape().str());
        return detail::untagged(detail::as(p, x.dtype())).broadcast(y.shape(), {c});
      };
      if (weight) y = y.mul(channel(*weight, "weight"));
      if (bias) y = y.add(channel(*bias, "bias"));
      return y;
    });
  }
};

}  // namespace radix::nn
