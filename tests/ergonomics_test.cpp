// First-day ergonomics: errors name the argument's field path (self.layers[1].attn.wq), unbound
// weights fail at compile time, and errors thrown while tracing name the user's file and line.
#include <radix/radix.h>
#include <radix/testing.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;

radix::Platform cpu() { return radix::Platform::cpu(); }
Tensor f32(std::initializer_list<int64_t> dims, std::vector<float> v) {
  return Tensor::fromValues(cpu(), Shape(dims, DType::f32), v);
}

using radix::testing::errorOf;

struct Attn {
  Tensor wq, wk;
  int heads = 1;
};
struct Layer {
  Attn attn;
  std::optional<Tensor> bias;
  Tensor forward(Tensor x) const {
    Tensor y = x.mul(attn.wq).add(attn.wk);
    return bias ? y.add(*bias) : y;
  }
};
struct Net {
  std::vector<Layer> layers;
  std::pair<Tensor, Tensor> extra;
  Tensor forward(Tensor x) const {
    for (const Layer& l : layers) x = l.forward(x);
    return x.add(extra.first).add(extra.second);
  }
};

Net net() {
  auto v = [](float a) { return f32({2}, {a, a}); };
  return Net{{Layer{Attn{v(1), v(2)}, std::nullopt}, Layer{Attn{v(3), v(4)}, v(5)}}, {v(0), v(0)}};
}

// ---- paths ----

TEST(Ergonomics, FieldNamesOfPlainStructs) {
  using radix::detail::fieldName;
  EXPECT_EQ((fieldName<Attn, 0>()), "wq");
  EXPECT_EQ((fieldName<Attn, 1>()), "wk");
  EXPECT_EQ((fieldName<Attn, 2>()), "heads");
  EXPECT_EQ((fieldName<Net, 1>()), "extra");
}

TEST(Ergonomics, IdentifierAtEndOfSpelledAddresses) {
  using radix::detail::identifierAtEnd;
  EXPECT_EQ(identifierAtEnd("std::string_view f() [Ptr = &kFakeObject.value.layers]"), "layers");  // clang
  EXPECT_EQ(identifierAtEnd("f() [with auto Ptr = (& kFakeObject<NN>.FakeObject<NN>::value.NN::w_2)]"), "w_2");  // gcc
  EXPECT_EQ(identifierAtEnd("f() [Ptr = &kFakeObject.value + 16]"), "");
  EXPECT_EQ(identifierAtEnd("no brackets"), "");
  EXPECT_EQ(identifierAtEnd("f() [Ptr = 3]"), "");
}

TEST(Ergonomics, PathsOfEveryLeaf) {
  Net n = net();
  Tensor x = f32({2}, {1, 1});
  EXPECT_EQ(radix::detail::tensorPaths(true, n, x),
            (std::vector<std::string>{"self.layers[0].attn.wq", "self.layers[0].attn.wk", "self.layers[1].attn.wq",
                                      "self.layers[1].attn.wk", "self.layers[1].bias", "self.extra[0]",
                                      "self.extra[1]", "arg0"}));
  EXPECT_EQ(radix::detail::tensorPaths(false, x, std::vector<Tensor>{x, x}),
            (std::vector<std::string>{"arg0", "arg1[0]", "arg1[1]"}));
  radix::detail::PathBuilder b;
  b.path = "arg0";
  b.enter({{}, 2, true});
  EXPECT_EQ(b.path, "arg0.field#2");  // when the compiler does not spell the name
  b.leave();
  EXPECT_EQ(b.path, "arg0");
}

TEST(Ergonomics, ExeErrorsNameTheFieldPath) {
  Net n = net();
  Tensor x = f32({2}, {1, 1});
  radix::Exe exe = radix::compile(cpu(), &Net::forward, n, x);
  radix::testing::expectClose(exe(n, x), {18, 18}, 0);  // (1*1+2)*3+4+5
  Net wrong = n;
  wrong.layers[1].attn.wq = f32({3}, {1, 2, 3});
  EXPECT_EQ(errorOf([&] { exe(wrong, x); }), "[exe] self.layers[1].attn.wq is {3}:f32, compiled for {2}:f32");
  EXPECT_EQ(errorOf([&] { exe(n, Tensor(Shape({2}, DType::f32))); }), "[exe] arg0 {2}:f32 is not bound to a buffer");

  auto fn = [](const Attn& a, Tensor x) { return x.mul(a.wq).add(a.wk); };
  radix::Exe lambda = radix::compile(cpu(), fn, n.layers[0].attn, x);
  Attn bad = n.layers[0].attn;
  bad.wk = Tensor::fromValues(cpu(), Shape({2}, DType::f16), {1, 1});
  EXPECT_EQ(errorOf([&] { lambda(bad, x); }), "[exe] arg0.wk is {2}:f16, compiled for {2}:f32");
}

