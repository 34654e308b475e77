// radix::whileLoop and radix::ifElse: data-dependent loops, nesting, captured values, radix::call
// in and around regions, structured state, errors; serial and threaded lowering.
#include <radix/radix.h>
#include <radix/testing.h>

#include <optional>
#include <string>
#include <vector>

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;

radix::Platform cpu(int threads) {
  radix::CompileOptions options;
  options.threads = threads;
  return radix::Platform::cpu().withOptions(options);
}

using radix::testing::errorOf;

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

Tensor scalarI64(int64_t v) { return Tensor::fromValues(radix::Platform::cpu(), Shape({}, DType::i64), std::vector<int64_t>{v}); }
Tensor scalarF32(float v) { return Tensor::fromValues(radix::Platform::cpu(), Shape({}, DType::f32), {v}); }

// Without comparison ops: x != 0 as bool, x > 0 as relu(x) != 0 (floats).
Tensor nonZero(const Tensor& x) { return x.convert(DType::bool_); }
Tensor positive(const Tensor& x) { return x.relu().convert(DType::bool_); }
Tensor isOdd(const Tensor& n) { return nonZero(n.sub(n.div(Tensor::scalar(2, n.dtype())).mulConstant(2))); }

int64_t collatzSteps(int64_t n) {
  int64_t steps = 0;
  for (; n != 1; ++steps) n = n % 2 ? 3 * n + 1 : n / 2;
  return steps;
}

struct Collatz {
  Tensor n, steps;
};

// A loop with a data-dependent trip count and an ifElse inside it.
Collatz collatz(const Tensor& n0) {
  return radix::whileLoop(
      Collatz{n0, Tensor::scalar(0, DType::i64)}, [](const Collatz& s) { return nonZero(s.n.addConstant(-1)); },
      [](const Collatz& s) {
        Tensor next = radix::ifElse(
            isOdd(s.n), [&] { return s.n.mulConstant(3).addConstant(1); },
            [&] { return s.n.div(Tensor::scalar(2, DType::i64)); });
        return Collatz{next, s.steps.addConstant(1)};
      });
}

class ControlThreads : public ::testing::TestWithParam<int> {};

TEST_P(ControlThreads, CollatzDataDependentTripCount) {
  auto exe = radix::compile(cpu(GetParam()), &collatz, scalarI64(1));
  for (int64_t n : {1, 6, 7, 27, 97}) {
    Collatz r = exe(scalarI64(n));
    EXPECT_EQ(r.n.toVector<int64_t>(), std::vector<int64_t>{1}) << n;
    EXPECT_EQ(r.steps.toVector<int64_t>(), std::vector<int64_t>{collatzSteps(n)}) << n;
  }
  EXPECT_EQ(count(exe.mlir(), "scf.while"), 1u) << exe.mlir();
  EXPECT_EQ(count(exe.mlir(), "scf.if"), 1u) << exe.mlir();
}

// Doubles a vector while its sum is below a captured limit; the vector is large enough that
// the threaded lowering makes its ops parallel loops inside the while.
TEST_P(ControlThreads, DoubleWhileBelowCapturedLimit) {
  const int64_t n = 40000;
  auto f = [](const Tensor& x, const Tensor& limit) {
    return radix::whileLoop(
        x, [&](const Tensor& v) { return positive(limit.sub(v.sum(0).reshape({}))); },
        [](const Tensor& v) { return v.add(v); });
  };
  std::vector<float> ones(n, 1.f);
  Tensor x = Tensor::fromValues(radix::Platform::cpu(), Shape({n}, DType::f32), ones);
  auto exe = radix::compile(cpu(GetParam()), f, x, scalarF32(1e5f));
  for (float limit : {1e5f, 4e4f, 1.f, 3e6f}) {
    // Sum starts at 40000 and doubles: first sum >= limit.
    float expected = 1;
    while (expected * n < limit) expected *= 2;
    std::vector<float> y = exe(x, scalarF32(limit)).toVector<float>();
    ASSERT_EQ(y.size(), static_cast<size_t>(n));
    EXPECT_EQ(y[0], expected) << limit;
    EXPECT_EQ(y[n - 1], expected) << limit;
  }
}

