// radix-mlp: a 3-layer MLP with embedded weights, compiled once (cached on disk) and run.
#include <chrono>
#include <cstdio>

#include <radix/radix.h>

struct Layer {
  radix::Tensor w, b;
  radix::Tensor forward(radix::Tensor x) const {
    radix::Tensor wx = w.dotGeneral(x, {{-1, 0}}, {});
    return wx.add(b.broad(wx.shape())).relu();
  }
};

struct MLP {
  std::array<Layer, 3> layers;
  radix::Tensor forward(radix::Tensor x) const {
    for (const Layer& layer : layers) x = radix::call(layer, &Layer::forward, x);
    return x;
  }
};

int main() {
  using radix::DType;
  using radix::Shape;
  radix::Platform cpu = radix::Platform::cpu();
  auto t = [&](Shape s, std::vector<float> v) { return radix::Tensor::fromValues(cpu, s, v); };
  MLP mlp{{
      Layer{t(Shape({2, 2}, DType::f32), {1, -1, 0, 1}), t(Shape({2}, DType::f32), {0, 0})},
      Layer{t(Shape({2, 2}, DType::f32), {1, 2, 1, -1}), t(Shape({2}, DType::f32), {10, 10})},
      Layer{t(Shape({3, 2}, DType::f32), {1, 2, 0, 1, -1, 0}), t(Shape({3}, DType::f32), {-10, -10, -10})},
  }};
  radix::Tensor x = t(Shape({2}, DType::f32), {-1, 1});
  auto start = std::chrono::steady_clock::now();
  radix::Exe exe = radix::compile(cpu, &MLP::forward, mlp, x);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::vector<float> y = exe(mlp, x).toVector<float>();
  std::printf("radix-mlp: compiled in %.1f ms (%s)\n", ms, exe.fromCache() ? "from the cache" : "cold");
  std::printf("y = [%g, %g, %g]  (expected [20, 0, 0])\n", y[0], y[1], y[2]);
  return (y[0] == 20 && y[1] == 0 && y[2] == 0) ? 0 : 1;
}
