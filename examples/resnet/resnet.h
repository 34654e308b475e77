#pragma once
// A small torchvision-style ResNet (BasicBlocks, as resnet18/34) over radix::nn, shared by
// examples/resnet/main.cpp and the tests. Field names are torchvision's state_dict names, so a
// torchvision checkpoint saved to safetensors loads with io::loadInto as it is.
#include <radix/io.h>
#include <radix/nn.h>
#include <radix/radix.h>

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace resnet {

namespace nn = radix::nn;
using radix::DType;
using radix::Shape;
using radix::Tensor;

/// conv3x3 + bn + relu, conv3x3 + bn, plus the input (through a 1x1 conv + bn when the block
/// changes width or stride), then relu.
struct BasicBlock {
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  std::optional<std::tuple<nn::Conv2d, nn::BatchNorm2d>> downsample;  // "downsample.0", "downsample.1"

  /// {b,c,h,w} -> {b,c=planes,h/stride,w/stride}
  Tensor forward(Tensor x) const {
    Tensor y = bn1.forward(conv1.forward(x)).relu();
    y = bn2.forward(conv2.forward(y));
    const Tensor identity = downsample ? std::get<1>(*downsample).forward(std::get<0>(*downsample).forward(x)) : x;
    return y.add(identity).relu();
  }
};

/// Widths and block counts of the four stages, and the classes of the classifier.
struct Config {
  std::array<int64_t, 4> widths = {8, 16, 32, 64};
  std::array<int64_t, 4> blocks = {1, 1, 1, 1};
  int64_t classes = 10;
  int64_t inChannels = 3;
};

struct ResNet {
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  std::vector<BasicBlock> layer1, layer2, layer3, layer4;
  nn::Linear fc;

  /// images {b,c=3,h,w} (or untagged NCHW) -> logits {b,cls}
  Tensor forward(Tensor images) const {
    Tensor x = bn1.forward(conv1.forward(images)).relu();
    x = nn::MaxPool2d{.kernel = {3, 3}, .stride = {{2, 2}}, .padding = {1, 1}}.forward(x);
    for (const auto* stage : {&layer1, &layer2, &layer3, &layer4})
      for (const BasicBlock& block : *stage) x = radix::call(block, &BasicBlock::forward, x);
    x = nn::AdaptiveAvgPool2d{.outputSize = {1, 1}}.forward(x).choose({{"h", 0}, {"w", 0}});  // {b, c}
    nn::Linear head = fc;
    head.in = "c";
    head.out = "cls";
    return head.forward(x);
  }
};

inline Tensor placeholder(std::vector<int64_t> dims) { return Tensor(Shape(dims, DType::f32)); }

inline nn::BatchNorm2d batchNorm(int64_t c) {
  return {.weight = placeholder({c}), .bias = placeholder({c}), .running_mean = placeholder({c}), .running_var = placeholder({c})};
}

/// A ResNet of shape-only placeholders (for io::loadInto, or random weights).
inline ResNet placeholders(const Config& c) {
  ResNet m;
  m.conv1 = {.weight = placeholder({c.widths[0], c.inChannels, 7, 7}), .stride = {2, 2}, .padding = {3, 3}};
  m.bn1 = batchNorm(c.widths[0]);
  int64_t in = c.widths[0];
  std::array<std::vector<BasicBlock>*, 4> stages = {&m.layer1, &m.layer2, &m.layer3, &m.layer4};
  for (size_t s = 0; s < 4; ++s) {
    const int64_t w = c.widths[s];
    for (int64_t j = 0; j < c.blocks[s]; ++j) {
      const int64_t stride = s > 0 && j == 0 ? 2 : 1;
      BasicBlock b;
      b.conv1 = {.weight = placeholder({w, in, 3, 3}), .stride = {stride, stride}, .padding = {1, 1}};
      b.bn1 = batchNorm(w);
      b.conv2 = {.weight = placeholder({w, w, 3, 3}), .padding = {1, 1}};
      b.bn2 = batchNorm(w);
      if (stride != 1 || in != w)
        b.downsample = std::tuple{nn::Conv2d{.weight = placeholder({w, in, 1, 1}), .stride = {stride, stride}}, batchNorm(w)};
      stages[s]->push_back(b);
      in = w;
    }
  }
  m.fc = {.weight = placeholder({c.classes, in}), .bias = placeholder({c.classes})};
  return m;
}

/// The config of a torchvision-style checkpoint, read from its tensor shapes (conv1.weight,
/// layerN.J.conv1.weight, fc.weight).
inline Config configOf(const radix::io::Checkpoint& ckpt) {
  auto dims = [&](const std::string& name) {
    const radix::io::TensorInfo* t = ckpt.find(name);
    if (!t) throw radix::Error("[resnet] " + ckpt.folder() + ": no tensor \"" + name + "\"");
    return t->dims;
  };
  Config c;
  const std::vector<int64_t> stem = dims("conv1.weight");
  if (stem.size() != 4) throw radix::Error("[resnet] conv1.weight must be 4-D");
  c.inChannels = stem[1];
  for (size_t s = 0; s < 4; ++s) {
    const std::string prefix = "layer" + std::to_string(s + 1) + ".";
    c.blocks[s] = 0;
    while (ckpt.find(prefix + std::to_string(c.blocks[s]) + ".conv1.weight")) ++c.blocks[s];
    c.widths[s] = dims(prefix + "0.conv1.weight").at(0);
  }
  c.classes = dims("fc.weight").at(0);
  return c;
}

}  // namespace resnet
