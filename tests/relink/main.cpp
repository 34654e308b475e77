// Traces a model with radix::call on member and free functions and prints whether its compiled
// code came from the cache ("from the cache") or not ("cold").
#include <radix/radix.h>

#include <cstdio>
#include <string>
#include <vector>

#ifdef RELINK_EXTRA
std::string unrelatedWork(int n);
static double moreUnrelatedWork(double x) {
  double s = 0;
  for (int i = 1; i < 40; ++i) s += x / i - s * 0.5;
  return s;
}
#endif

struct Layer {
  radix::Tensor w, b;
  radix::Tensor forward(radix::Tensor x) const { return x.mul(w).add(b).tanh(); }
};

radix::Tensor head(radix::Tensor x) { return x.mulConstant(2.0).exp(); }

struct Net {
  std::vector<Layer> layers;
  radix::Tensor forward(radix::Tensor x) const {
    for (const Layer& l : layers) x = radix::call(l, &Layer::forward, x);
    return radix::call(&head, x);
  }
};

int main() {
#ifdef RELINK_EXTRA
  std::printf("unrelated: %s %g\n", unrelatedWork(4).c_str(), moreUnrelatedWork(3.0));
#endif
  radix::Platform cpu = radix::Platform::cpu();
  const radix::Shape s({4}, radix::DType::f32);
  auto make = [&](float v) { return radix::Tensor::fromValues(cpu, s, {v, v, v, v}); };
  Net net{{Layer{make(0.5f), make(0.1f)}, Layer{make(0.25f), make(-0.1f)}}};
  radix::Tensor x = make(1.0f);
  radix::Exe exe = radix::compile(cpu, &Net::forward, net, x);
  const std::vector<float> y = exe(net, x).toVector<float>();
  std::printf("relink: %g (%s)\n", y[0], exe.fromCache() ? "from the cache" : "cold");
  return 0;
}
