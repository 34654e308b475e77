// Twins of the seed's module.zig tests, and the module semantics around them: call dedup,
// donation, memory kinds, sharding attributes, argument identity, hashing.
#include <radix/radix.h>
#include <radix/testing.h>

#include <xxhash.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>

#include "mlp/mlp.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;

radix::Platform cpu() { return radix::Platform::cpu(); }
Tensor f16(Shape s, std::vector<float> v) { return Tensor::fromValues(cpu(), s, v); }

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

using radix::testing::errorOf;

// Compile options that dump the module after `pass` into a fresh folder, removed again when
// this goes out of scope; texts() is one dump per function.
struct PassDump {
  PassDump(const std::string& name, const std::string& passName, int threads = 1)
      : dir(::testing::TempDir() + name), pass(passName) {
    std::filesystem::remove_all(dir);
    options.threads = threads;
    options.cache = false;
    options.dumpDir = dir;
    options.dumpPasses = true;
    options.dumpPassRegex = pass;
  }
  ~PassDump() { std::filesystem::remove_all(dir); }
  std::vector<std::string> texts() const {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (entry.path().string().find(pass) == std::string::npos) continue;
      std::ifstream in(entry.path());
      out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return out;
  }
  std::string dir, pass;
  radix::CompileOptions options;
};

// ---- FnCache ----

TEST(Module, FnCache) {
  mlp::MLP nn = mlp::example(cpu(), DType::f16);
  Tensor x = mlp::input(cpu(), DType::f16);
  radix::Exe exe = radix::compile(cpu(), &mlp::MLP::forward, nn, x);
  Tensor res = exe(nn, x);
  Tensor expected = radix::testing::compileAndCall(cpu(), &mlp::MLP::forwardInline, nn, x);
  radix::testing::expectClose(res, expected, 1e-4);
  radix::testing::expectClose(res, {20, 0, 0}, 1e-3);
  // Layers 0 and 1 share one function; layer 2 has another shape.
  const std::string& ir = exe.mlir();
  EXPECT_EQ(count(ir, "func.func private @Layer_"), 2u) << ir;
  EXPECT_EQ(count(ir, "call @Layer_"), 3u) << ir;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(ir, m, std::regex("@Layer_[0-9a-f]{16}\\(")));
}

struct MixedLayer {
  static inline int numCall = 0;
  Tensor w;
  std::pair<Tensor, int> forward(Tensor x) const {
    Tensor wx = w.dotGeneral(x, {{-1, 0}}, {});
    numCall += 1;  // mutating globals while tracing is a bad idea; here it shows the cache
    return {wx.addConstant(numCall), numCall};
  }
};

struct MixedNN {
  std::array<MixedLayer, 3> layers;
  Tensor forward(Tensor x) const {
    int y = 0;
    std::tie(x, y) = radix::call(layers[0], &MixedLayer::forward, x);  EXPECT_EQ(MixedLayer::numCall, 1); EXPECT_EQ(y, 1);
    std::tie(x, y) = radix::call(layers[1], &MixedLayer::forward, x);  EXPECT_EQ(MixedLayer::numCall, 1); EXPECT_EQ(y, 1);  // cache hit
    std::tie(x, y) = radix::call(layers[2], &MixedLayer::forward, x);  EXPECT_EQ(MixedLayer::numCall, 2); EXPECT_EQ(y, 2);  // new shape
    return x;
  }
  Tensor forwardRef(Tensor x) const {
    const int bias[] = {1, 1, 2};
    for (int i = 0; i < 3; ++i) x = layers[i].w.dotGeneral(x, {{-1, 0}}, {}).addConstant(bias[i]);
    return x;
  }
};

TEST(Module, FnCacheWithMixedIntegerTensor) {
  MixedLayer::numCall = 0;
  MixedNN nn{{MixedLayer{f16(Shape({2, 2}, DType::f16), {1, -1, 0, 1})},
              MixedLayer{f16(Shape({2, 2}, DType::f16), {1, 2, 1, -1})},
              MixedLayer{f16(Shape({3, 2}, DType::f16), {1, 2, 0, 1, -1, 0})}}};
  Tensor x = f16(Shape({2}, DType::f16), {-1, 1});
  Tensor res = radix::testing::compileAndCall(cpu(), &MixedNN::forward, nn, x);
  Tensor expected = radix::testing::compileAndCall(cpu(), &MixedNN::forwardRef, nn, x);
  radix::testing::expectClose(res, expected, 1e-4);
  // By hand: [-1,1] -> [-2,1]+1 = [-1,2] -> [3,-3]+1 = [4,-2] -> [0,-2,-4]+2 = [2,0,-2]
  radix::testing::expectClose(res, {2, 0, -2}, 1e-3);
}

struct Scaled {
  Tensor w;
  Tensor forward(Tensor x, float scale, bool negate) const {
    Tensor y = w.mul(x).mulConstant(scale);
    return negate ? y.neg() : y;
  }
};

