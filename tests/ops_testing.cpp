// Runs the op table registered by the ops_*_test.cpp files: every case against its naive reference,
// and every error case.
#include "ops_testing.h"
#include "compiler/gpu.h"

namespace opstest {

namespace {

/// What one case computed: its inputs as the reference sees them, and its result.
struct Outcome {
  std::vector<Host> inputs;
  Tensor result;
  std::string error;  // the case failed to trace, compile or run
};

/// Compiles one function that applies cases[k].op to args[k] for every k, and runs it.
Ts runTogether(const std::vector<const Case*>& cases, const std::vector<Ts>& args) {
  auto all = [&cases](const std::vector<Ts>& a) {
    Ts results;
    for (size_t k = 0; k < cases.size(); ++k) results.push_back(cases[k]->op(a[k]));
    return results;
  };
  return radix::testing::compileAndCall(cpu(), all, args);
}

/// True if GoogleTest will run case `name` in this process (after --gtest_filter and sharding).
bool selected(const std::string& name) {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit.total_test_suite_count(); ++i)
      for (int j = 0; j < unit.GetTestSuite(i)->total_test_count(); ++j) {
        const ::testing::TestInfo& test = *unit.GetTestSuite(i)->GetTestInfo(j);
        const std::string testName = test.name();
        if (test.should_run() && std::string(test.test_suite_name()) == "Ops/OpsNumerics")
          out.insert(testName.substr(testName.find('/') + 1));
      }
    return out;
  }();
  return names.contains(name);
}

/// Runs the selected cases of c's group as one compiled function, once per process: compiling
/// each case alone costs ~50 ms, and there are ~400. Selected only, so that ctest, which runs
/// one test per process, compiles one case each time.
const Outcome& outcomeOf(const Case& c) {
  static std::map<std::string, std::map<std::string, Outcome>> groups;
  auto [it, fresh] = groups.try_emplace(c.group);
  std::map<std::string, Outcome>& outcomes = it->second;
  if (!fresh) return outcomes.at(c.name);
  std::vector<Case> cases;
  for (Case& e : allCases())
    if (e.group == c.group && (e.name == c.name || selected(e.name))) cases.push_back(std::move(e));
  std::vector<const Case*> pointers;
  std::vector<Ts> args(cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& e = cases[k];
    pointers.push_back(&e);
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const Shape& s = e.inputs[i];
      const Vals v = caseInput(e, k, i);
      args[k].push_back(Tensor::fromValues(cpu(), s, v));
      outcomes[e.name].inputs.push_back({args[k].back().toVector<double>(), s.dims()});
    }
  }
  try {
    const Ts results = runTogether(pointers, args);
    for (size_t k = 0; k < cases.size(); ++k) outcomes[cases[k].name].result = results[k];
  } catch (const std::exception&) {
    // Run each case alone, so that the failure lands on the cases that cause it.
    for (size_t k = 0; k < cases.size(); ++k) {
      try {
        outcomes[cases[k].name].result = runTogether({pointers[k]}, {args[k]})[0];
      } catch (const std::exception& e) {
        outcomes[cases[k].name].error = e.what();
      }
    }
  }
  return outcomes.at(c.name);
}

class OpsNumerics : public ::testing::TestWithParam<Case> {};

TEST_P(OpsNumerics, MatchesReference) {
  const Case& c = GetParam();
  const Outcome& o = outcomeOf(c);
  ASSERT_EQ(o.error, "");
  ASSERT_EQ(o.result.shape(), c.out);
  const Vals expected = c.ref(o.inputs);
  if (radix::isFloat(c.out.dtype())) {
    radix::testing::expectClose(o.result, std::vector<float>(expected.begin(), expected.end()), c.tol >= 0 ? c.tol : tolFor(c.out.dtype()));
  } else {
    EXPECT_EQ(o.result.toVector<int64_t>(), std::vector<int64_t>(expected.begin(), expected.end()));
  }
}

template <class T>
std::string caseName(const ::testing::TestParamInfo<T>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Ops, OpsNumerics, ::testing::ValuesIn(allCases()), caseName<Case>);


class OpsErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(OpsErrors, ThrowsRadixError) {
  const ErrorCase& c = GetParam();
  Ts args;
  for (const Shape& s : c.inputs) args.emplace_back(s);  // placeholders: tracing needs no buffers
  expectError([&] { radix::compile(cpu(), c.op, args); }, c.prefix, c.part);
}

INSTANTIATE_TEST_SUITE_P(Ops, OpsErrors, ::testing::ValuesIn(allErrorCases()), caseName<ErrorCase>);

