// radix-mlp: a 3-layer MLP with embedded weights, compiled once (cached on disk) and run.
#include <chrono>
#include <cstdio>

#include "mlp.h"

int main() {
  radix::Platform cpu = radix::Platform::cpu();
  mlp::MLP model = mlp::example(cpu);
  radix::Tensor x = mlp::input(cpu);
  auto start = std::chrono::steady_clock::now();
  radix::Exe exe = radix::compile(cpu, &mlp::MLP::forward, model, x);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::vector<float> y = exe(model, x).toVector<float>();
  std::printf("radix-mlp: compiled in %.1f ms (%s)\n", ms, exe.fromCache() ? "from the cache" : "cold");
  std::printf("y = [%g, %g, %g]  (expected [20, 0, 0])\n", y[0], y[1], y[2]);
  return (y[0] == 20 && y[1] == 0 && y[2] == 0) ? 0 : 1;
}