TEST(Module, CallKeyIncludesNonTensorValues) {
  Scaled s{Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 2, 3})};
  Tensor x = Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 1, 1});
  auto fn = [](const Scaled& s, Tensor x) {
    Tensor a = radix::call(s, &Scaled::forward, x, 2.0f, false);
    Tensor b = radix::call(s, &Scaled::forward, x, 2.0f, false);  // same key: one function
    Tensor c = radix::call(s, &Scaled::forward, x, 3.0f, false);  // other float: new function
    Tensor d = radix::call(s, &Scaled::forward, x, 2.0f, true);   // other bool: new function
    return std::make_tuple(a, b, c, d);
  };
  radix::Exe exe = radix::compile(cpu(), fn, s, x);
  EXPECT_EQ(count(exe.mlir(), "func.func private @Scaled_"), 3u) << exe.mlir();
  auto [a, b, c, d] = exe(s, x);
  radix::testing::expectClose(a, {2, 4, 6}, 1e-6);
  radix::testing::expectClose(b, {2, 4, 6}, 1e-6);
  radix::testing::expectClose(c, {3, 6, 9}, 1e-6);
  radix::testing::expectClose(d, {-2, -4, -6}, 1e-6);
}

// ---- function identity: private functions are named by their traced body, never an address ----

float gBodyScale = 2.0f;  // read while tracing Scaler: changes the traced body, not the call key

struct Scaler {
  Tensor w;
  Tensor forward(Tensor x) const { return x.mul(w).mulConstant(gBodyScale); }
  Tensor other(Tensor x) const { return x.mul(w).addConstant(gBodyScale); }
  Tensor same(Tensor x) const { return x.mul(w).mulConstant(gBodyScale); }  // forward's body
};

struct ScalerNet {
  Scaler s;
  Tensor forward(Tensor x) const { return radix::call(s, &Scaler::forward, x); }
  Tensor both(Tensor x) const { return radix::call(s, &Scaler::forward, x).add(radix::call(s, &Scaler::other, x)); }
  Tensor twins(Tensor x) const { return radix::call(s, &Scaler::forward, x).add(radix::call(s, &Scaler::same, x)); }
  Tensor named(Tensor x) const { return radix::call("scale", &Scaler::forward, s, x); }
  Tensor badName(Tensor x) const { return radix::call("2x", &Scaler::forward, s, x); }
};

std::vector<std::string> privateFunctions(const std::string& ir) {
  std::vector<std::string> names;
  const std::regex re("func\\.func private @(\\w+)\\(");
  for (auto it = std::sregex_iterator(ir.begin(), ir.end(), re); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  return names;
}

TEST(Module, FunctionNameComesFromItsBody) {
  ScalerNet net{{Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 2, 3})}};
  Tensor x = Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 1, 1});
  gBodyScale = 2.0f;
  const std::string a = radix::compile(cpu(), &ScalerNet::forward, net, x).mlir();
  const std::string b = radix::compile(cpu(), &ScalerNet::forward, net, x).mlir();
  gBodyScale = 3.0f;
  const std::string c = radix::compile(cpu(), &ScalerNet::forward, net, x).mlir();
  gBodyScale = 2.0f;
  EXPECT_EQ(a, b);  // same body: same module text (the executable cache hits)
  const auto na = privateFunctions(a), nc = privateFunctions(c);
  ASSERT_EQ(na.size(), 1u) << a;
  ASSERT_EQ(nc.size(), 1u) << c;
  EXPECT_TRUE(std::regex_match(na[0], std::regex("Scaler_[0-9a-f]{16}"))) << na[0];
  EXPECT_NE(na[0], nc[0]);  // a changed body: another name, so the cache misses
}

TEST(Module, DifferentFunctionsGetDifferentNames) {
  ScalerNet net{{Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 2, 3})}};
  Tensor x = Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 1, 1});
  radix::Exe exe = radix::compile(cpu(), &ScalerNet::both, net, x);
  const auto names = privateFunctions(exe.mlir());
  ASSERT_EQ(names.size(), 2u) << exe.mlir();
  EXPECT_NE(names[0], names[1]);
  radix::testing::expectClose(exe(net, x), {2 + 3, 4 + 4, 6 + 5}, 1e-6);
}

TEST(Module, EqualBodiesAreOneFunction) {
  ScalerNet net{{Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 2, 3})}};
  Tensor x = Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 1, 1});
  radix::Exe exe = radix::compile(cpu(), &ScalerNet::twins, net, x);
  EXPECT_EQ(privateFunctions(exe.mlir()).size(), 1u) << exe.mlir();
  EXPECT_EQ(count(exe.mlir(), "call @Scaler_"), 2u) << exe.mlir();
  radix::testing::expectClose(exe(net, x), {4, 8, 12}, 1e-6);
}

