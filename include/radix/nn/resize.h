#pragma once
/// radix::nn resizing.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "radix/nn/common.h"

namespace radix::nn {

// ---- resizing ----

/// Nearest-neighbour resize of the given axes (ZML's upsample/nearest): output index i of an axis
/// of size n reads input index floor((i + 0.5) * in / n). Tags and other axes are kept.
/// upsampleNearest({b=1,c=2,h=3,w=4}, {{"h", 6}, {"w", 8}}) -> {b=1,c=2,h=6,w=8}
inline Tensor upsampleNearest(const Tensor& x, const std::vector<std::pair<Axis, int64_t>>& sizes,
                              Loc loc = Loc::current()) {
  return detail::inLayer("nn.upsampleNearest", loc, [&] {
    Tensor y = x;
    for (const auto& [axis, n] : sizes) {
      const int64_t a = y.shape().axis(axis, "nn.upsampleNearest");
      detail::require(n >= 1, "nn.upsampleNearest", "new sizes must be >= 1, got " + std::to_string(n) + " for " +
                                                         y.shape().str());
      const double ratio = static_cast<double>(y.dim(a)) / static_cast<double>(n);
      const Tensor source = Tensor::arange(n, DType::f32).addConstant(0.5).mulConstant(ratio).floor().convert(DType::i32);
      const Tag tag = y.shape().tag(a);
      y = y.gather({{a, source}});  // the new axis takes the indexed one's place, untagged
      if (!tag.empty()) y = y.withTag(a, tag);
    }
    return y;
  });
}

}  // namespace radix::nn
