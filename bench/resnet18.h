#pragma once
// radix-bench-cpu's end-to-end CNN: torchvision's ResNet-18 (examples/resnet/resnet.h's struct,
// widths 64..512, two BasicBlocks a stage, 1000 classes) with deterministic random weights.
// Parameter i of the state_dict order (num_batches_tracked left out) is bench::benchValues
// stream 1000 + i, scaled by initScale/initOffset; torch_peer.py builds the same model with the
// same values.
#include <radix/radix.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench_worker.h"
#include "resnet/resnet.h"

namespace bench {

inline resnet::Config resnet18Config() {
  resnet::Config c;
  c.widths = {64, 128, 256, 512};
  c.blocks = {2, 2, 2, 2};
  c.classes = 1000;
  return c;
}

/// The tensors of `m` in torchvision's state_dict order, with their names.
inline std::vector<std::pair<std::string, radix::Tensor*>> resnetParameters(resnet::ResNet& m) {
  std::vector<std::pair<std::string, radix::Tensor*>> out;
  auto bn = [&](const std::string& p, radix::nn::BatchNorm2d& b) {
    out.push_back({p + ".weight", &*b.weight});
    out.push_back({p + ".bias", &*b.bias});
    out.push_back({p + ".running_mean", &b.running_mean});
    out.push_back({p + ".running_var", &b.running_var});
  };
  out.push_back({"conv1.weight", &m.conv1.weight});
  bn("bn1", m.bn1);
  std::vector<resnet::BasicBlock>* stages[4] = {&m.layer1, &m.layer2, &m.layer3, &m.layer4};
  for (int s = 0; s < 4; ++s)
    for (size_t j = 0; j < stages[s]->size(); ++j) {
      resnet::BasicBlock& b = (*stages[s])[j];
      const std::string p = "layer" + std::to_string(s + 1) + "." + std::to_string(j);
      out.push_back({p + ".conv1.weight", &b.conv1.weight});
      bn(p + ".bn1", b.bn1);
      out.push_back({p + ".conv2.weight", &b.conv2.weight});
      bn(p + ".bn2", b.bn2);
      if (b.downsample) {
        out.push_back({p + ".downsample.0.weight", &std::get<0>(*b.downsample).weight});
        bn(p + ".downsample.1", std::get<1>(*b.downsample));
      }
    }
  out.push_back({"fc.weight", &m.fc.weight});
  out.push_back({"fc.bias", &*m.fc.bias});
  return out;
}

/// Scale and offset of a parameter's values (benchValues lie in [-1, 1)): He-like for the
/// weights, near 1 for the norms' weights and variances, small for the rest.
inline std::pair<float, float> initScale(const std::string& name, const std::vector<int64_t>& dims) {
  auto ends = [&](const char* s) { return name.size() >= std::string(s).size() && name.ends_with(s); };
  if (dims.size() >= 2) {
    int64_t fanIn = 1;
    for (size_t i = 1; i < dims.size(); ++i) fanIn *= dims[i];
    return {static_cast<float>(std::sqrt(6.0 / static_cast<double>(fanIn))), 0.0f};
  }
  if (ends("running_var")) return {0.25f, 1.0f};
  if (ends("bn1.weight") || ends("bn2.weight") || ends("downsample.1.weight")) return {0.25f, 1.0f};
  return {0.1f, 0.0f};
}

/// ResNet-18 with its random weights, on `platform`.
inline resnet::ResNet resnet18(const radix::Platform& platform) {
  resnet::ResNet m = resnet::placeholders(resnet18Config());
  uint32_t seed = 1000;
  for (auto& [name, t] : resnetParameters(m)) {
    const std::vector<int64_t> dims = t->shape().dims();
    const auto [scale, offset] = initScale(name, dims);
    *t = radix::Tensor::fromValues(platform, radix::Shape(dims, radix::DType::f32),
                                   benchValues(t->shape().count(), seed++, scale, offset));
  }
  return m;
}

/// Multiply-add FLOPs of ResNet-18's convolutions and classifier on batch x 3 x hw x hw.
inline double resnet18Flops(int64_t batch, int64_t hw) {
  double flops = 0;
  auto conv = [&](int64_t cin, int64_t cout, int64_t k, int64_t out) { flops += 2.0 * cin * cout * k * k * out * out; };
  int64_t s = (hw + 2 * 3 - 7) / 2 + 1;
  conv(3, 64, 7, s);
  s = (s + 2 - 3) / 2 + 1;  // max pool
  int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t w = 64 << stage;
    for (int j = 0; j < 2; ++j) {
      const int64_t stride = stage > 0 && j == 0 ? 2 : 1, o = (s + 2 - 3) / stride + 1;
      conv(in, w, 3, o);
      conv(w, w, 3, o);
      if (stride != 1 || in != w) conv(in, w, 1, (s - 1) / stride + 1);
      s = o;
      in = w;
    }
  }
  flops += 2.0 * 512 * 1000;
  return flops * static_cast<double>(batch);
}

}  // namespace bench