TEST(Module, CallTakesAFunctionName) {
  ScalerNet net{{Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 2, 3})}};
  Tensor x = Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 1, 1});
  radix::Exe exe = radix::compile(cpu(), &ScalerNet::named, net, x);
  const auto names = privateFunctions(exe.mlir());
  ASSERT_EQ(names.size(), 1u) << exe.mlir();
  EXPECT_TRUE(std::regex_match(names[0], std::regex("scale_[0-9a-f]{16}"))) << names[0];
  radix::testing::expectClose(exe(net, x), {2, 4, 6}, 1e-6);
  const std::string e = errorOf([&] { radix::compile(cpu(), &ScalerNet::badName, net, x); });
  EXPECT_EQ(e.rfind("[call] function name \"2x\" is not an identifier", 0), 0u) << e;
}

Tensor twice(Tensor x) { return x.add(x); }

TEST(Module, CallFreeFunctionAndLambda) {
  Tensor x = Tensor::fromValues(cpu(), Shape({2}, DType::f32), {1, 2});
  auto fn = [](Tensor x) {
    auto inc = [](Tensor t) { return t.addConstant(1); };
    return radix::call(inc, radix::call(&twice, x));
  };
  radix::Exe exe = radix::compile(cpu(), fn, x);
  EXPECT_EQ(count(exe.mlir(), "func.func private @fn_"), 2u) << exe.mlir();
  radix::testing::expectClose(exe(x), {3, 5}, 1e-6);
}

TEST(Module, CapturedTensorFromCallerIsAnError) {
  Tensor x = Tensor::fromValues(cpu(), Shape({2}, DType::f32), {1, 2});
  auto fn = [](Tensor x) { return radix::call([x](Tensor y) { return y.add(x); }, x); };
  EXPECT_NE(errorOf([&] { radix::compile(cpu(), fn, x); }).find("[add]"), std::string::npos);
  EXPECT_NE(errorOf([&] { radix::compile(cpu(), fn, x); }).find("pass it as an argument of radix::call"), std::string::npos);
}

// ---- Donation ----

struct Local {
  Tensor bias;
  std::array<Tensor, 2> forward(Tensor x, Tensor y) const {
    Tensor x1 = radix::call(*this, &Local::inner, x);
    Tensor x2 = radix::call(*this, &Local::inner, x1);
    return {x1.reuseBuffer(y), x2};
  }
  Tensor inner(Tensor x) const { return x.add(bias).reuseBuffer(x); }
};

TEST(Module, AddDonationsAttributes) {
  Shape s({8}, DType::f16);
  Local model{Tensor(s)};
  radix::Exe exe = radix::compile(cpu(), &Local::forward, model, Tensor(s), Tensor(s));
  const std::string& ir = exe.mlir();
  // %arg0 is the bias, %arg1 is x, %arg2 is y: y gives its buffer to result 0, x to result 1.
  EXPECT_EQ(exe.signature().argShapes.size(), 3u);
  EXPECT_NE(ir.find("tf.aliasing_output = 0 : i32"), std::string::npos) << ir;
  EXPECT_NE(ir.find("tf.aliasing_output = 1 : i32"), std::string::npos) << ir;
  EXPECT_EQ(exe.signature().donations, (std::vector<int32_t>{2, 1}));
}

TEST(Module, DonationRunsInPlace) {
  Shape s({5}, DType::f32);
  Local model{Tensor::fromValues(cpu(), s, {1, 1, 1, 1, 1})};
  Tensor x = Tensor::fromValues(cpu(), s, {0, 1, 2, 3, 4});
  Tensor y = Tensor::fromValues(cpu(), s, {9, 9, 9, 9, 9});
  radix::Exe exe = radix::compile(cpu(), &Local::forward, model, x, y);
  const void* xAddress = x.bufferAddress();
  const void* yAddress = y.bufferAddress();
  auto [r0, r1] = exe(model, x, y);
  radix::testing::expectClose(r0, {1, 2, 3, 4, 5}, 0);
  radix::testing::expectClose(r1, {2, 3, 4, 5, 6}, 0);
  EXPECT_EQ(r0.bufferAddress(), yAddress);  // written into y's buffer: no new allocation
  EXPECT_EQ(r1.bufferAddress(), xAddress);
  // The donated inputs are gone: using them is an error, never a read of stale data.
  EXPECT_EQ(errorOf([&] { x.toVector<float>(); }).rfind("[toVector] tensor {5}:f32 was donated", 0), 0u);
  EXPECT_NE(errorOf([&] { exe(model, x, y); }).find("was donated"), std::string::npos);
  EXPECT_FALSE(model.bias.toVector<float>().empty());  // the bias was not donated
}