// Nested loops: the inner loop's bound is the outer loop's counter; both capture `one`.
TEST_P(ControlThreads, NestedLoops) {
  auto f = [](const Tensor& rounds) {
    Tensor one = Tensor::scalar(1, DType::i64);
    struct S {
      Tensor i, total;
    };
    S out = radix::whileLoop(
        S{Tensor::scalar(0, DType::i64), Tensor::scalar(0, DType::i64)},
        [&](const S& s) { return nonZero(rounds.sub(s.i)); },
        [&](const S& s) {
          Tensor i = s.i.add(one);
          S inner = radix::whileLoop(
              S{Tensor::scalar(0, DType::i64), s.total}, [&](const S& t) { return nonZero(i.sub(t.i)); },
              [&](const S& t) { return S{t.i.add(one), t.total.add(one)}; });
          return S{i, inner.total};
        });
    return out.total;
  };
  auto exe = radix::compile(cpu(GetParam()), f, scalarI64(0));
  for (int64_t r : {0, 1, 4, 9}) EXPECT_EQ(exe(scalarI64(r)).toVector<int64_t>(), std::vector<int64_t>{r * (r + 1) / 2}) << r;
  EXPECT_EQ(count(exe.mlir(), "scf.while"), 2u) << exe.mlir();
}

INSTANTIATE_TEST_SUITE_P(Control, ControlThreads, ::testing::Values(1, 0),
                         [](const ::testing::TestParamInfo<int>& p) { return p.param == 1 ? "serial" : "threads"; });

