// Scaling of a GEMM-bound MLP over MPI ranks (docs/sharding.md; bench/tp_scaling.py runs the
// whole table): the same global problem on 1 process and on N (strong scaling; Megatron: w1 split
// by columns, w2 by rows, one all-reduce per call), or `weak`: hidden grows with the ranks, so that
// each keeps the same local weights.
//   mpirun -np 1 build/bin/radix-bench-mpi [batch d hidden iterations [weak]]
//   mpirun -np 2 build/bin/radix-bench-mpi
// Rank 0 prints ms per call, GFLOP/s and the all-reduce's share (timed apart on the same bytes).
//   mpirun -np 2 build/bin/radix-bench-mpi allreduce COUNT CALLS [iterations]
// times CALLS all-reduces of COUNT f32 (a decode step of a tensor-parallel model: 2 per layer of
// its width). Not a test: timings are noisy on a shared machine.
#include <radix/radix.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using radix::DType;
using radix::Shape;
using radix::Tensor;

struct Mlp {
  Tensor w1, w2;
  Tensor forward(const Tensor& x) const { return x.dot(w1, {"d"}).relu().dot(w2, {"h"}); }
};

// CALLS all-reduces of COUNT floats in one executable, as a decode step has them.
int allReduceBench(int64_t count, int calls, int iterations) {
  radix::Platform cpu = radix::Platform::cpu();
  const int n = cpu.processCount();
  radix::Platform grid = n > 1 ? cpu.withSharding({.numPartitions = n}) : cpu;
  std::vector<Tensor> xs;
  for (int i = 0; i < calls; ++i)
    xs.push_back(Tensor::fromValues(grid, Shape({1, count}, DType::f32), std::vector<float>(static_cast<size_t>(count), 1.0f)));
  auto exe = radix::compile(grid, [](const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    for (const Tensor& t : in) out.push_back(radix::allReduce(t));
    return out;
  }, xs);
  std::vector<Tensor> ys = exe(xs);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) ys = exe(xs);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iterations;
  if (cpu.processIndex() == 0)
    std::printf("ranks %d  %d all-reduces of %lld f32  %.3f ms/step\n", n, calls, static_cast<long long>(count), ms);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "allreduce")
    return allReduceBench(argc > 2 ? std::atoll(argv[2]) : 768, argc > 3 ? std::atoi(argv[3]) : 24,
                          argc > 4 ? std::atoi(argv[4]) : 200);
  radix::Platform cpu = radix::Platform::cpu();
  const int n = cpu.processCount();
  const bool weak = argc > 5 && std::string(argv[5]) == "weak";
  const int64_t B = argc > 1 ? std::atoll(argv[1]) : 256, D = argc > 2 ? std::atoll(argv[2]) : 1024,
                H = (argc > 3 ? std::atoll(argv[3]) : 4096) * (weak ? n : 1);
  const int iterations = argc > 4 ? std::atoi(argv[4]) : 10;
  radix::Platform grid = n > 1 ? cpu.withSharding({.numPartitions = n}) : cpu;
  auto fill = [](int64_t count, float scale) {
    std::vector<float> v(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) v[i] = scale * static_cast<float>((i * 7919) % 201 - 100) / 100.0f;
    return v;
  };
  Shape s1 = Shape({D, H}, DType::f32).withTags({"d", "h"}), s2 = Shape({H, D}, DType::f32).withTags({"h", "o"});
  if (n > 1) {
    s1 = s1.withSharding({"h"});
    s2 = s2.withSharding({"h"});
  }
  Mlp mlp{Tensor::fromValues(grid, s1, fill(D * H, 0.05f)), Tensor::fromValues(grid, s2, fill(H * D, 0.05f))};
  Tensor x = Tensor::fromValues(grid, Shape({B, D}, DType::f32).withTags({"b", "d"}), fill(B * D, 1.0f));
  auto exe = radix::compile(grid, &Mlp::forward, mlp, x);
  Tensor y = exe(mlp, x);  // warm-up
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto t0 = now();
  for (int i = 0; i < iterations; ++i) y = exe(mlp, x);
  const double ms = std::chrono::duration<double, std::milli>(now() - t0).count() / iterations;
  // The all-reduce alone, on a tensor of the result's size.
  double reduceMs = 0;
  if (n > 1) {
    Tensor part = Tensor::fromValues(grid, Shape({B, D}, DType::f32), fill(B * D, 1.0f));
    auto reduce = radix::compile(grid, [](const Tensor& t) { return radix::allReduce(t); }, part);
    Tensor r = reduce(part);
    auto t1 = now();
    for (int i = 0; i < iterations; ++i) r = reduce(part);
    reduceMs = std::chrono::duration<double, std::milli>(now() - t1).count() / iterations;
  }
  if (cpu.processIndex() == 0) {
    const double gflop = 2.0 * 2.0 * static_cast<double>(B) * static_cast<double>(D) * static_cast<double>(H) / 1e9;
    std::printf("ranks %d%s  mlp %lldx%lldx%lld  %.2f ms/call  %.1f GFLOP/s  all-reduce %.3f ms (%.1f%%)\n", n, weak ? " (weak)" : "",
                static_cast<long long>(B), static_cast<long long>(D), static_cast<long long>(H), ms, gflop / (ms / 1e3),
                reduceMs, ms > 0 ? 100.0 * reduceMs / ms : 0.0);
  }
  return 0;
}