TEST(Module, DonationOfTransposedInputIsStillCorrect) {
  // The result reads its donated input out of order: bufferization must not clobber it.
  Tensor x = Tensor::fromValues(cpu(), Shape({3, 3}, DType::f32), {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const void* address = x.bufferAddress();
  auto fn = [](Tensor x) { return x.transpose({1, 0}).add(x).reuseBuffer(x); };
  Tensor y = radix::testing::compileAndCall(cpu(), fn, x);
  radix::testing::expectClose(y, {2, 6, 10, 6, 10, 14, 10, 14, 18}, 0);
  EXPECT_EQ(y.bufferAddress(), address);
}

// A KV-cache write into a donated buffer touches the written rows only: no full-size copy of
// the cache onto itself is left in the lowered code.
struct CacheWriter {
  Tensor scale;
  Tensor forward(Tensor cache, Tensor row, Tensor pos) const {
    return cache.dynamicUpdateSlice({{"s", pos}}, row.mul(scale)).reuseBuffer(cache);
  }
};
struct CacheWriterCaller {
  CacheWriter writer;
  Tensor forward(Tensor cache, Tensor row, Tensor pos) const { return radix::call(writer, &CacheWriter::forward, cache, row, pos); }
};

// A donated cache written at one row, in @main or inside a radix::call (a private function),
// is written in place: no copy of the whole cache, and the result takes the cache's buffer.
TEST(Module, DonatedCacheWriteHasNoFullSizeCopy) {
  for (const bool inCall : {false, true}) {
    SCOPED_TRACE(inCall ? "inside radix::call" : "in @main");
    const PassDump dump("radix_donated_self_copy", "convert-linalg-to-loops");
    const radix::Platform platform = cpu().withOptions(dump.options);
    const Shape rowShape = Shape({1, 2, 3}, DType::f32).withTags({"s", "h", "d"});
    const Shape cacheShape = Shape({64, 2, 3}, DType::f32).withTags({"s", "h", "d"});
    std::vector<float> zeros(64 * 6, 0.f);
    Tensor cache = Tensor::fromValues(platform, cacheShape, zeros);
    Tensor row = Tensor::fromValues(platform, rowShape, {1, 2, 3, 4, 5, 6});
    Tensor pos = Tensor::fromValues(platform, Shape({}, DType::i32), std::vector<int32_t>{7});
    CacheWriterCaller model{{Tensor::fromValues(platform, rowShape, {2, 2, 2, 2, 2, 2})}};
    const void* address = cache.bufferAddress();
    Tensor result = inCall ? radix::testing::compileAndCall(platform, &CacheWriterCaller::forward, model, cache, row, pos)
                           : radix::testing::compileAndCall(platform, &CacheWriter::forward, model.writer, cache, row, pos);
    EXPECT_EQ(result.bufferAddress(), address);
    std::vector<float> expected = zeros;
    for (int i = 0; i < 6; ++i) expected[7 * 6 + i] = 2.f * static_cast<float>(i + 1);
    radix::testing::expectClose(result, expected, 0);
    const std::vector<std::string> texts = dump.texts();
    for (const std::string& ir : texts) {
      EXPECT_EQ(count(ir, "memref<64x2x3xf32> to memref<64x2x3xf32>"), 0u) << ir;
      EXPECT_EQ(count(ir, "memref.alloc() {alignment = 64 : i64} : memref<64x2x3xf32>"), 0u) << ir;
    }
    EXPECT_EQ(texts.size(), inCall ? 2u : 1u);  // one per function
  }
}

// A head-major cache {h, s, d} written at one position: the written rows are strided (one per
// head). Their copy is lowered to loops, not to MLIR's generic `memrefCopy` (which walked the
// elements with index arithmetic and took 7 us a write in Llama's decode); 1 and 2 threads.
struct RawCacheWriter {
  Tensor forward(Tensor cache, Tensor row, Tensor pos) const {
    return cache.dynamicUpdateSlice({{"s", pos}}, row).reuseBuffer(cache);
  }
};

TEST(Module, StridedCacheWriteIsLoweredToLoops) {
  for (const int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const PassDump dump("radix_strided_cache_write", "reconcile-unrealized-casts", threads);
    const radix::Platform platform = cpu().withOptions(dump.options);
    const Shape rowShape = Shape({3, 1, 5}, DType::f32).withTags({"h", "s", "d"});
    const Shape cacheShape = Shape({3, 40, 5}, DType::f32).withTags({"h", "s", "d"});
    std::vector<float> initial(3 * 40 * 5);
    for (size_t i = 0; i < initial.size(); ++i) initial[i] = static_cast<float>(i);
    Tensor cache = Tensor::fromValues(platform, cacheShape, initial);
    Tensor row = Tensor::fromValues(platform, rowShape, std::vector<float>(15, -1.f));
    Tensor pos = Tensor::fromValues(platform, Shape({}, DType::i32), std::vector<int32_t>{11});
    Tensor result = radix::testing::compileAndCall(platform, &RawCacheWriter::forward, RawCacheWriter{}, cache, row, pos);
    std::vector<float> expected = initial;
    for (int h = 0; h < 3; ++h)
      for (int d = 0; d < 5; ++d) expected[(h * 40 + 11) * 5 + d] = -1.f;
    radix::testing::expectClose(result, expected, 0);
    const std::vector<std::string> texts = dump.texts();
    for (const std::string& ir : texts) EXPECT_EQ(count(ir, "memrefCopy"), 0u) << ir;
    EXPECT_GE(texts.size(), 1u);
  }
}

// whileLoop carries its state in place: one copy of the (non-donated) initial state into the loop's
// buffer, none per iteration, and the result copied out once.
TEST(Module, WhileLoopCarriesItsStateInPlace) {
  struct State {
    Tensor x, i;
  };
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> step;
    float perIteration;
  };
  const Case cases[] = {
      {"addConstant", [](const Tensor& x) { return x.addConstant(1.5); }, 1.5f},
      {"add", [](const Tensor& x) { return x.add(Tensor::scalar(0.5, DType::f32).broad(x.shape())); }, 0.5f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PassDump dump("radix_while_in_place", "convert-linalg-to-loops");
    const radix::Platform platform = cpu().withOptions(dump.options);
    const Shape shape = Shape({64, 2, 3}, DType::f32).withTags({"s", "h", "d"});
    std::vector<float> init(64 * 6);
    for (size_t k = 0; k < init.size(); ++k) init[k] = static_cast<float>(k % 5);
    auto fn = [&](Tensor x) {
      const State s = radix::whileLoop(
          State{x, Tensor::scalar(0, DType::i32)}, [](const State& s) { return s.i.lt(5); },
          [&](const State& s) { return State{c.step(s.x), s.i.addConstant(1)}; });
      return s.x;
    };
    Tensor result = radix::testing::compileAndCall(platform, fn, Tensor::fromValues(platform, shape, init));
    std::vector<float> expected = init;
    for (float& v : expected) v += 5 * c.perIteration;
    radix::testing::expectClose(result, expected, 1e-6);
    std::string ir;
    for (const std::string& text : dump.texts()) ir += text;
    ASSERT_FALSE(ir.empty());
    EXPECT_LE(count(ir, "memref.alloc() {alignment = 64 : i64} : memref<64x2x3xf32>"), 1u) << ir;
    EXPECT_LE(count(ir, "memref<64x2x3xf32> to memref<64x2x3xf32>"), 2u) << ir;  // copies
  }
}

// A result whose unit dims were folded away (a {1, c, h, w} convolution computes {c, h, w}) is
// computed in its out-parameter through the inverse reshape, not in a temporary copied there.
// A temporary also read after its copy (the second result) keeps the copy; both stay right.
TEST(Module, ReshapedResultsAreWrittenInPlace) {
  const PassDump dump("radix_reshaped_results", "convert-linalg-to-loops");
  const radix::Platform platform = cpu().withOptions(dump.options);
  std::vector<float> xv(4 * 10 * 10), wv(6 * 4 * 3 * 3);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  const Tensor x = Tensor::fromValues(platform, Shape({1, 4, 10, 10}, DType::f32), xv);
  const Tensor w = Tensor::fromValues(platform, Shape({6, 4, 3, 3}, DType::f32), wv);
  Tensor::ConvOptions o;
  o.strides = {2, 2};
  o.padding = {{1, 1}, {1, 1}};
  // The reference: the same convolution, computed by hand.
  std::vector<float> expected(6 * 5 * 5, 0.f);
  for (int k = 0; k < 6; ++k)
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 5; ++c)
        for (int ci = 0; ci < 4; ++ci)
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              const int y = 2 * r + i - 1, xx = 2 * c + j - 1;
              if (y >= 0 && y < 10 && xx >= 0 && xx < 10)
                expected[(k * 5 + r) * 5 + c] += xv[(ci * 10 + y) * 10 + xx] * wv[((k * 4 + ci) * 3 + i) * 3 + j];
            }
  {
    Tensor y = radix::testing::compileAndCall(platform, [o](const Tensor& a, const Tensor& k) { return a.conv2d(k, o); }, x, w);
    radix::testing::expectClose(y, expected, 1e-4);
    std::string ir;
    for (const std::string& text : dump.texts()) ir += text;
    ASSERT_NE(ir.find("radix_kernel_conv"), std::string::npos) << ir;
    EXPECT_EQ(count(ir, "outs(%arg2"), 0u) << "the result is copied into its out-parameter:\n" << ir;
  }
  auto both = [o](const Tensor& a, const Tensor& k) {
    const Tensor y = a.conv2d(k, o);
    return std::make_pair(y, y.mulConstant(2));
  };
  auto [y, twice] = radix::testing::compileAndCall(platform, both, x, w);
  radix::testing::expectClose(y, expected, 1e-4);
  for (float& v : expected) v *= 2;
  radix::testing::expectClose(twice, expected, 2e-4);
}

