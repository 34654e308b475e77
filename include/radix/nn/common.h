#pragma once
/// radix::nn internals shared by the layer headers: error prefixes, dtype helpers.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "radix/error.h"
#include "radix/module.h"
#include "radix/tensor.h"

namespace radix::nn {

namespace detail {

/// Runs a layer's body, prefixing its errors with the layer: "[nn.Linear] [dotGeneral] ...".
/// `where` is the layer's caller: public entry points take `Loc loc = Loc::current()` and pass
/// it, so that errors name the user's line (locations in Radix's headers are never noted, see
/// radix::Loc). `self`, the layer object, names the layer's field path in errors
/// ("(in layers[3].attn, at model.cpp:42)") when it is part of the traced arguments.
/// return detail::inLayer("nn.Linear", *this, loc, [&] { ... });
template <class Self, class F>
auto inLayer(const char* layer, const Self& self, Loc where, F&& f) -> decltype(f()) {
  (void)where;
  try {
    return f();
  } catch (const Error& e) {
    if constexpr (!std::is_same_v<Self, std::nullptr_t>) radix::detail::noteErrorPath(radix::detail::pathOf(self));
    const std::string prefix = std::string("[") + layer + "] ";
    if (std::string_view(e.what()).starts_with(prefix)) throw;
    throw Error(prefix + e.what());
  }
}

/// Same for a function (no layer object): return detail::inLayer("nn.sdpa", loc, [&] { ... });
template <class F>
auto inLayer(const char* layer, Loc where, F&& f) -> decltype(f()) {
  return inLayer(layer, nullptr, where, std::forward<F>(f));
}

/// Same without the caller's location (the location of the last op the user called stands).
template <class F>
  requires std::is_invocable_v<F>
auto inLayer(const char* layer, F&& f) -> decltype(f()) {
  return inLayer(layer, nullptr, Loc::none(), std::forward<F>(f));
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
