// Cold vs warm compile: from radix::compile() to a callable Exe, with an empty on-disk cache
// (trace + lower + LLVM) and with a filled one (trace + load), in the same run.
//   build/bin/radix-bench-compile [runs]
#include <radix/cache.h>
#include <radix/radix.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>

#include "gpt2.h"
#include "mlp/mlp.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;

double millis(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void measure(const char* name, const std::function<bool(const radix::Platform&)>& compile, int runs, int threads = 0) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("radix-bench-" + std::to_string(getpid()));
  std::vector<double> cold, warm;
  for (int i = 0; i < runs; ++i) {
    fs::remove_all(dir);
    radix::CompileOptions options;
    options.cacheDir = dir.string();
    options.threads = threads;
    radix::Platform platform = radix::Platform::cpu().withOptions(options);
    bool hit = true;
    cold.push_back(millis([&] { hit = compile(platform); }));
    if (hit) std::fprintf(stderr, "unexpected cache hit on a cold compile\n");
    warm.push_back(millis([&] { hit = compile(platform); }));
    if (!hit) std::fprintf(stderr, "unexpected cache miss on a warm compile\n");
  }
  fs::remove_all(dir);
  const double c = median(cold), w = median(warm);
  std::printf("%-22s cold %9.1f ms   warm %7.1f ms   cold/warm %6.1fx\n", name, c, w, c / w);
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  std::printf("radix compile, median of %d runs (warm = filled on-disk cache, goal < 50 ms for GPT-2)\n", runs);
  measure("3-layer NN {2}:f16", [](const radix::Platform& p) {
    const mlp::MLP nn = mlp::placeholders(DType::f16);
    return radix::compile(p, &mlp::MLP::forwardInline, nn, Tensor(Shape({2}, DType::f16))).fromCache();
  }, runs);
  const gpt2::Model model = gpt2::placeholders(12);
  const Tensor tokens(Shape({128}, DType::i32).withTags({"s"}));
  auto gpt = [&](const radix::Platform& p) { return radix::compile(p, &gpt2::Model::forward, model, tokens).fromCache(); };
  measure("GPT-2 124M, 128 tokens", gpt, runs);
  measure("  same, serial code", gpt, runs, 1);  // no OpenMP outlining: less LLVM work
  return 0;
}