// A result buffer of 64 KiB or more goes back to a pool when its tensor dies, and the next
// result of the same size takes it: no fresh mapping and page faults per call.
TEST(Module, LargeResultBuffersAreReused) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "the pool is off under AddressSanitizer, so that it sees every reuse";
#endif
#endif
  auto fn = [](Tensor x) { return x.add(x); };
  const Shape s({512, 1024}, DType::f32);  // 2 MiB
  Tensor x = Tensor::fromValues(cpu(), s, std::vector<float>(s.count(), 1.f));
  radix::Exe exe = radix::compile(cpu(), fn, x);
  const void* first = nullptr;
  {
    Tensor y = exe(x);
    first = y.bufferAddress();
  }
  Tensor z = exe(x);
  EXPECT_EQ(z.bufferAddress(), first);
  const std::vector<float> values = z.toVector<float>();
  EXPECT_EQ(values.front(), 2.f);
  EXPECT_EQ(values.back(), 2.f);
  // A small result is a fresh allocation: the pool only keeps large buffers.
  Tensor small = radix::testing::compileAndCall(cpu(), fn, Tensor::fromValues(cpu(), Shape({4}, DType::f32), {1, 2, 3, 4}));
  radix::testing::expectClose(small, {2, 4, 6, 8}, 0);
}

