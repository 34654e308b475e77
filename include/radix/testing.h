#pragma once
/// Test helpers: compile-and-call in one line, and closeness checks for GoogleTest.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "radix/radix.h"

namespace radix::testing {

/// Compiles `fn` for `args` and calls it once on them.
/// Tensor y = radix::testing::compileAndCall(cpu, &NN::forward, nn, x);
template <class F, class... Args>
auto compileAndCall(const Platform& platform, const F& fn, const Args&... args) {
  return compile(platform, fn, args...)(args...);
}

/// The message of the radix::Error that f() throws, or "(no radix::Error)".
/// EXPECT_EQ(errorOf([&] { x.sum(5); }), "[sum] axis 5 out of range for {3}:f32")
template <class F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no radix::Error)";
}

/// Checks |a - b| <= tol * (1 + |b|) elementwise (GoogleTest failure otherwise).
/// expectClose(y, {20, 0, 0}, 1e-3)
inline void expectClose(const Tensor& actual, const std::vector<float>& expected, double tol) {
  std::vector<double> a = actual.toVector<double>();
  ASSERT_EQ(a.size(), expected.size()) << "for " << actual.shape().str();
  int reported = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = expected[i];
    const bool ok = (std::isnan(e) && std::isnan(a[i])) || (a[i] == e) || std::fabs(a[i] - e) <= tol * (1 + std::fabs(e));
    if (!ok && reported++ < 8)
      ADD_FAILURE() << "element " << i << " of " << actual.shape().str() << ": got " << a[i] << ", expected " << e
                    << " (tol " << tol << ")";
  }
}

/// Same against another tensor; shapes must have equal dims and dtype.
inline void expectClose(const Tensor& actual, const Tensor& expected, double tol) {
  ASSERT_TRUE(actual.shape().sameDimsAndDtype(expected.shape()))
      << actual.shape().str() << " vs " << expected.shape().str();
  std::vector<float> e = expected.toVector<float>();
  expectClose(actual, e, tol);
}

}  // namespace radix::testing
