#pragma once
/// radix::nn pooling over the "h" and "w" axes of images ({b, c, h, w}; an untagged input is read
/// as PyTorch's NCHW and the result comes back tagged so). These layers hold no tensors.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "radix/nn/conv.h"

namespace radix::nn {

namespace detail {

inline Tensor::PoolOptions poolOptions(const char* layer, std::array<int64_t, 2> kernel,
                                       const std::optional<std::array<int64_t, 2>>& stride, std::array<int64_t, 2> padding,
                                       std::array<int64_t, 2> dilation) {
  const std::array<int64_t, 2> s = stride.value_or(kernel);
  Tensor::PoolOptions o;
  o.axes = {"h", "w"};
  for (size_t i = 0; i < 2; ++i) {
    require(kernel[i] >= 1 && s[i] >= 1 && dilation[i] >= 1 && padding[i] >= 0, layer,
            "needs kernel, stride and dilation >= 1 and padding >= 0, got kernel " + dimsText(kernel.data(), 2) + ", stride " +
                dimsText(s.data(), 2) + ", padding " + dimsText(padding.data(), 2));
    require(2 * padding[i] <= kernel[i], layer,
            "padding " + dimsText(padding.data(), 2) + " must be at most half the kernel " + dimsText(kernel.data(), 2) +
                " (as in PyTorch)");
    o.window.push_back(kernel[i]);
    o.strides.push_back(s[i]);
    o.dilation.push_back(dilation[i]);
    o.padding.push_back({padding[i], padding[i]});
  }
  return o;
}

}  // namespace detail

/// PyTorch's MaxPool2d (ceil_mode=False): the max of each window; padding never wins. Each of h
/// and w becomes (n + 2*padding - dilation*(kernel-1) - 1) / stride + 1; stride defaults to the kernel.
/// MaxPool2d{.kernel = {3, 3}, .stride = {{2, 2}}, .padding = {1, 1}}.forward({b=1,c=4,h=8,w=8}) -> {b=1,c=4,h=4,w=4}
struct MaxPool2d {
  std::array<int64_t, 2> kernel = {2, 2};
  std::optional<std::array<int64_t, 2>> stride;
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};

  Tensor forward(Tensor x) const {
    return detail::inLayer("nn.MaxPool2d", [&] {
      const Tensor t = detail::channelsFirst<2>(x, "nn.MaxPool2d", false);
      return t.maxPool(detail::poolOptions("nn.MaxPool2d", kernel, stride, padding, dilation));
    });
  }
};

/// PyTorch's AvgPool2d (ceil_mode=False): the mean of each window. With countIncludePad (PyTorch's
/// default) padding counts as zeros in the full window; without it, windows average their
/// in-image elements only. Floats only; stride defaults to the kernel.
/// AvgPool2d{.kernel = {2, 2}}.forward({b=1,c=3,h=5,w=4}) -> {b=1,c=3,h=2,w=2}
struct AvgPool2d {
  std::array<int64_t, 2> kernel = {2, 2};
  std::optional<std::array<int64_t, 2>> stride;
  std::array<int64_t, 2> padding = {0, 0};
  bool countIncludePad = true;

  Tensor forward(Tensor x) const {
    return detail::inLayer("nn.AvgPool2d", [&] {
      const Tensor t = detail::channelsFirst<2>(x, "nn.AvgPool2d", false);
      detail::require(isFloat(t.dtype()), "nn.AvgPool2d", "needs a float tensor, got " + t.shape().str());
      const Tensor::PoolOptions o = detail::poolOptions("nn.AvgPool2d", kernel, stride, padding, {1, 1});
      const Tensor y = t.avgPool(o);
      if (countIncludePad || (padding[0] == 0 && padding[1] == 0)) return y;
      const Shape plane = Shape({t.dim("h"), t.dim("w")}, t.dtype()).withTags({"h", "w"});
      const Tensor share = Tensor::constant(plane, 1.0).avgPool(o);  // the in-image share of each window
      return y.div(share.broad(y.shape()));
    });
  }
};

/// PyTorch's AdaptiveAvgPool2d: output cell (i, j) averages rows floor(i*h/oh) .. ceil((i+1)*h/oh)-1
/// and the same for columns. outputSize {1, 1} is global average pooling: {b, c, 1, 1}.
/// AdaptiveAvgPool2d{.outputSize = {1, 1}}.forward({b=2,c=8,h=7,w=7}) -> {b=2,c=8,h=1,w=1}
struct AdaptiveAvgPool2d {
  std::array<int64_t, 2> outputSize = {1, 1};

  Tensor forward(Tensor x) const {
    return detail::inLayer("nn.AdaptiveAvgPool2d", [&] {
      Tensor t = detail::channelsFirst<2>(x, "nn.AdaptiveAvgPool2d", false);
      detail::require(isFloat(t.dtype()), "nn.AdaptiveAvgPool2d", "needs a float tensor, got " + t.shape().str());
      detail::require(outputSize[0] >= 1 && outputSize[1] >= 1, "nn.AdaptiveAvgPool2d",
                      "outputSize must be >= 1, got " + detail::dimsText(outputSize.data(), 2));
      const std::vector<Tag> order = [&] {
        std::vector<Tag> tags;
        for (int64_t i = 0; i < t.rank(); ++i) tags.push_back(t.shape().tag(i));
        return tags;
      }();
      const std::array<Tag, 2> axes = {"h", "w"};
      for (size_t a = 0; a < 2; ++a) {
        const int64_t in = t.dim(axes[a]), out = outputSize[a];
        detail::require(in >= 1, "nn.AdaptiveAvgPool2d", "cannot pool the empty axis of " + t.shape().str());
        if (out == 1) {
          t = t.sum(axes[a]).mulConstant(1.0 / static_cast<double>(in));
          continue;
        }
        if (in % out == 0) {
          const int64_t k = in / out;
          Tensor::PoolOptions o;
          o.axes = {axes[a]};
          o.window = {k};
          o.strides = {k};
          t = t.avgPool(o);
          continue;
        }
        // Windows of unequal sizes: contract with an {o, in} averaging matrix.
        const Shape grid = Shape({out, in}, DType::i32).withTags({"pool_o", axes[a]});
        const Tensor i = Tensor::iota(grid, "pool_o"), j = Tensor::iota(grid, axes[a]);
        const Tensor start = i.mulConstant(static_cast<double>(in)).divConstant(static_cast<double>(out));
        const Tensor end = i.addConstant(1).mulConstant(static_cast<double>(in)).addConstant(static_cast<double>(out - 1))
                               .divConstant(static_cast<double>(out));
        const Tensor inside = j.ge(start).logicalAnd(j.lt(end));
        const Tensor weights = inside.convert(DType::f32).div(end.sub(start).convert(DType::f32));
        t = t.dot(detail::as(weights, t.dtype()), {axes[a]}).rename({{"pool_o", axes[a]}});
        std::vector<Axis> perm(order.begin(), order.end());
        t = t.transpose(perm);
      }
      return t;
    });
  }
};

}  // namespace radix::nn