TEST(Module, DonatingOneArgumentTwiceIsAnError) {
  auto fn = [](Tensor x) { return std::make_pair(x.exp().reuseBuffer(x), x.log().reuseBuffer(x)); };
  std::string e = errorOf([&] { radix::compile(cpu(), fn, Tensor(Shape({4}, DType::f32))); });
  EXPECT_EQ(e.rfind("[reuseBuffer]", 0), 0u) << e;
  EXPECT_NE(e.find("result 0"), std::string::npos) << e;
  EXPECT_NE(e.find("result 1"), std::string::npos) << e;
}

TEST(Module, ReuseBufferNeedsAnArgumentOfTheSameShape) {
  auto notArg = [](Tensor x) { return x.exp().reuseBuffer(x.log()); };
  EXPECT_EQ(errorOf([&] { radix::compile(cpu(), notArg, Tensor(Shape({4}, DType::f32))); }).rfind("[reuseBuffer] origin", 0), 0u);
  auto otherShape = [](Tensor x, Tensor y) { return x.reuseBuffer(y); };
  std::string e = errorOf([&] { radix::compile(cpu(), otherShape, Tensor(Shape({4}, DType::f32)), Tensor(Shape({5}, DType::f32))); });
  EXPECT_NE(e.find("{4}:f32"), std::string::npos) << e;
  EXPECT_NE(e.find("{5}:f32"), std::string::npos) << e;
}

TEST(Module, ReturningAnArgumentUnchangedIsACopyNotADonation) {
  Tensor x = Tensor::fromValues(cpu(), Shape({3}, DType::f32), {1, 2, 3});
  radix::Exe exe = radix::compile(cpu(), [](Tensor x) { return x; }, x);
  EXPECT_EQ(exe.mlir().find("tf.aliasing_output"), std::string::npos);
  Tensor y = exe(x);
  EXPECT_NE(y.bufferAddress(), x.bufferAddress());
  radix::testing::expectClose(y, {1, 2, 3}, 0);
  radix::testing::expectClose(x, {1, 2, 3}, 0);
}

// ---- Memory kinds ----

TEST(Module, MemoryKinds) {
  Tensor x = Tensor::fromValues(cpu(), Shape({2}, DType::f32), {1, 2});
  auto fn = [](Tensor x) {
    return std::make_tuple(x.exp().toMemory(radix::Memory::hostPinned), x.neg(),
                           x.abs().toMemory(radix::Memory::hostUnpinned));
  };
  radix::Exe exe = radix::compile(cpu(), fn, x);
  EXPECT_NE(exe.mlir().find("mhlo.memory_kind = \"pinned_host\""), std::string::npos) << exe.mlir();
  EXPECT_NE(exe.mlir().find("mhlo.memory_kind = \"unpinned_host\""), std::string::npos) << exe.mlir();
  EXPECT_EQ(count(exe.mlir(), "mhlo.memory_kind"), 2u);  // device is the default: no attribute
  auto [a, b, c] = exe(x);
  EXPECT_EQ(a.memory(), radix::Memory::hostPinned);
  EXPECT_EQ(b.memory(), radix::Memory::device);
  EXPECT_EQ(c.memory(), radix::Memory::hostUnpinned);
  radix::testing::expectClose(a, {std::exp(1.f), std::exp(2.f)}, 1e-6);
  EXPECT_EQ(radix::memoryKindName(radix::Memory::hostPinned), "pinned_host");
}

// ---- Sharding ----

TEST(Module, WriteShardingRepresentation) {
  Shape x({16, 8}, DType::f32);
  EXPECT_EQ(radix::shardingRepresentation(x, 4), "{replicated}");                               // by default replicated
  EXPECT_EQ(radix::shardingRepresentation(x.withSharding({0}), 4), "{devices=[4,1]<=[4]}");     // first axis
  EXPECT_EQ(radix::shardingRepresentation(x.withSharding({0, 1}), 2), "{devices=[2,2]<=[2]}");  // both axes
  EXPECT_EQ(radix::shardingRepresentation(x.withSharding({0}), 1), "{replicated}");
}