TEST(Ergonomics, TiedAndDonatedBuffersNameTheirPaths) {
  Tensor w = f32({2}, {2, 3});
  Attn tied{w, w};
  auto fn = [](const Attn& a, Tensor x) { return x.mul(a.wq).add(a.wk); };
  Tensor x = f32({2}, {1, 1});
  radix::Exe exe = radix::compile(cpu(), fn, tied, x);
  Attn untied{w, f32({2}, {2, 3})};
  EXPECT_EQ(errorOf([&] { exe(untied, x); }),
            "[exe] arg0.wk {2}:f32 was the same buffer as another argument at compile time (arg0.wq) but differs now");

  auto inc = [](Tensor x) { return x.addConstant(1).reuseBuffer(x); };
  Tensor y = f32({2}, {1, 2});
  radix::Exe donate = radix::compile(cpu(), inc, y);
  donate(y);
  const std::string e = errorOf([&] { donate(y); });
  EXPECT_EQ(e.rfind("[exe] arg0 {2}:f32 was donated", 0), 0u) << e;
}

// ---- unbound weights ----

TEST(Ergonomics, UnboundWeightIsACompileError) {
  Net n = net();
  n.layers[1].bias = Tensor();
  Tensor x = f32({2}, {1, 1});
  const std::string e = errorOf([&] { radix::compile(cpu(), &Net::forward, n, x); });
  EXPECT_EQ(e.rfind("[compile] weight self.layers[1].bias is an unbound Tensor() {}:f32: give it a buffer", 0), 0u)
      << e;
  const std::string top = errorOf([&] { radix::compile(cpu(), [](Tensor a) { return a.exp(); }, Tensor()); });
  EXPECT_EQ(top.rfind("[compile] argument arg0 is an unbound Tensor()", 0), 0u) << top;
  // Placeholders and buffers are fine.
  n.layers[1].bias = Tensor(Shape({2}, DType::f32));
  EXPECT_NO_THROW(radix::compile(cpu(), &Net::forward, n, x));
}

TEST(Ergonomics, SharedIdentityWithTwoShapesNamesBothPaths) {
  Tensor p(Shape({2}, DType::f32));
  Tensor q = p.withTags({"a"});  // a copy keeps the identity of p
  const std::string e = errorOf([&] { radix::compile(cpu(), [](Tensor a, Tensor b) { return a.add(a); }, p, q); });
  EXPECT_EQ(e, "[compile] arg0 {2}:f32 and arg1 {a=2}:f32 share one placeholder identity but their shapes differ");
}

// ---- the user's file and line ----

int badLine = 0;

TEST(Ergonomics, OpErrorsNameTheUsersLine) {
  auto fn = [](Tensor a, Tensor b) {
    Tensor c = a.exp();
    badLine = __LINE__; return c.add(b);  // {2} + {3}: throws before the op records anything
  };
  const std::string e = errorOf([&] { radix::compile(cpu(), fn, f32({2}, {1, 2}), f32({3}, {1, 2, 3})); });
  const std::string where = "ergonomics_test.cpp:" + std::to_string(badLine) + ")";
  EXPECT_EQ(e.rfind("[add]", 0), 0u) << e;
  EXPECT_NE(e.find("(at "), std::string::npos) << e;
  EXPECT_EQ(e.substr(e.size() - where.size()), where) << e;
}

TEST(Ergonomics, ErrorsOfNestedCallsAndCompositesNameTheirLine) {
  auto inner = [](Tensor a, Tensor b) {
    badLine = __LINE__; return a.add(b.exp());  // the add fails, after exp's location was recorded
  };
  auto fn = [&](Tensor a, Tensor b) { return radix::call(inner, a, b); };
  std::string e = errorOf([&] { radix::compile(cpu(), fn, f32({2}, {1, 2}), f32({3}, {1, 2, 3})); });
  EXPECT_NE(e.find("ergonomics_test.cpp:" + std::to_string(badLine) + ")"), std::string::npos) << e;

  auto composite = [](Tensor a) {
    badLine = __LINE__; return a.sigmoid();  // a composite op: its inner ops pass the user's location on
  };
  Tensor ints = Tensor::fromValues(cpu(), Shape({2}, DType::i32), std::vector<int32_t>{1, 2});
  e = errorOf([&] { radix::compile(cpu(), composite, ints); });
  EXPECT_EQ(e.rfind("[sigmoid]", 0), 0u) << e;
  EXPECT_NE(e.find("ergonomics_test.cpp:" + std::to_string(badLine) + ")"), std::string::npos) << e;
}