/// Each op as called on a bound tensor `x`, named as its errors should be.
std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> namedOps() {
  return {
      {"[add]", [](const Tensor& x) { return x.add(x); }},
      {"[sub]", [](const Tensor& x) { return x.sub(x); }},
      {"[mul]", [](const Tensor& x) { return x.mul(x); }},
      {"[div]", [](const Tensor& x) { return x.div(x); }},
      {"[maximum]", [](const Tensor& x) { return x.maximum(x); }},
      {"[minimum]", [](const Tensor& x) { return x.minimum(x); }},
      {"[neg]", [](const Tensor& x) { return x.neg(); }},
      {"[abs]", [](const Tensor& x) { return x.abs(); }},
      {"[exp]", [](const Tensor& x) { return x.exp(); }},
      {"[log]", [](const Tensor& x) { return x.log(); }},
      {"[tanh]", [](const Tensor& x) { return x.tanh(); }},
      {"[sqrt]", [](const Tensor& x) { return x.sqrt(); }},
      {"[rsqrt]", [](const Tensor& x) { return x.rsqrt(); }},
      {"[sin]", [](const Tensor& x) { return x.sin(); }},
      {"[cos]", [](const Tensor& x) { return x.cos(); }},
      {"[relu]", [](const Tensor& x) { return x.relu(); }},
      {"[sigmoid]", [](const Tensor& x) { return x.sigmoid(); }},
      {"[convert]", [](const Tensor& x) { return x.convert(DType::f16); }},
      {"[addConstant]", [](const Tensor& x) { return x.addConstant(1); }},
      {"[mulConstant]", [](const Tensor& x) { return x.mulConstant(2); }},
      {"[dotGeneral]", [](const Tensor& x) { return x.dotGeneral(x, {{0, 0}}, {}); }},
      {"[dot]", [](const Tensor& x) { return x.dot(x, {"d"}); }},
      {"[broad]", [](const Tensor& x) { return x.broad(sh({2, 3}, {"b", "d"})); }},
      {"[broadcast]", [](const Tensor& x) { return x.broadcast(sh({3, 2}), {0}); }},
      {"[reshape]", [](const Tensor& x) { return x.reshape({3, 1}); }},
      {"[transpose]", [](const Tensor& x) { return x.transpose({0}); }},
      {"[sum]", [](const Tensor& x) { return x.sum(0); }},
      {"[max]", [](const Tensor& x) { return x.max(0); }},
  };
}

TEST(OpsErrors, BoundTensorOutsideCompile) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3}, {"d"}), std::vector<float>{1, 2, 3});
  for (const auto& [prefix, op] : namedOps()) {
    SCOPED_TRACE(prefix);
    expectError([&] { op(x); }, prefix, "no compilation in progress");
  }
  expectError([] { Tensor::constant(sh({3}), 1); }, "[constant]", "no compilation in progress");
  expectError([] { Tensor::scalar(1, DType::f32); }, "[scalar]", "no compilation in progress");
}

TEST(OpsErrors, BoundTensorCapturedInsideCompile) {
  const Tensor x = Tensor::fromValues(cpu(), sh({3}, {"d"}), std::vector<float>{1, 2, 3});
  const Tensor arg(sh({3}, {"d"}));
  for (const auto& [prefix, op] : namedOps()) {
    SCOPED_TRACE(prefix);
    // The bound tensor is captured, not passed: it is not a value of the traced function.
    auto fn = [&](const Tensor&) { return op(x); };
    expectError([&] { radix::compile(cpu(), fn, arg); }, prefix, "{d=3}:f32 is a device buffer that is not an argument");
  }
}


}  // namespace
}  // namespace opstest

namespace opstest {
namespace {

// Every op table, group by group, compiled for an NVIDIA target (docs/gpu.md): host code with an
// sm_90a cubin, without a GPU. Shapes only (no run); a group that fails is retried case by case
// so that the failure names its case.
TEST(GpuOps, EveryOpTableCompilesForCuda) {
  if (radix::detail::findPtxas().empty()) GTEST_SKIP() << "no ptxas (the CUDA toolkit) on PATH or in /usr/local/cuda/bin";
  radix::CompileOptions o;
  o.cache = false;
  const radix::Platform gpu = radix::Platform::cudaTarget("sm_90a").withOptions(o);
  std::map<std::string, std::vector<Case>> groups;
  for (Case& c : allCases()) groups[c.group].push_back(std::move(c));
  auto compileCases = [&](const std::vector<const Case*>& cases) {
    std::vector<Ts> args;
    for (const Case* c : cases) {
      Ts a;
      for (const Shape& s : c->inputs) a.emplace_back(s);
      args.push_back(std::move(a));
    }
    auto all = [&cases](const std::vector<Ts>& a) {
      Ts results;
      for (size_t k = 0; k < cases.size(); ++k) results.push_back(cases[k]->op(a[k]));
      return results;
    };
    (void)radix::compile(gpu, all, args);
  };
  size_t compiled = 0;
  std::vector<std::string> failures;
  for (const auto& [group, cases] : groups) {
    std::vector<const Case*> pointers;
    for (const Case& c : cases) pointers.push_back(&c);
    try {
      compileCases(pointers);
      compiled += cases.size();
    } catch (const std::exception&) {
      for (const Case* c : pointers) {
        try {
          compileCases({c});
          ++compiled;
        } catch (const std::exception& e) {
          failures.push_back(c->name + ": " + std::string(e.what()).substr(0, 300));
        }
      }
    }
  }
  std::string list;
  for (const std::string& f : failures) list += "\n  " + f;
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << (compiled + failures.size())
                                << " cases do not compile for cuda:sm_90a:" << list;
}

}  // namespace
}  // namespace opstest
