#pragma once
/// radix::nn::testing: checking a layer against recorded activations.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "radix/nn/common.h"

namespace radix::nn {

// ---- testing against recorded activations ----

namespace testing {

/// How a layer's output compares with the expected one.
struct Comparison {
  bool ok = false;
  int64_t mismatches = 0;    // elements with |a - e| > atol + rtol * |e|
  double maxAbsError = 0;
  int64_t worst = -1;        // flat index of the largest |a - e|
  std::string report;        // one paragraph: shapes, counts, the first mismatches
  explicit operator bool() const { return ok; }
};

/// Compares bound tensors elementwise as numpy.allclose does: |a - e| <= atol + rtol * |e|
/// (NaN equals NaN). Dims and dtypes must agree (tags are not compared).
/// EXPECT_TRUE(compare(y, expected, 1e-4, 1e-3)) << compare(y, expected, 1e-4, 1e-3).report;
inline Comparison compare(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  Comparison c;
  if (!actual.shape().sameDimsAndDtype(expected.shape())) {
    c.report = "shapes differ: got " + actual.shape().str() + ", expected " + expected.shape().str();
    return c;
  }
  const std::vector<double> a = actual.toVector<double>(), e = expected.toVector<double>();
  std::string firsts;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool bothNan = std::isnan(a[i]) && std::isnan(e[i]);
    const double err = bothNan ? 0 : std::fabs(a[i] - e[i]);
    if (!bothNan && (std::isnan(err) || err > c.maxAbsError)) {
      c.maxAbsError = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
      c.worst = static_cast<int64_t>(i);
    }
    if (bothNan || a[i] == e[i] || err <= atol + rtol * std::fabs(e[i])) continue;
    if (c.mismatches++ < 5)
      firsts += " [" + std::to_string(i) + "] " + std::to_string(a[i]) + " vs " + std::to_string(e[i]) + ";";
  }
  c.ok = c.mismatches == 0;
  c.report = actual.shape().str() + ": " + std::to_string(c.mismatches) + " of " + std::to_string(a.size()) +
             " elements differ beyond atol " + std::to_string(atol) + " + rtol " + std::to_string(rtol) +
             " (max |error| " + std::to_string(c.maxAbsError) + " at " + std::to_string(c.worst) + ")" +
             (firsts.empty() ? std::string() : ":" + firsts);
  return c;
}

/// Activations recorded from a reference run (e.g. PyTorch forward hooks saved to safetensors):
/// "<layer>.in.0", "<layer>.in.1", ... are its inputs and "<layer>.out.0" its output.
using Activations = std::map<std::string, Tensor>;

namespace detail {
template <class M>
struct ForwardArity;
// A trailing Loc (the caller's line, see radix::Loc) is not a recorded input.
template <class L, class R, class... P>
struct ForwardArity<R (L::*)(P...) const>
    : std::integral_constant<size_t, sizeof...(P) - ((std::is_same_v<std::tuple_element_t<sizeof...(P), std::tuple<void, P...>>, Loc>) ? 1 : 0)> {};

inline const Tensor& recorded(const Activations& activations, const std::string& key) {
  auto it = activations.find(key);
  if (it == activations.end()) throw Error("[nn.testing] no activation \"" + key + "\" was recorded");
  return it->second;
}
}  // namespace detail

/// Compiles `layer.forward` for the recorded inputs of `name`, runs it, and compares its output
/// with the recorded one.
/// auto c = nn::testing::testLayer(cpu, activations, "h.0.mlp", model.blocks[0].mlp, 1e-4, 1e-3);
/// EXPECT_TRUE(c) << c.report;
template <class Layer>
Comparison testLayer(const Platform& platform, const Activations& activations, const std::string& name,
                     const Layer& layer, double atol, double rtol) {
  constexpr size_t arity = detail::ForwardArity<decltype(&Layer::forward)>::value;
  const Tensor& expected = detail::recorded(activations, name + ".out.0");
  auto input = [&](size_t i) -> const Tensor& { return detail::recorded(activations, name + ".in." + std::to_string(i)); };
  auto run = [&]<size_t... I>(std::index_sequence<I...>) -> Tensor {
    auto exe = compile(platform, &Layer::forward, layer, input(I)...);
    return exe(layer, input(I)...);
  };
  Comparison c = compare(run(std::make_index_sequence<arity>()), expected, atol, rtol);
  c.report = name + ": " + c.report;
  return c;
}

}  // namespace testing

}  // namespace radix::nn
