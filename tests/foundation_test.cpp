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

namespace {

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST(Foundation, EmittedMlirIsCanonicalizedUpstreamIr) {
  auto fn = [](radix::Tensor x, radix::Tensor w) {
    radix::Tensor a = x.exp();
    radix::Tensor b = x.exp();                                   // cse merges the twin
    radix::Tensor dead = x.log();                                // canonicalize drops unused values
    (void)dead;
    return a.add(b).dotGeneral(w, {{0, 0}}, {}).mulConstant(1);  // x * 1 folds away
  };
  radix::Exe exe = radix::compile(radix::Platform::cpu(), fn, radix::Tensor(radix::Shape({4}, radix::DType::f32)),
                                  radix::Tensor(radix::Shape({4, 3}, radix::DType::f32)));
  const std::string& ir = exe.mlir();
  EXPECT_NE(ir.find("module @radix"), std::string::npos) << ir;
  EXPECT_NE(ir.find("func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4x3xf32>) -> tensor<3xf32>"), std::string::npos) << ir;
  EXPECT_EQ(occurrences(ir, "math.exp"), 1u) << ir;
  EXPECT_EQ(occurrences(ir, "math.log"), 0u) << ir;
  EXPECT_EQ(occurrences(ir, "arith.addf"), 2u) << ir;  // a + b, and the accumulation inside the contraction
  EXPECT_EQ(occurrences(ir, "arith.mulf"), 1u) << ir;  // only inside the contraction
  EXPECT_EQ(occurrences(ir, "linalg.generic"), 1u) << ir;
  EXPECT_NE(ir.find("iterator_types = [\"parallel\", \"reduction\"]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("return"), std::string::npos);
}

TEST(Foundation, OpsOutsideCompileAreAnError) {
  radix::Tensor x = radix::Tensor::fromValues(radix::Platform::cpu(), radix::Shape({2}, radix::DType::f32), {1, 2});
  try {
    x.add(x);
    FAIL() << "expected radix::Error";
  } catch (const radix::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[add] no compilation in progress", 0), 0u) << e.what();
  }
  EXPECT_THROW(radix::Tensor::fromValues(radix::Platform::cpu(), radix::Shape({3}, radix::DType::f32), {1, 2}), radix::Error);
  EXPECT_EQ(radix::Shape({2, 8, 64}, radix::DType::f32).withTags({"b", "s", "d"}).str(), "{b=2,s=8,d=64}:f32");
  EXPECT_EQ(radix::Shape({2, 8}, radix::DType::f16).str(), "{2,8}:f16");
  EXPECT_THROW(radix::Shape(std::vector<int64_t>(9, 1), radix::DType::f32), radix::Error);
}

}  // namespace

namespace {

enum class Act { relu, tanh };

struct Block {
  radix::Tensor w;
  std::optional<radix::Tensor> bias;
};

struct Model {
  std::vector<Block> blocks;
  std::pair<radix::Tensor, int> scale;  // a tensor and a compile-time integer
  Act act;
  std::string name;
};

radix::Tensor runModel(const Model& m, const radix::Tensor& x) {
  radix::Tensor y = x;
  for (const Block& b : m.blocks) {
    y = b.w.mul(y);
    if (b.bias) y = y.add(*b.bias);
    y = m.act == Act::relu ? y.relu() : y.tanh();
  }
  return y.mul(m.scale.first).mulConstant(m.scale.second);
}

TEST(Foundation, ArgumentStructuresAndFreeFunctions) {
  radix::Platform cpu = radix::Platform::cpu();
  auto t = [&](std::vector<float> v) { return radix::Tensor::fromValues(cpu, radix::Shape({3}, radix::DType::f32), v); };
  Model m{{Block{t({1, -2, 3}), t({1, 1, 1})}, Block{t({2, 2, 2}), std::nullopt}},
          {t({1, 10, 100}), 2}, Act::relu, "toy"};
  radix::Tensor x = t({1, 1, -1});
  radix::Exe exe = radix::compile(cpu, &runModel, m, x);  // a free function with const-reference parameters
  EXPECT_EQ(exe.signature().argShapes.size(), 5u);        // 3 weights, the scale, x
  // relu([1,-2,-3] + 1) = [2,0,0]; relu(2 * that) = [4,0,0]; * [1,10,100] * 2
  radix::testing::expectClose(exe(m, x), {8, 0, 0}, 0);
  Model other = m;
  other.blocks.pop_back();
  try {
    exe(other, x);
    FAIL() << "expected radix::Error";
  } catch (const radix::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[exe] non-Tensor arguments", 0), 0u) << e.what();
  }
}

}  // namespace
