#pragma once
// The 3-layer MLP of the foundation issue, shared by the example, the tests and the benchmarks.
#include <radix/radix.h>

#include <array>

namespace mlp {

struct Layer {
  radix::Tensor w, b;
  /// relu(w · x + b): w {o,i}, b {o}, x {i} -> {o}
  radix::Tensor forward(radix::Tensor x) const {
    radix::Tensor wx = w.dotGeneral(x, {{-1, 0}}, {});
    return wx.add(b.broad(wx.shape())).relu();
  }
};

struct MLP {
  std::array<Layer, 3> layers;
  /// Each layer through radix::call: layers of equal shapes share one MLIR function.
  radix::Tensor forward(radix::Tensor x) const {
    for (const Layer& layer : layers) x = radix::call(layer, &Layer::forward, x);
    return x;
  }
  /// Each layer inlined into @main.
  radix::Tensor forwardInline(radix::Tensor x) const {
    for (const Layer& layer : layers) x = layer.forward(x);
    return x;
  }
};

/// Weights worked by hand: example(cpu).forward(input(cpu)) = [20, 0, 0].
inline MLP example(const radix::Platform& p, radix::DType d = radix::DType::f32) {
  auto t = [&](std::initializer_list<int64_t> dims, std::vector<float> v) {
    return radix::Tensor::fromValues(p, radix::Shape(dims, d), v);
  };
  return MLP{{
      Layer{t({2, 2}, {1, -1, 0, 1}), t({2}, {0, 0})},
      Layer{t({2, 2}, {1, 2, 1, -1}), t({2}, {10, 10})},
      Layer{t({3, 2}, {1, 2, 0, 1, -1, 0}), t({3}, {-10, -10, -10})},
  }};
}

/// The input [-1, 1].
inline radix::Tensor input(const radix::Platform& p, radix::DType d = radix::DType::f32) {
  return radix::Tensor::fromValues(p, radix::Shape({2}, d), {-1, 1});
}

/// Shape-only weights, to compile without allocating.
inline MLP placeholders(radix::DType d = radix::DType::f32) {
  auto t = [&](std::initializer_list<int64_t> dims) { return radix::Tensor(radix::Shape(dims, d)); };
  return MLP{{Layer{t({2, 2}), t({2})}, Layer{t({2, 2}), t({2})}, Layer{t({3, 2}), t({3})}}};
}

}  // namespace mlp
