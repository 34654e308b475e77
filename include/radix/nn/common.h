#pragma once
/// radix::nn internals shared by the layer headers: error prefixes, dtype helpers.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "radix/error.h"
#include "radix/module.h"
#include "radix/tensor.h"

namespace radix::nn {

namespace detail {

/// Runs a layer's body, prefixing its errors with the layer: "[nn.Linear] [dotGeneral] ...".
/// Notes the layer's line as the current op location (radix::Loc), so that a check failing
/// before the layer's first op does not name an earlier op's line.
template <class F>
auto inLayer(const char* layer, F&& f, Loc where = Loc::current()) -> decltype(f()) {
  (void)where;
  try {
    return f();
  } catch (const Error& e) {
    const std::string prefix = std::string("[") + layer + "] ";
    if (std::string_view(e.what()).starts_with(prefix)) throw;
    throw Error(prefix + e.what());
  }
}

inline void require(bool ok, const char* layer, const std::string& what) {
  if (!ok) throw Error(std::string("[") + layer + "] " + what);
}

/// Every axis of `t` by tag, in order (for transposes back to an input's layout).
inline std::vector<Axis> tagsOf(const Shape& s) {
  std::vector<Axis> out;
  for (int64_t i = 0; i < s.rank(); ++i) out.push_back(s.tag(i));
  return out;
}

inline Tensor as(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : t.convert(dtype); }

/// f32 for f16/bf16 inputs (normalizations and softmax compute in f32), else the dtype itself.
inline DType computeType(DType d) { return d == DType::f16 || d == DType::bf16 ? DType::f32 : d; }

}  // namespace detail

}  // namespace radix::nn
