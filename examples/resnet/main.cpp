// radix-resnet: a torchvision-style ResNet over radix::nn, run on a batch of images.
//   radix-resnet                                  random weights, random images
//   radix-resnet model.safetensors [io.safetensors]
// model.safetensors is a torchvision-style state_dict (conv1, bn1, layer1..4, fc); io.safetensors
// holds "input" {b,3,h,w} and optionally "logits", which the result is checked against.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "random_weights.h"
#include "resnet/resnet.h"

int main(int argc, char** argv) try {
  radix::Platform cpu = radix::Platform::cpu();
  resnet::ResNet model;
  if (argc > 1) {
    radix::io::Checkpoint ckpt = radix::io::Checkpoint::open(argv[1]);
    model = resnet::placeholders(resnet::configOf(ckpt));
    for (const std::string& note : radix::io::loadInto(cpu, model, ckpt).notes) std::printf("note: %s\n", note.c_str());
  } else {
    model = resnet::placeholders({});
    examples::randomize(cpu, model, 1);
  }
  std::optional<radix::io::Checkpoint> io;
  if (argc > 2) io = radix::io::Checkpoint::open(argv[2]);
  const radix::Tensor images = io ? io->load(cpu, "input", radix::DType::f32)
                                  : examples::randomTensor(cpu, radix::Shape({2, 3, 32, 32}, radix::DType::f32), 2, -1, 1);
  auto exe = radix::compile(cpu, &resnet::ResNet::forward, model, images);
  const radix::Tensor logits = exe(model, images);
  const std::vector<float> y = logits.toVector<float>();
  std::printf("logits %s:", logits.shape().str().c_str());
  for (float v : y) std::printf(" %.5f", v);
  std::printf("\n");
  if (io && io->find("logits")) {
    const std::vector<float> want = io->load(cpu, "logits", radix::DType::f32).toVector<float>();
    double worst = want.size() == y.size() ? 0 : INFINITY;
    for (size_t i = 0; i < want.size() && i < y.size(); ++i) worst = std::fmax(worst, std::fabs(want[i] - y[i]));
    std::printf("max |error| against the expected logits: %g\n", worst);
    return worst <= 1e-4 ? 0 : 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "radix-resnet: %s\n", e.what());
  return 2;
}
