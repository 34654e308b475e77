#pragma once
// Random weights for the examples when no checkpoint is given: every Tensor leaf of a model of
// placeholders gets uniform values in [-scale, scale) (BatchNorm variances in [0.5, 1.5)).
#include <radix/io.h>
#include <radix/radix.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace examples {

template <class Model>
void randomize(const radix::Platform& platform, Model& model, uint64_t seed, float scale = 0.3f) {
  radix::io::detail::LeafCollector leaves;
  radix::detail::visitLeaves(leaves, model);
  std::mt19937_64 rng(seed);
  for (radix::io::detail::Leaf& leaf : leaves.out) {
    const bool variance = leaf.path.ends_with("running_var");
    std::uniform_real_distribution<float> dist(variance ? 0.5f : -scale, variance ? 1.5f : scale);
    std::vector<float> values(static_cast<size_t>(leaf.tensor->shape().count()));
    for (float& v : values) v = dist(rng);
    *leaf.tensor = radix::Tensor::fromValues(platform, leaf.tensor->shape(), values);
  }
}

/// Values of a Tensor of `shape` drawn uniformly from [lo, hi).
inline radix::Tensor randomTensor(const radix::Platform& platform, const radix::Shape& shape, uint64_t seed, float lo,
                                  float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(shape.count()));
  for (float& v : values) v = dist(rng);
  return radix::Tensor::fromValues(platform, shape, values);
}

}  // namespace examples