TEST(Module, ShardingAttributes) {
  // Sharded over processes: outside mpirun an error that says so (tests/mpi/ runs it under mpirun).
  const std::string e = errorOf([&] { cpu().withSharding({.numReplicas = 1, .numPartitions = 4, .enabled = true}); });
  EXPECT_EQ(e.rfind("[platform]", 0), 0u) << e;
  EXPECT_NE(e.find("mpirun -np 4"), std::string::npos) << e;
  EXPECT_NE(e.find("numPartitions = 4"), std::string::npos) << e;
  // Disabled: the module records the counts, one process runs it.
  Tensor w = Tensor::fromValues(cpu(), Shape({4, 2}, DType::f32).withSharding({0}), {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor x = Tensor::fromValues(cpu(), Shape({4, 2}, DType::f32), {1, 1, 1, 1, 1, 1, 1, 1});
  radix::Platform off = cpu().withSharding({.numReplicas = 1, .numPartitions = 4, .enabled = false});
  radix::Exe plain = radix::compile(off, [](Tensor w, Tensor x) { return w.add(x); }, w, x);
  EXPECT_EQ(plain.mlir().find("mhlo.sharding"), std::string::npos);
  EXPECT_NE(plain.mlir().find("mhlo.num_partitions = 4 : i32"), std::string::npos);
  radix::testing::expectClose(plain(w, x), {2, 3, 4, 5, 6, 7, 8, 9}, 0);
  EXPECT_EQ(cpu().processIndex(), 0);
  EXPECT_EQ(cpu().processCount(), 1);
  EXPECT_EQ(errorOf([&] { cpu().withSharding({.numReplicas = 0}); }).rfind("[platform]", 0), 0u);
}

// ---- Argument identity ----

struct Tied {
  Tensor a, b;
  Tensor forward(Tensor x) const { return a.add(x).mul(b); }
};

TEST(Module, SameBufferTwiceIsOneArgument) {
  Tensor w = Tensor::fromValues(cpu(), Shape({2}, DType::f32), {2, 3});
  Tensor x = Tensor::fromValues(cpu(), Shape({2}, DType::f32), {1, 1});
  Tied tied{w, w};
  radix::Exe exe = radix::compile(cpu(), &Tied::forward, tied, x);
  EXPECT_EQ(exe.signature().argShapes.size(), 2u);
  EXPECT_EQ(exe.signature().leafToArg, (std::vector<int32_t>{0, 0, 1}));
  radix::testing::expectClose(exe(tied, x), {6, 12}, 0);
  Tied untied{w, Tensor::fromValues(cpu(), Shape({2}, DType::f32), {2, 3})};
  EXPECT_NE(errorOf([&] { exe(untied, x); }).find("same buffer as another argument at compile time"), std::string::npos);
}

TEST(Module, SameIdentityWithTwoShapesIsAnError) {
  Tensor p(Shape({2}, DType::f32));
  Tensor q = p.withTags({"a"});  // a copy keeps the identity of p
  std::string e = errorOf([&] { radix::compile(cpu(), [](Tensor a, Tensor b) { return a.add(a); }, p, q); });
  EXPECT_EQ(e.rfind("[compile]", 0), 0u) << e;
  EXPECT_NE(e.find("{2}:f32"), std::string::npos) << e;
  EXPECT_NE(e.find("{a=2}:f32"), std::string::npos) << e;
}

TEST(Module, TracedTensorFromAnotherCompilationIsAnError) {
  static Tensor leaked;
  radix::compile(cpu(), [](Tensor x) { leaked = x.exp(); return x; }, Tensor(Shape({2}, DType::f32)));
  std::string e = errorOf([&] { radix::compile(cpu(), [](Tensor x) { return x.add(leaked); }, Tensor(Shape({2}, DType::f32))); });
  EXPECT_EQ(e.rfind("[add]", 0), 0u) << e;
  EXPECT_NE(e.find("another compilation"), std::string::npos) << e;
  EXPECT_EQ(errorOf([&] { leaked.exp(); }).rfind("[exp] no compilation in progress", 0), 0u);
}

TEST(Module, WrongArgumentStructureAtCallTime) {
  mlp::MLP nn = mlp::example(cpu(), DType::f16);
  Tensor x = mlp::input(cpu(), DType::f16);
  radix::Exe exe = radix::compile(cpu(), &mlp::MLP::forward, nn, x);
  EXPECT_EQ(errorOf([&] { exe(nn.layers[0], x); }).rfind("[exe] argument structure differs", 0), 0u);
  EXPECT_EQ(errorOf([&] { exe(nn, f16(Shape({3}, DType::f16), {1, 2, 3})); }).rfind("[exe] arg0 is {3}:f16, compiled for {2}:f16", 0), 0u);
  EXPECT_EQ(errorOf([&] { exe(nn, Tensor(Shape({2}, DType::f16))); }).rfind("[exe] arg0 {2}:f16 is not bound", 0), 0u);
  auto scaled = [](Tensor x, float s) { return x.mulConstant(s); };
  radix::Exe exe2 = radix::compile(cpu(), scaled, x, 2.0f);
  radix::testing::expectClose(exe2(x, 2.0f), {-2, 2}, 0);
  EXPECT_EQ(errorOf([&] { exe2(x, 3.0f); }).rfind("[exe] non-Tensor arguments", 0), 0u);
}

// ---- Hashing ----

struct Config {
  Tensor w;
  int heads;
  std::string act;
  std::optional<Tensor> bias;
};

TEST(Module, HashCoversEveryShapeAttributeAndValue) {
  using radix::detail::hashArgs;
  Shape s = Shape({4, 8}, DType::f32).withTags({"b", "d"});
  Config base{Tensor(s), 2, "gelu", std::nullopt};
  const uint64_t h = hashArgs(base);
  EXPECT_EQ(h, hashArgs(Config{Tensor(s), 2, "gelu", std::nullopt}));  // equal arguments, other buffers
  EXPECT_NE(h, hashArgs(Config{Tensor(Shape({4, 9}, DType::f32).withTags({"b", "d"})), 2, "gelu", std::nullopt}));
  EXPECT_NE(h, hashArgs(Config{Tensor(s.withDtype(DType::f16)), 2, "gelu", std::nullopt}));
  EXPECT_NE(h, hashArgs(Config{Tensor(s.withTag(1, "e")), 2, "gelu", std::nullopt}));
  EXPECT_NE(h, hashArgs(Config{Tensor(s.withSharding({0})), 2, "gelu", std::nullopt}));
  EXPECT_NE(h, hashArgs(Config{Tensor(s), 3, "gelu", std::nullopt}));
  EXPECT_NE(h, hashArgs(Config{Tensor(s), 2, "relu", std::nullopt}));
  EXPECT_NE(h, hashArgs(Config{Tensor(s), 2, "gelu", Tensor(Shape({8}, DType::f32))}));
  EXPECT_NE(hashArgs(std::vector<int>{1, 2}), hashArgs(std::vector<int>{1, 2, 3}));
  EXPECT_NE(hashArgs(std::variant<int, float>(1)), hashArgs(std::variant<int, float>(1.0f)));
}

// The Hasher streams through a fixed buffer: any split of a byte stream hashes as XXH64 of the
// whole (cache keys stay what they were when it buffered the stream in a string).
TEST(Module, HasherIsXxh64OfTheWholeStreamHoweverItIsSplit) {
  std::vector<unsigned char> stream(5000);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<unsigned char>(i * 131 + 7);
  const uint64_t whole = XXH64(stream.data(), stream.size(), 0);
  for (size_t piece : {1, 7, 255, 256, 257, 300, 1000, 5000}) {
    radix::detail::Hasher h;
    for (size_t at = 0; at < stream.size(); at += piece) h.bytes(stream.data() + at, std::min(piece, stream.size() - at));
    EXPECT_EQ(h.digest(), whole) << "pieces of " << piece;
    EXPECT_EQ(h.digest(), whole) << "digest() twice";
  }
  radix::detail::Hasher empty;
  EXPECT_EQ(empty.digest(), XXH64(nullptr, 0, 0));
}

}  // namespace

namespace {

struct Pairs {
  std::pair<Tensor, Tensor> twice(Tensor x) const {
    Tensor y = x.exp();
    return {y, y};
  }
  std::tuple<Tensor, Tensor, Tensor> echo(Tensor x, Tensor z) const { return {x, z.neg(), x}; }
};

TEST(Module, CalledFunctionsMayReturnOneValueTwiceOrAnArgument) {
  Tensor x = Tensor::fromValues(cpu(), Shape({2}, DType::f32), {0, 1});
  auto fn = [](const Pairs& p, Tensor x) {
    auto [a, b] = radix::call(p, &Pairs::twice, x);
    auto [c, d, e] = radix::call(p, &Pairs::echo, a, b);
    return std::make_tuple(a, b, c, d, e, x);
  };
  auto [a, b, c, d, e, x2] = radix::testing::compileAndCall(cpu(), fn, Pairs{}, x);
  for (const Tensor* t : {&a, &b, &c, &e}) radix::testing::expectClose(*t, {1, std::exp(1.f)}, 1e-6);
  radix::testing::expectClose(d, {-1, -std::exp(1.f)}, 1e-6);
  radix::testing::expectClose(x2, {0, 1}, 0);
  EXPECT_NE(a.bufferAddress(), b.bufferAddress());  // duplicates are copies, not shared buffers
}

}  // namespace