TEST(Ergonomics, LocationIsAppendedOnceAndNotReused) {
  // An error of the user's own, thrown before any op of this compile: the line of this compile,
  // not a stale one of the previous compile.
  radix::compile(cpu(), [](Tensor a) { return a.exp(); }, f32({2}, {1, 2}));
  auto mine = [](Tensor) -> Tensor { throw radix::Error("[mine] bad config"); };
  const int line = __LINE__ + 1;
  const std::string e = errorOf([&] { radix::compile(cpu(), mine, f32({2}, {1, 2})); });
  EXPECT_TRUE(e.starts_with("[mine] bad config (at ")) << e;
  EXPECT_TRUE(e.ends_with("ergonomics_test.cpp:" + std::to_string(line) + ")")) << e;
  // Outside a compile, the op's line is named too.
  Tensor bound = f32({2}, {1, 2});
  const std::string outside = errorOf([&] {
    badLine = __LINE__; bound.exp();
  });
  EXPECT_EQ(outside.rfind("[exp] no compilation in progress", 0), 0u) << outside;
  EXPECT_NE(outside.find("ergonomics_test.cpp:" + std::to_string(badLine) + ")"), std::string::npos) << outside;
  EXPECT_EQ(outside.find("(at ", outside.find("(at ") + 1), std::string::npos) << outside;
}

}  // namespace

namespace {

TEST(Ergonomics, WithTagAndWithTagsFromAVector) {
  Tensor t(Shape({2, 8}, DType::f32));
  EXPECT_EQ(t.withTag(-1, "d").shape().str(), "{2,d=8}:f32");
  EXPECT_EQ(t.withTags(std::vector<radix::Tag>{"b", "d"}).withTag("d", "k").shape().str(), "{b=2,k=8}:f32");
  EXPECT_EQ(t.withTags(std::vector<radix::Tag>{"b", "d"}).withTag(0, "").shape().str(), "{2,d=8}:f32");
  EXPECT_EQ(errorOf([&] { t.withTags(std::vector<radix::Tag>{"b", "d"}).withTag(0, "d"); }).rfind("[withTag]", 0), 0u);
  EXPECT_EQ(errorOf([&] { t.withTag("x", "d"); }).rfind("[withTag]", 0), 0u);
  EXPECT_EQ(errorOf([&] { t.withTags(std::vector<radix::Tag>{"b"}); }).rfind("[withTags]", 0), 0u);
}

}  // namespace

namespace {

struct Config {
  Tensor w;
  int heads = 2;
  std::vector<float> scales;
  std::optional<radix::Tag> axis;
  Tensor forward(Tensor x) const {
    Tensor y = x.mul(w).mulConstant(heads);
    for (float s : scales) y = y.mulConstant(s);
    return y;
  }
};

TEST(Ergonomics, ChangedConstantsAreNamed) {
  Config c{f32({2}, {1, 2}), 2, {1, 3}, std::nullopt};
  Tensor x = f32({2}, {1, 1});
  radix::Exe exe = radix::compile(cpu(), &Config::forward, c, x);
  radix::testing::expectClose(exe(c, x), {6, 12}, 0);
  const std::string head = "[exe] non-Tensor arguments (compile-time constants) differ from compile time: ";
  Config heads = c;
  heads.heads = 4;
  EXPECT_EQ(errorOf([&] { exe(heads, x); }), head + "self.heads changed; compile again for new values");
  Config scales = c;
  scales.scales = {1, 3, 5};
  EXPECT_EQ(errorOf([&] { exe(scales, x); }),
            head + "self.scales has size 3, compiled with 2 (container sizes, optional presence and variant "
                   "alternatives are constants); compile again for new values");
  Config scale = c;
  scale.scales[1] = 4;
  EXPECT_EQ(errorOf([&] { exe(scale, x); }), head + "self.scales[1] changed; compile again for new values");
  Config axis = c;
  axis.axis = "d";
  EXPECT_EQ(errorOf([&] { exe(axis, x); }).rfind(head + "self.axis has size 1, compiled with 0", 0), 0u);
}

}  // namespace

namespace {

TEST(Ergonomics, EveryOpFamilyNamesTheUsersLine) {
  // Ops of every family take Tensor::Loc (radix::Loc) and so note the caller's line, with no
  // code of their own for it.
  Tensor x(Shape({2, 6}, DType::f32).withTags({"s", "d"}));
  std::vector<std::pair<int, std::string>> errors;
  auto check = [&](auto fn) {
    const std::string e = errorOf([&] { radix::compile(cpu(), fn, x); });
    errors.emplace_back(badLine, e);
  };
  check([](Tensor x) { badLine = __LINE__; return x.splitAxis("d", {{"h", 4}, {"hd", -1}}); });
  check([](Tensor x) { badLine = __LINE__; return x.softmax("k"); });
  check([](Tensor x) { badLine = __LINE__; return x.gather({{"d", x}}); });
  check([](Tensor x) { badLine = __LINE__; return Tensor::iota(x.shape(), "q"); });
  check([](Tensor x) { badLine = __LINE__; return x.topK(7, "d").values; });
  ASSERT_EQ(errors.size(), 5u);
  for (const auto& [line, e] : errors) {
    EXPECT_EQ(e.rfind("[", 0), 0u) << e;
    EXPECT_NE(e.find("ergonomics_test.cpp:" + std::to_string(line) + ")"), std::string::npos) << e;
  }
}

}  // namespace
