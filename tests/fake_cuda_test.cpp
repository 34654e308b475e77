// The runtime's CUDA device buffers and the host side of compiled GPU code, over the fake driver
// of tests/gpu/fake_libcuda.cpp (host memory, launches counted but not run). The ctest
// Gpu.fakeDriver runs this suite with RADIX_LIBCUDA pointing at it; elsewhere it skips. Kernel
// results are not checked here: no kernel runs without a GPU (tests/gpu/ does that on one).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <sys/wait.h>

#include "compiler/gpu.h"
#include "io_testing.h"
#include "ops_testing.h"
#include "radix/radix.h"
#include "radix/runtime.h"

namespace {

using namespace radix;
using opstest::expectError;

struct FakeDriver {
  void (*stats)(int*, int*, int*) = nullptr;
  void (*failLaunches)(int) = nullptr;
  int launches() const {
    int l = 0, a = 0, m = 0;
    stats(&l, &a, &m);
    return l;
  }
  int liveAllocations() const {
    int l = 0, a = 0, m = 0;
    stats(&l, &a, &m);
    return a;
  }
};

// The fake, when this process was started with it; nullopt otherwise (the tests skip).
const FakeDriver* fake() {
  static const std::optional<FakeDriver> driver = []() -> std::optional<FakeDriver> {
    const char* path = std::getenv("RADIX_LIBCUDA");
    if (!path || !*path) return std::nullopt;
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::nullopt;
    FakeDriver d;
    d.stats = reinterpret_cast<void (*)(int*, int*, int*)>(dlsym(lib, "radixFakeCudaStats"));
    d.failLaunches = reinterpret_cast<void (*)(int)>(dlsym(lib, "radixFakeCudaFailLaunches"));
    if (!d.stats || !d.failLaunches) return std::nullopt;
    return d;
  }();
  return driver ? &*driver : nullptr;
}

#define REQUIRE_FAKE()                                                                       \
  if (!fake()) GTEST_SKIP() << "needs RADIX_LIBCUDA=<tests/gpu fake driver> (ctest Gpu.fakeDriver)"; \
  if (detail::findPtxas().empty()) GTEST_SKIP() << "no ptxas (the CUDA toolkit)"

TEST(FakeCuda, PlatformAndBuffers) {
  REQUIRE_FAKE();
  const Platform gpu = Platform::cuda();
  EXPECT_EQ(gpu.target(), "cuda:sm_90a");
  EXPECT_TRUE(gpu.canRun());
  const int before = fake()->liveAllocations();
  {
    const Tensor t = Tensor::fromValues(gpu, Shape({2, 3}, DType::f16), {1, 2, 3, 4, 5, 6});
    EXPECT_EQ(fake()->liveAllocations(), before + 1) << "the buffer lives in device memory";
    EXPECT_EQ(t.toVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    const std::vector<uint8_t> bytes = {1, 2, 3, 4};
    EXPECT_EQ(Tensor::fromBytes(gpu, Shape({4}, DType::u8), bytes.data(), 4).toBytes(), bytes);
    expectError([&] { Platform::cuda(3); }, "[platform] no CUDA device 3", "sees 1");
  }
  EXPECT_EQ(fake()->liveAllocations(), before) << "device buffers are freed with their tensors";
}

TEST(FakeCuda, ExecutablesLaunchKernelsOnDeviceBuffers) {
  REQUIRE_FAKE();
  radix::iotest::TempDir dir("fake-cuda");
  CompileOptions o;
  o.cache = true;
  o.cacheDir = dir.path.string();
  const Platform gpu = Platform::cuda().withOptions(o);
  const Tensor a = Tensor::fromValues(gpu, Shape({64, 300}, DType::f32), std::vector<float>(64 * 300, 1.f));
  const Tensor w = Tensor::fromValues(gpu, Shape({300, 70}, DType::f32), std::vector<float>(300 * 70, 1.f));
  auto fn = [](const Tensor& x, const Tensor& y) { return x.dotGeneral(y, {{1, 0}}, {}).softmax(1); };
  Exe exe = compile(gpu, fn, a, w);
  const int buffers = fake()->liveAllocations(), launched = fake()->launches();
  {
    const Tensor y = exe(a, w);
    EXPECT_EQ(y.shape(), Shape({64, 70}, DType::f32));
    EXPECT_GE(fake()->launches(), launched + 4) << "fill, contraction, and the softmax's kernels";
    EXPECT_EQ(fake()->liveAllocations(), buffers + 1) << "intermediates freed, the result kept";
    EXPECT_EQ(y.toVector<float>().size(), 64u * 70u);
  }
  EXPECT_EQ(fake()->liveAllocations(), buffers);
  // The entry from the cache runs as a radix::Program the same way.
  Program p = Program::load(gpu, exe.cacheEntry());
  EXPECT_EQ(p(a, w).at(0).shape(), Shape({64, 70}, DType::f32));
  // Host tensors are not device tensors, and the reverse.
  const Tensor host = Tensor::fromValues(Platform::cpu(), Shape({64, 300}, DType::f32), std::vector<float>(64 * 300, 1.f));
  expectError([&] { exe(host, w); }, "[exe] arg0 {64,300}:f32 is in host memory", "Platform::cuda()");
  Exe cpuExe = compile(Platform::cpu(), fn, host, Tensor::fromValues(Platform::cpu(), w.shape(), std::vector<float>(300 * 70, 1.f)));
  expectError([&] { cpuExe(a, w); }, "[exe] arg0 {64,300}:f32 is in CUDA device memory", "toVector");
  // Donation: the result takes the argument's device buffer (a KV cache's way).
  {
    Exe donating = compile(gpu, [](const Tensor& x) { return x.exp().reuseBuffer(x); }, a);
    Tensor x = Tensor::fromValues(gpu, a.shape(), std::vector<float>(64 * 300, 0.f));
    const void* before = x.bufferAddress();
    const Tensor y = donating(x);
    EXPECT_EQ(y.bufferAddress(), before) << "the donated device buffer is the result's";
    expectError([&] { (void)x.toVector<float>(); }, "[toVector]", "donated");
  }
  // A failing launch is an error of the call, not a crash.
  fake()->failLaunches(1);
  expectError([&] { exe(a, w); }, "[exe] CUDA: cuLaunchKernel", "CUDA_ERROR_LAUNCH_FAILED");
  fake()->failLaunches(0);
  EXPECT_EQ(exe(a, w).shape(), Shape({64, 70}, DType::f32)) << "the next call runs again";
}

// `radix generate --device cuda` end to end on the fake driver: weights and KV cache on the
// device, prompt and decode steps compiled for it and launched; greedy sampling of logits copied
// back. The ids are not the model's (no kernel runs), their count is.
TEST(FakeCuda, GenerateOnTheDevice) {
  REQUIRE_FAKE();
  const std::string cmd = std::string("RADIX_CACHE_DIR=off RADIX_LIBCUDA=") + std::getenv("RADIX_LIBCUDA") + " " +
                          RADIX_CLI_PATH + " generate --device cuda --prompt 'In the beginning' -n 5 --temp 0 --ids 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  ASSERT_EQ(WEXITSTATUS(status), 0) << out;
  // The ids' line (stdout) among the compile log's (stderr).
  int ids = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.find_first_not_of("0123456789 ") != std::string::npos) continue;
    std::istringstream words(line);
    for (int id; words >> id;) ++ids;
  }
  EXPECT_EQ(ids, 5) << out;
  EXPECT_NE(out.find("generation: 5 tokens"), std::string::npos) << out;
}

}  // namespace
