// The foundation issue's program, as written there.
#include <radix/radix.h>
#include <radix/testing.h>

namespace {

// A model is a plain struct of Tensors: no macros, no base class, no registration.
struct Layer {
  radix::Tensor w, b;
  radix::Tensor forward(radix::Tensor x) const {
    radix::Tensor wx = w.dotGeneral(x, {{-1, 0}}, {});  // contract w's last axis with x's axis 0
    return wx.add(b.broad(wx.shape())).relu();
  }
};

struct NN {
  std::array<Layer, 3> layers;
  radix::Tensor forward(radix::Tensor x) const {
    for (const Layer& layer : layers) x = layer.forward(x);
    return x;
  }
};

TEST(Foundation, ThreeLayerNN) {
  radix::Platform cpu = radix::Platform::cpu();
  auto f16 = [&](radix::Shape s, std::vector<float> v) { return radix::Tensor::fromValues(cpu, s, v); };
  radix::Tensor x = f16(radix::Shape({2}, radix::DType::f16), {-1, 1});
  NN nn{{
      Layer{f16(radix::Shape({2, 2}, radix::DType::f16), {1, -1, 0, 1}), f16(radix::Shape({2}, radix::DType::f16), {0, 0})},
      Layer{f16(radix::Shape({2, 2}, radix::DType::f16), {1, 2, 1, -1}), f16(radix::Shape({2}, radix::DType::f16), {10, 10})},
      Layer{f16(radix::Shape({3, 2}, radix::DType::f16), {1, 2, 0, 1, -1, 0}), f16(radix::Shape({3}, radix::DType::f16), {-10, -10, -10})},
  }};
  radix::Exe exe = radix::compile(cpu, &NN::forward, nn, x);  // traces with the shapes of nn and x
  radix::Tensor y = exe(nn, x);                                // runs on the buffers of nn and x
  EXPECT_EQ(y.shape(), radix::Shape({3}, radix::DType::f16));
  radix::testing::expectClose(y, {20, 0, 0}, 1e-3);            // worked by hand: [0,1] -> [12,9] -> [20,0,0]
}

}  // namespace
