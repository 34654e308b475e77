// Built by the package test against Radix's build tree: compiles and runs a tiny model.
#include <radix/radix.h>

#include <cstdio>

struct Affine {
  radix::Tensor w, b;
  radix::Tensor forward(radix::Tensor x) const { return w.mul(x).add(b); }
};

int main() {
  radix::Platform cpu = radix::Platform::cpu();
  radix::Shape s({3}, radix::DType::f32);
  Affine m{radix::Tensor::fromValues(cpu, s, {1, 2, 3}), radix::Tensor::fromValues(cpu, s, {1, 1, 1})};
  radix::Tensor x = radix::Tensor::fromValues(cpu, s, {2, 2, 2});
  radix::Exe exe = radix::compile(cpu, &Affine::forward, m, x);
  std::vector<float> y = exe(m, x).toVector<float>();
  std::printf("consumer: %g %g %g\n", y[0], y[1], y[2]);
  return (y == std::vector<float>{3, 5, 7}) ? 0 : 1;
}