// ifElse alone, capturing outer values in both branches, with a struct result.
TEST(Control, IfElseCapturesAndStructResult) {
  auto f = [](const Tensor& pred, const Tensor& a, const Tensor& b) {
    return radix::ifElse(
        nonZero(pred), [&] { return std::pair<Tensor, Tensor>{a.add(b), a}; },
        [&] { return std::pair<Tensor, Tensor>{a.sub(b), b}; });
  };
  const auto p = radix::Platform::cpu();
  Tensor a = Tensor::fromValues(p, Shape({3}, DType::f32), {1, 2, 3});
  Tensor b = Tensor::fromValues(p, Shape({3}, DType::f32), {10, 20, 30});
  auto exe = radix::compile(cpu(1), f, scalarI64(1), a, b);
  auto [x, y] = exe(scalarI64(1), a, b);
  EXPECT_EQ(x.toVector<float>(), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(y.toVector<float>(), (std::vector<float>{1, 2, 3}));
  auto [u, v] = exe(scalarI64(0), a, b);
  EXPECT_EQ(u.toVector<float>(), (std::vector<float>{-9, -18, -27}));
  EXPECT_EQ(v.toVector<float>(), (std::vector<float>{10, 20, 30}));
}

// State with several tensors (tagged, f16) and non-Tensor leaves that stay constant.
struct Accumulator {
  Tensor x;     // {d=5}:f16
  Tensor acc;   // {d=5}:f32
  Tensor i;     // {}:i32
  int scale;    // a constant of the loop
  std::string name;
};

TEST(Control, StructStateWithConstantLeaves) {
  auto f = [](const Accumulator& a) {
    return radix::whileLoop(
        a, [](const Accumulator& s) { return nonZero(s.i.addConstant(-4)); },
        [](const Accumulator& s) {
          Tensor xs = s.x.convert(DType::f32).mulConstant(s.scale);
          return Accumulator{s.x, s.acc.add(xs), s.i.addConstant(1), s.scale, s.name};
        });
  };
  const auto p = radix::Platform::cpu();
  Accumulator a{Tensor::fromValues(p, Shape({5}, DType::f16), {1, 2, 3, 4, 5}).withTags({"d"}),
                Tensor::fromValues(p, Shape({5}, DType::f32), {0, 0, 0, 0, 1}).withTags({"d"}),
                Tensor::fromValues(p, Shape({}, DType::i32), std::vector<int64_t>{0}), 3, "acc"};
  Accumulator r = radix::testing::compileAndCall(cpu(1), f, a);
  EXPECT_EQ(r.acc.toVector<float>(), (std::vector<float>{12, 24, 36, 48, 61}));
  EXPECT_EQ(r.i.toVector<int64_t>(), std::vector<int64_t>{4});
  EXPECT_EQ(r.acc.shape(), Shape({5}, DType::f32).withTags({"d"}));
  EXPECT_EQ(r.scale, 3);
  EXPECT_EQ(r.name, "acc");
}

struct Step {
  Tensor w;
  Tensor forward(const Tensor& x) const { return x.mul(w).addConstant(1); }
};

// A loop body calls radix::call: the function is emitted once at module level, the call inside the loop.
TEST(Control, LoopCallsRadixCall) {
  auto f = [](const Step& step, const Tensor& x, const Tensor& n) {
    struct S {
      Tensor x, i;
    };
    S r = radix::whileLoop(
        S{x, Tensor::scalar(0, DType::i64)}, [&](const S& s) { return nonZero(n.sub(s.i)); },
        [&](const S& s) { return S{radix::call(step, &Step::forward, s.x), s.i.addConstant(1)}; });
    return r.x;
  };
  const auto p = radix::Platform::cpu();
  Step step{Tensor::fromValues(p, Shape({2}, DType::f32), {2, 3})};
  Tensor x = Tensor::fromValues(p, Shape({2}, DType::f32), {1, 1});
  auto exe = radix::compile(cpu(0), f, step, x, scalarI64(3));
  // x -> 2x+1 three times: 1 -> 3 -> 7 -> 15; x -> 3x+1: 1 -> 4 -> 13 -> 40.
  EXPECT_EQ(exe(step, x, scalarI64(3)).toVector<float>(), (std::vector<float>{15, 40}));
  EXPECT_EQ(exe(step, x, scalarI64(0)).toVector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(count(exe.mlir(), "func.func private @Step_"), 1u) << exe.mlir();
}

struct Looper {
  Tensor step;
  // A loop inside a radix::call function; it captures the function's own argument `limit`.
  Tensor forward(const Tensor& x, const Tensor& limit) const {
    return radix::whileLoop(
        x, [&](const Tensor& v) { return positive(limit.sub(v)); }, [&](const Tensor& v) { return v.add(step); });
  }
};

TEST(Control, LoopInsideRadixCall) {
  auto f = [](const Looper& l, const Tensor& x, const Tensor& limit) {
    Tensor y = radix::call(l, &Looper::forward, x, limit);
    return radix::call(l, &Looper::forward, y, limit.mulConstant(2));
  };
  const auto p = radix::Platform::cpu();
  Looper l{scalarF32(3)};
  auto exe = radix::compile(cpu(1), f, l, scalarF32(0), scalarF32(10));
  // 0 -> 12 (first >= 10), then -> 21 (first >= 20).
  EXPECT_EQ(exe(l, scalarF32(0), scalarF32(10)).toVector<float>(), std::vector<float>{21});
  EXPECT_EQ(count(exe.mlir(), "func.func private @Looper_"), 1u) << exe.mlir();
  (void)p;
}

struct Chooser {
  Tensor scale;
  // An ifElse inside a radix::call function, capturing the function's own values.
  Tensor forward(const Tensor& pred, const Tensor& x) const {
    return radix::ifElse(nonZero(pred), [&] { return x.mul(scale); }, [&] { return x.sub(scale); });
  }
};

TEST(Control, IfElseInsideRadixCall) {
  auto f = [](const Chooser& c, const Tensor& p, const Tensor& x) {
    return radix::call(c, &Chooser::forward, p, x).add(radix::call(c, &Chooser::forward, p.addConstant(1), x));
  };
  Chooser c{scalarF32(4)};
  auto exe = radix::compile(cpu(0), f, c, scalarI64(0), scalarF32(3));
  EXPECT_EQ(exe(c, scalarI64(0), scalarF32(3)).toVector<float>(), std::vector<float>{-1 + 12});  // (3-4) + 3*4
  EXPECT_EQ(exe(c, scalarI64(-1), scalarF32(3)).toVector<float>(), std::vector<float>{12 - 1});  // 3*4 + (3-4)
  EXPECT_EQ(exe(c, scalarI64(5), scalarF32(3)).toVector<float>(), std::vector<float>{24});
  EXPECT_EQ(count(exe.mlir(), "func.func private @Chooser_"), 1u) << exe.mlir();
}

// ---- errors ----

TEST(Control, ErrorCondNotBoolScalar) {
  auto notBool = [](const Tensor& x) { return radix::whileLoop(x, [](const Tensor& v) { return v; }, [](const Tensor& v) { return v; }); };
  std::string e = errorOf([&] { radix::compile(cpu(1), notBool, Tensor(Shape({}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[whileLoop] cond's result must be a bool scalar {}:bool, got {}:f32")) << e;
  auto notScalar = [](const Tensor& x) {
    return radix::whileLoop(x, [](const Tensor& v) { return nonZero(v); }, [](const Tensor& v) { return v; });
  };
  e = errorOf([&] { radix::compile(cpu(1), notScalar, Tensor(Shape({3}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[whileLoop] cond's result must be a bool scalar {}:bool, got {3}:bool")) << e;
  auto badPred = [](const Tensor& x) { return radix::ifElse(x, [&] { return x; }, [&] { return x; }); };
  e = errorOf([&] { radix::compile(cpu(1), badPred, Tensor(Shape({2}, DType::bool_))); });
  EXPECT_TRUE(e.starts_with("[ifElse] the predicate must be a bool scalar {}:bool, got {2}:bool")) << e;
}

TEST(Control, ErrorBodyChangesShape) {
  auto grows = [](const Tensor& x) {
    return radix::whileLoop(x, [](const Tensor& v) { return nonZero(v.sum(0).reshape({})); },
                            [](const Tensor& v) { return v.broad(Shape({2, 3}, DType::f32)); });
  };
  std::string e = errorOf([&] { radix::compile(cpu(1), grows, Tensor(Shape({3}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[whileLoop] body's result Tensor 0 is {2,3}:f32 but the initial state is {3}:f32")) << e;
  auto retags = [](const Tensor& x) {
    return radix::whileLoop(x, [](const Tensor& v) { return nonZero(v.sum(0).reshape({})); },
                            [](const Tensor& v) { return v.withTags({"e"}); });
  };
  e = errorOf([&] { radix::compile(cpu(1), retags, Tensor(Shape({3}, DType::f32).withTags({"d"}))); });
  EXPECT_TRUE(e.starts_with("[whileLoop] body's result Tensor 0 is {e=3}:f32 but the initial state is {d=3}:f32")) << e;
  auto dtype = [](const Tensor& x) {
    return radix::whileLoop(x, [](const Tensor& v) { return nonZero(v); }, [](const Tensor& v) { return v.convert(DType::f16); });
  };
  e = errorOf([&] { radix::compile(cpu(1), dtype, Tensor(Shape({}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[whileLoop] body's result Tensor 0 is {}:f16 but the initial state is {}:f32")) << e;
}

TEST(Control, ErrorBodyChangesConstantOrStructure) {
  using State = std::pair<Tensor, int>;
  auto constant = [](const Tensor& x) {
    State s = radix::whileLoop(State{x, 1}, [](const State& v) { return nonZero(v.first); },
                               [](const State& v) { return State{v.first, v.second + 1}; });
    return s.first;
  };
  std::string e = errorOf([&] { radix::compile(cpu(1), constant, Tensor(Shape({}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[whileLoop] body's result differs from the initial state at leaf 1: 2 instead of 1")) << e;
  using Many = std::vector<Tensor>;
  auto structure = [](const Tensor& x) {
    Many s = radix::whileLoop(Many{x}, [](const Many& v) { return nonZero(v[0]); },
                              [](const Many& v) { return Many{v[0], v[0]}; });
    return s[0];
  };
  e = errorOf([&] { radix::compile(cpu(1), structure, Tensor(Shape({}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[whileLoop] body's result differs from the initial state at leaf 0: size 2 instead of size 1")) << e;
}

TEST(Control, ErrorBranchesDiffer) {
  auto shapes = [](const Tensor& p, const Tensor& x) {
    return radix::ifElse(nonZero(p), [&] { return x; }, [&] { return x.reshape({3, 1}); });
  };
  std::string e = errorOf([&] { radix::compile(cpu(1), shapes, Tensor(Shape({}, DType::i64)), Tensor(Shape({3}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[ifElse] onFalse's result Tensor 0 is {3,1}:f32 but onTrue's is {3}:f32")) << e;
  using Opt = std::optional<Tensor>;
  auto structure = [](const Tensor& p, const Tensor& x) {
    Opt r = radix::ifElse(nonZero(p), [&] { return Opt(x); }, [&] { return Opt(); });
    return r.value_or(x);
  };
  e = errorOf([&] { radix::compile(cpu(1), structure, Tensor(Shape({}, DType::i64)), Tensor(Shape({3}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[ifElse] onFalse's result differs from onTrue's at leaf 0: size 0 instead of size 1")) << e;
}

TEST(Control, ErrorRegionValueEscapes) {
  auto escape = [](const Tensor& x) {
    Tensor inside;
    radix::whileLoop(x, [&](const Tensor& v) { return nonZero(v); }, [&](const Tensor& v) {
      inside = v.addConstant(1);
      return v;
    });
    return inside.addConstant(1);
  };
  std::string e = errorOf([&] { radix::compile(cpu(1), escape, Tensor(Shape({}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[addConstant] {}:f32")) << e;
  EXPECT_NE(e.find("is a value of a whileLoop/ifElse region that has ended"), std::string::npos) << e;
}

TEST(Control, ErrorRadixCallStillIsolated) {
  // A radix::call function inside a loop body may not capture the loop's values.
  auto f = [](const Tensor& x) {
    return radix::whileLoop(x, [](const Tensor& v) { return nonZero(v); }, [](const Tensor& v) {
      return radix::call([&v](const Tensor& y) { return y.add(v); }, v);
    });
  };
  std::string e = errorOf([&] { radix::compile(cpu(1), f, Tensor(Shape({}, DType::f32))); });
  EXPECT_TRUE(e.starts_with("[add] {}:f32")) << e;
  EXPECT_NE(e.find("belongs to another function than \"fn_"), std::string::npos) << e;
}

TEST(Control, ErrorOutsideCompile) {
  const Tensor x = scalarF32(1);
  std::string e = errorOf([&] { radix::whileLoop(x, [](const Tensor& v) { return v; }, [](const Tensor& v) { return v; }); });
  EXPECT_TRUE(e.starts_with("[whileLoop] no compilation in progress")) << e;
  e = errorOf([&] { radix::ifElse(x, [&] { return x; }, [&] { return x; }); });
  EXPECT_TRUE(e.starts_with("[ifElse] no compilation in progress")) << e;
}

// After an error inside a region, the same trace goes on: the region's scope and blocks are gone.
TEST(Control, TraceContinuesAfterRegionError) {
  auto f = [](const Tensor& x) {
    std::string e = errorOf([&] {
      radix::whileLoop(x, [](const Tensor& v) { return v; }, [](const Tensor& v) { return v; });
    });
    EXPECT_TRUE(e.starts_with("[whileLoop]")) << e;
    return x.addConstant(1);
  };
  EXPECT_EQ(radix::testing::compileAndCall(cpu(1), f, scalarF32(1)).toVector<float>(), std::vector<float>{2});
}

}  // namespace
