#pragma once
/// radix::nn rotary position embeddings.
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

// ---- rotary position embeddings ----

/// How the head axis pairs its values into rotated (real, imaginary) pairs.
enum class RopeLayout {
  /// Pairs (x[2i], x[2i+1]): GGUF / Meta checkpoints.
  interleaved,
  /// Pairs (x[i], x[i + hd/2]): Hugging Face checkpoints ("rotate_half").
  rotateHalf,
};

/// Rotary embeddings: rotates each pair of the "hd" axis by position * base^(-2i/hd), for the
/// positions offset + 0, 1, ... along the "s" axis. `offset` is a scalar integer tensor (the
/// number of tokens already in a KV cache). Angles are computed in f32.
/// Rope{}.forward({s=5,h=4,hd=8}, offset {}:i32) -> {s=5,h=4,hd=8}
struct Rope {
  RopeLayout layout = RopeLayout::rotateHalf;
  double base = 10000;

  Tensor forward(Tensor x, Tensor offset, Loc loc = Loc::current()) const {
    return detail::inLayer("nn.Rope", *this, loc, [&] {
      detail::require(isFloat(x.dtype()), "nn.Rope", "needs a float tensor, got " + x.shape().str());
      detail::require(x.shape().hasTag("s") >= 0 && x.shape().hasTag("hd") >= 0, "nn.Rope",
                      "needs axes tagged \"s\" and \"hd\", got " + x.shape().str());
      detail::require(offset.rank() == 0 && !isFloat(offset.dtype()), "nn.Rope",
                      "offset must be a scalar integer tensor, got " + offset.shape().str());
      const int64_t hd = x.dim("hd"), seq = x.dim("s"), half = hd / 2;
      detail::require(hd % 2 == 0, "nn.Rope", "the \"hd\" axis must be even, got " + x.shape().str());
      const Tensor positions = Tensor::arange(seq, DType::f32).withTags({"s"}).add(offset.convert(DType::f32));
      const Tensor frequencies =
          Tensor::arange(half, DType::f32).mulConstant(-2.0 * std::log(base) / static_cast<double>(hd)).exp().withTags({"hd"});
      const Shape angleShape = Shape({seq, half}, DType::f32).withTags({"s", "hd"});
      const Tensor angles = positions.broad(angleShape).mul(frequencies.broad(angleShape));
      const bool interleaved = layout == RopeLayout::interleaved;
      const Tensor re = interleaved ? x.slice1d("hd", {.start = 0, .step = 2}) : x.slice1d("hd", {.end = half});
      const Tensor im = interleaved ? x.slice1d("hd", {.start = 1, .step = 2}) : x.slice1d("hd", {.start = half});
      const Tensor cos = angles.cos().convert(x.dtype()).broad(re.shape());
      const Tensor sin = angles.sin().convert(x.dtype()).broad(re.shape());
      const Tensor outRe = re.mul(cos).sub(im.mul(sin));
      const Tensor outIm = re.mul(sin).add(im.mul(cos));
      if (!interleaved) return Tensor::concatenate({outRe, outIm}, "hd");
      const int64_t after = x.shape().axis("hd") + 1;
      return Tensor::stack({outRe, outIm}, after, "ri").mergeAxes({"hd", "ri"}, "hd");
    });
  }
};

}  // namespace radix::nn
