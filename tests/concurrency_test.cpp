// Threads at once: compiles into one cache folder, calls of one executable, tag interning. Run
// under ThreadSanitizer by scripts/sanitize (compiled code is serial there: libomp is not
// instrumented).
#include <radix/cache.h>
#include <radix/radix.h>
#include <radix/testing.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "mlp/mlp.h"
#include "models_testing.h"
#include "radix/models/generate.h"

namespace fs = std::filesystem;

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;

constexpr int kThreads = 4;

radix::Platform serialWithCache(const std::string& dir) {
  radix::CompileOptions o;
  o.threads = 1;
  o.cacheDir = dir;
  return radix::Platform::cpu().withOptions(o);
}

template <class F>
void onThreads(int n, F f) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(f, i);
  for (std::thread& t : threads) t.join();
}

TEST(Concurrency, CompilesIntoOneCacheFolder) {
  const std::string dir = (fs::temp_directory_path() / ("radix-concurrency-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  const radix::Platform p = serialWithCache(dir);
  std::atomic<int> wrong{0};
  // Two rounds: the first races to store, the second races to load.
  for (int round = 0; round < 2; ++round) {
    onThreads(kThreads, [&](int i) {
      const mlp::MLP nn = mlp::example(radix::Platform::cpu());
      const Tensor x = mlp::input(radix::Platform::cpu());
      const std::vector<float> y = radix::compile(p, &mlp::MLP::forward, nn, x)(nn, x).toVector<float>();
      if (y != std::vector<float>{20, 0, 0}) ++wrong;
      // A module of its own per thread parity: two keys written at once.
      auto scale = [i](const Tensor& a) { return a.mulConstant(i % 2 ? 3 : 5); };
      const Tensor v = Tensor::fromValues(radix::Platform::cpu(), Shape({3}, DType::f32), std::vector<float>{1, 2, 3});
      const std::vector<float> z = radix::compile(p, scale, v)(v).toVector<float>();
      const float k = i % 2 ? 3 : 5;
      if (z != std::vector<float>{k, 2 * k, 3 * k}) ++wrong;
    });
  }
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(radix::listCache(dir).size(), 3u);
  fs::remove_all(dir);
}

TEST(Concurrency, OneExecutableCalledFromManyThreads) {
  radix::CompileOptions o;
  o.threads = 1;
  o.cache = false;
  const radix::Platform p = radix::Platform::cpu().withOptions(o);
  auto fn = [](const Tensor& a, const Tensor& b) { return a.mul(b).addConstant(1); };
  const Shape s({129}, DType::f32);
  auto exe = radix::compile(p, fn, Tensor(s), Tensor(s));
  std::atomic<int> wrong{0};
  onThreads(kThreads, [&](int i) {
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<float> a(129), b(129);
      for (int j = 0; j < 129; ++j) a[j] = static_cast<float>(i + j), b[j] = static_cast<float>(rep);
      const std::vector<float> y = exe(Tensor::fromValues(p, s, a), Tensor::fromValues(p, s, b)).toVector<float>();
      for (int j = 0; j < 129; ++j)
        if (y[j] != a[j] * b[j] + 1) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Concurrency, TagsInternOnceAcrossThreads) {
  std::vector<const void*> seen(kThreads);
  onThreads(kThreads, [&](int i) {
    for (int k = 0; k < 200; ++k) radix::Tag("t" + std::to_string(k));
    seen[i] = radix::Tag("shared").name().data();
  });
  for (int i = 1; i < kThreads; ++i) EXPECT_EQ(seen[i], seen[0]);
}

}  // namespace

namespace {

// LanguageModel::prepareAll compiles the step executables on one thread per core (at least 2
// here): every bucket is there afterwards, and generation matches a model whose steps were
// compiled one at a time.
TEST(Concurrency, PrepareAllCompilesStepsOnThreads) {
  using radix::models::LanguageModel;
  radix::CompileOptions o;
  o.threads = 1;
  o.cache = false;
  const radix::Platform p = radix::Platform::cpu().withOptions(o);
  const std::string folder = radix::models::testing::testModels() + "/llama-tiny";
  LanguageModel together = LanguageModel::open(p, folder);
  together.reset(64);
  together.prepareAll();
  EXPECT_EQ(together.executables(), 4u) << "decode and the 16, 32 and 64 chunks";
  LanguageModel alone = LanguageModel::open(p, folder);
  const std::vector<int32_t> prompt = {5, 9, 14, 3, 77, 21, 8, 2, 40, 11, 6, 19, 33, 7, 1, 12, 4, 25};
  const std::vector<int32_t> a = together.generate(prompt, 6, {.temperature = 0});
  const std::vector<int32_t> b = alone.generate(prompt, 6, {.temperature = 0});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 6u);
}

}  // namespace
