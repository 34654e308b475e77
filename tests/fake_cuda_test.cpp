// The runtime's CUDA device buffers and the host side of compiled GPU code, over the fake driver
// of tests/gpu/fake_libcuda.cpp (host memory, launches counted but not run). The ctest
// Gpu.fakeDriver runs this suite with RADIX_LIBCUDA pointing at it; elsewhere it skips. Kernel
// results are not checked here: no kernel runs without a GPU (tests/gpu/ does that on one).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "compiler/gpu.h"
#include "io_testing.h"
#include "ops_testing.h"
#include "radix/models/generate.h"
#include "radix/nn.h"
#include "radix/radix.h"
#include "radix/runtime.h"

namespace {

using namespace radix;
using opstest::expectError;

struct FakeDriver {
  void (*stats)(int*, int*, int*) = nullptr;
  void (*failLaunches)(int) = nullptr;
  int (*syncs)() = nullptr;
  uint64_t (*bytesToHost)() = nullptr;
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
    d.syncs = reinterpret_cast<int (*)()>(dlsym(lib, "radixFakeCudaSyncs"));
    d.bytesToHost = reinterpret_cast<uint64_t (*)()>(dlsym(lib, "radixFakeCudaBytesToHost"));
    if (!d.stats || !d.failLaunches || !d.syncs || !d.bytesToHost) return std::nullopt;
    return d;
  }();
  return driver ? &*driver : nullptr;
}

// The fake cuBLASLt (tests/gpu/fake_libcublaslt.cpp), when RADIX_LIBCUBLASLT names it.
struct FakeCublasLt {
  void (*stats)(int*, int*) = nullptr;
  void (*refuse)(int) = nullptr;
  int matmuls() const {
    int m = 0, h = 0;
    stats(&m, &h);
    return m;
  }
};

const FakeCublasLt* fakeLt() {
  static const std::optional<FakeCublasLt> lt = []() -> std::optional<FakeCublasLt> {
    const char* path = std::getenv("RADIX_LIBCUBLASLT");
    void* lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!lib) return std::nullopt;
    FakeCublasLt f;
    f.stats = reinterpret_cast<void (*)(int*, int*)>(dlsym(lib, "radixFakeCublasLtStats"));
    f.refuse = reinterpret_cast<void (*)(int)>(dlsym(lib, "radixFakeCublasLtRefuse"));
    if (!f.stats || !f.refuse) return std::nullopt;
    return f;
  }();
  return lt ? &*lt : nullptr;
}

// The fake cuDNN (tests/gpu/fake_libcudnn.cpp), when RADIX_LIBCUDNN names it.
struct FakeCudnn {
  int (*executions)() = nullptr;
  void (*refuse)(int) = nullptr;
};

const FakeCudnn* fakeDnn() {
  static const std::optional<FakeCudnn> dnn = []() -> std::optional<FakeCudnn> {
    const char* path = std::getenv("RADIX_LIBCUDNN");
    void* lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!lib) return std::nullopt;
    FakeCudnn f;
    f.executions = reinterpret_cast<int (*)()>(dlsym(lib, "radixFakeCudnnExecutions"));
    f.refuse = reinterpret_cast<void (*)(int)>(dlsym(lib, "radixFakeCudnnRefuse"));
    if (!f.executions || !f.refuse) return std::nullopt;
    return f;
  }();
  return dnn ? &*dnn : nullptr;
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
  (void)exe(a, w);  // the thread's first contraction makes its cuBLASLt workspace, kept for the thread
  const int buffers = fake()->liveAllocations(), launched = fake()->launches(), syncs = fake()->syncs();
  {
    const Tensor y = exe(a, w);
    EXPECT_EQ(y.shape(), Shape({64, 70}, DType::f32));
    EXPECT_GE(fake()->launches(), launched + 2) << "the softmax's kernels";
    EXPECT_EQ(fake()->syncs(), syncs + 1) << "one stream in order, the host waiting once, at the end of the call";
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
  // A result of a host memory kind comes back in host memory: no device buffer stays with it,
  // and a GPU executable refuses it as any host tensor.
  {
    Exe offload = compile(gpu, [](const Tensor& x) { return x.exp().toMemory(Memory::hostPinned); }, a);
    const int live = fake()->liveAllocations();
    const Tensor y = offload(a);
    EXPECT_EQ(y.memory(), Memory::hostPinned);
    EXPECT_EQ(fake()->liveAllocations(), live) << "the device buffer of the result was freed after its copy";
    EXPECT_EQ(y.toVector<float>().size(), 64u * 300u);
    expectError([&] { offload(y); }, "[exe] arg0 {64,300}:f32 is in host memory", "Platform::cuda()");
  }
  // A failing launch is an error of the call, not a crash.
  fake()->failLaunches(1);
  expectError([&] { exe(a, w); }, "[exe] CUDA: cuLaunchKernel", "CUDA_ERROR_LAUNCH_FAILED");
  fake()->failLaunches(0);
  EXPECT_EQ(exe(a, w).shape(), Shape({64, 70}, DType::f32)) << "the next call runs again";
}

// Contractions go to cuBLASLt. The fake one computes them on the fake driver's host memory, so
// the layouts, transposes, leading dimensions, batch strides and beta that Radix hands it are
// checked against the CPU's results: each row is one way a contraction's operands can lie.
struct LibraryCase {
  const char* name;
  std::vector<int64_t> a, b;
  std::vector<AxisPair> contracting, batch;
};

TEST(FakeCuda, ContractionsRunThroughCublasLt) {
  REQUIRE_FAKE();
  if (!fakeLt()) GTEST_SKIP() << "needs RADIX_LIBCUBLASLT=<tests/gpu fake cuBLASLt> (ctest Gpu.fakeDriver)";
  const std::vector<LibraryCase> cases = {
      {"matmul, odd shape", {5, 7}, {7, 3}, {{1, 0}}, {}},
      {"A contracted on its first axis (A transposed)", {7, 5}, {7, 3}, {{0, 0}}, {}},
      {"B contracted on its last axis (a Linear's weight)", {3, 16}, {8, 16}, {{1, 1}}, {}},
      {"decode row (m = 1)", {1, 64}, {64, 48}, {{1, 0}}, {}},
      {"vector times matrix (rank-1 lhs)", {9}, {9, 4}, {{0, 0}}, {}},
      {"batched", {3, 4, 6}, {3, 6, 5}, {{2, 1}}, {{0, 0}}},
      {"batched, heads in the middle (attention scores)", {4, 2, 3}, {5, 2, 3}, {{2, 2}}, {{1, 1}}},
  };
  const Platform gpu = Platform::cuda();
  uint32_t seed = 7;
  auto values = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = static_cast<float>(int((seed = seed * 1103515245u + 12345u) >> 16) % 17 - 8) / 4.f;
    return v;
  };
  for (const LibraryCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape sa(c.a, DType::f32), sb(c.b, DType::f32);
    const std::vector<float> va = values(sa.count()), vb = values(sb.count());
    auto fn = [&](const Tensor& x, const Tensor& y) { return x.dotGeneral(y, c.contracting, c.batch); };
    const Tensor ha = Tensor::fromValues(Platform::cpu(), sa, va), hb = Tensor::fromValues(Platform::cpu(), sb, vb);
    const std::vector<float> want = compile(Platform::cpu(), fn, ha, hb)(ha, hb).toVector<float>();
    const Tensor da = Tensor::fromValues(gpu, sa, va), db = Tensor::fromValues(gpu, sb, vb);
    Exe exe = compile(gpu, fn, da, db);
    const int matmuls = fakeLt()->matmuls(), launches = fake()->launches();
    const std::vector<float> got = exe(da, db).toVector<float>();
    EXPECT_EQ(fakeLt()->matmuls(), matmuls + 1) << "one cuBLASLt matmul";
    EXPECT_EQ(fake()->launches(), launches) << "no kernel: the zero fill went with the fallback";
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::abs(want[i]))) << i;
  }
}

// What follows a contraction goes into cuBLASLt's epilogue where it can: the rounding of a
// bf16/f16 product and a bias along its columns (Linear's), in either order. Where the op that
// reads the product does more (an activation, a residual), the epilogue writes its start and the
// op runs as a kernel that reads it. Kernels run only where cuBLASLt says no.
struct EpilogueCase {
  const char* name;
  DType dtype;
  int64_t m, k, n;
  enum { none, bias, rowBias } add;
  bool relu;
  int launches;  // kernels besides the library call
  int fallback;  // kernels without it: the fill, the contraction, the epilogue's steps, the rest
};

TEST(FakeCuda, EpiloguesRunInCublasLt) {
  REQUIRE_FAKE();
  if (!fakeLt()) GTEST_SKIP() << "needs RADIX_LIBCUBLASLT=<tests/gpu fake cuBLASLt> (ctest Gpu.fakeDriver)";
  const std::vector<EpilogueCase> cases = {
      {"bf16 product: the rounding", DType::bf16, 6, 10, 4, EpilogueCase::none, false, 0, 3},
      {"f16 product, odd shape", DType::f16, 5, 9, 7, EpilogueCase::none, false, 0, 3},
      {"f32 Linear: the bias", DType::f32, 6, 10, 12, EpilogueCase::bias, false, 0, 3},
      {"bf16 Linear: rounding then bias", DType::bf16, 3, 16, 8, EpilogueCase::bias, false, 0, 3},
      {"bf16 decode row (m = 1) with a bias", DType::bf16, 1, 32, 24, EpilogueCase::bias, false, 0, 3},
      {"bias then relu: the relu stays a kernel", DType::f32, 4, 8, 8, EpilogueCase::bias, true, 1, 4},
      {"a bias along rows is not cuBLASLt's", DType::f32, 4, 8, 8, EpilogueCase::rowBias, false, 1, 3},
  };
  const Platform gpu = Platform::cuda(), cpu = Platform::cpu();
  uint32_t seed = 11;
  auto values = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = static_cast<float>(int((seed = seed * 1103515245u + 12345u) >> 16) % 17 - 8) / 4.f;
    return v;
  };
  // Each case twice: through cuBLASLt, then (one more row: another problem, which cuBLASLt has not
  // planned yet) without an algorithm, so that the fill, the contraction, the epilogue's steps and
  // what follows them run as kernels.
  for (const EpilogueCase& c : cases)
    for (const bool refused : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (refused ? ", refused" : ""));
      const int64_t m = c.m + (refused ? 1 : 0);
      const Shape sa({m, c.k}, c.dtype), sb({c.k, c.n}, c.dtype);
      const Shape sbias({c.add == EpilogueCase::rowBias ? m : c.n}, c.dtype);
      const std::vector<float> va = values(sa.count()), vb = values(sb.count()), vbias = values(sbias.count());
      auto fn = [&](const Tensor& x, const Tensor& y, const Tensor& bias) {
        Tensor r = x.dotGeneral(y, {{1, 0}}, {});
        if (c.add == EpilogueCase::bias) r = r.add(bias.broadcast(r.shape(), {1}));
        if (c.add == EpilogueCase::rowBias) r = r.add(bias.broadcast(r.shape(), {0}));
        return c.relu ? r.relu() : r;
      };
      auto on = [&](const Platform& p) {
        return std::tuple{Tensor::fromValues(p, sa, va), Tensor::fromValues(p, sb, vb), Tensor::fromValues(p, sbias, vbias)};
      };
      const auto [ha, hb, hbias] = on(cpu);
      const std::vector<float> want = compile(cpu, fn, ha, hb, hbias)(ha, hb, hbias).toVector<float>();
      const auto [da, db, dbias] = on(gpu);
      Exe exe = compile(gpu, fn, da, db, dbias);
      const int matmuls = fakeLt()->matmuls(), launches = fake()->launches();
      fakeLt()->refuse(refused ? 1 : 0);
      const Tensor got = exe(da, db, dbias);
      fakeLt()->refuse(0);
      EXPECT_EQ(got.shape(), Shape({m, c.n}, c.dtype));
      if (refused) {
        EXPECT_EQ(fakeLt()->matmuls(), matmuls) << "no algorithm, no matmul";
        EXPECT_EQ(fake()->launches(), launches + c.fallback) << "the fill, the contraction and the rest as kernels";
        continue;
      }
      EXPECT_EQ(fakeLt()->matmuls(), matmuls + 1) << "one cuBLASLt matmul";
      EXPECT_EQ(fake()->launches(), launches + c.launches) << "kernels after it";
      if (c.launches == 0) {
        // The CPU rounds the product before adding a bf16 bias; cuBLASLt adds first: one rounding.
        const double tolerance = c.dtype == DType::f32 ? 1e-5 : c.dtype == DType::f16 ? 1e-3 : 8e-3;
        const std::vector<float> g = got.toVector<float>();
        for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], tolerance * (1 + std::abs(want[i]))) << i;
      }
    }
}

// nn::sdpa through cuDNN's graph API: the fake runs the graph (matmuls, the masks read from the
// call's offset and lengths buffers, softmax, the bf16 probabilities) and the results are the
// CPU's. No kernel runs around it. What cuDNN's flash attention lacks (f32, a head dim that is
// not a multiple of 8) and a graph without an engine run the composition.
struct CudnnAttentionCase {
  const char* name;
  DType dtype;
  int64_t b, hq, hk, nq, nk, hd;
  bool causal;
  std::optional<int32_t> offset;
  std::vector<int32_t> lengths;
  bool throughCudnn;
};

struct GpuSdpa {
  bool causal = false;
  Tensor forward(Tensor q, Tensor k, Tensor v, std::optional<Tensor> offset, std::optional<Tensor> lengths) const {
    return nn::sdpa(q, k, v, {.causal = causal, .queryOffset = offset, .keyLengths = lengths});
  }
};

TEST(FakeCuda, AttentionRunsThroughCudnn) {
  REQUIRE_FAKE();
  if (!fakeDnn()) GTEST_SKIP() << "needs RADIX_LIBCUDNN=<tests/gpu fake cuDNN> (ctest Gpu.fakeDriver)";
  const std::vector<CudnnAttentionCase> cases = {
      {"causal prefill, grouped heads", DType::bf16, 1, 4, 2, 24, 24, 16, true, std::nullopt, {}, true},
      {"causal chunk at an offset, stale keys after it", DType::bf16, 2, 2, 2, 8, 32, 32, true, 5, {}, true},
      {"decode (q = 1) at position 10 of 64", DType::bf16, 1, 8, 2, 1, 64, 64, true, 10, {}, true},
      {"key lengths, not causal", DType::bf16, 3, 2, 1, 5, 12, 8, false, std::nullopt, {12, 7, 1}, true},
      {"f32: the composition", DType::f32, 1, 2, 2, 6, 6, 16, true, std::nullopt, {}, false},
      {"head dim 12: the composition", DType::bf16, 1, 2, 2, 6, 6, 12, true, std::nullopt, {}, false},
  };
  const Platform gpu = Platform::cuda(), cpu = Platform::cpu();
  for (const CudnnAttentionCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape qs = Shape({c.b, c.hq, c.nq, c.hd}, c.dtype).withTags({"b", "h", "q", "hd"});
    const Shape ks = Shape({c.b, c.hk, c.nk, c.hd}, c.dtype).withTags({"b", "h", "k", "hd"});
    auto values = [](const Shape& s, double phase) {
      std::vector<float> v(static_cast<size_t>(s.count()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(double(i) * 0.37 + phase));
      return v;
    };
    const std::vector<float> vq = values(qs, 0), vk = values(ks, 1), vv = values(ks, 2);
    auto on = [&](const Platform& p) {
      std::optional<Tensor> offset, lengths;
      if (c.offset) offset = Tensor::fromValues(p, Shape({}, DType::i32), std::vector<int32_t>{*c.offset});
      if (!c.lengths.empty()) lengths = Tensor::fromValues(p, Shape({c.b}, DType::i32).withTags({"b"}), c.lengths);
      return std::tuple{Tensor::fromValues(p, qs, vq), Tensor::fromValues(p, ks, vk), Tensor::fromValues(p, ks, vv),
                        offset, lengths};
    };
    const GpuSdpa fn{c.causal};
    const auto [hq, hk, hv, hoff, hlen] = on(cpu);
    const std::vector<float> want =
        radix::testing::compileAndCall(cpu, &GpuSdpa::forward, fn, hq, hk, hv, hoff, hlen).toVector<float>();
    const auto [dq, dk, dv, doff, dlen] = on(gpu);
    Exe exe = compile(gpu, &GpuSdpa::forward, fn, dq, dk, dv, doff, dlen);
    const int executions = fakeDnn()->executions(), launches = fake()->launches();
    const Tensor got = exe(fn, dq, dk, dv, doff, dlen);
    EXPECT_EQ(got.shape(), qs);
    if (!c.throughCudnn) {
      EXPECT_EQ(fakeDnn()->executions(), executions) << "cuDNN cannot take it";
      EXPECT_GT(fake()->launches(), launches) << "the composition's kernels";
      continue;
    }
    EXPECT_EQ(fakeDnn()->executions(), executions + 1) << "one cuDNN graph";
    EXPECT_EQ(fake()->launches(), launches) << "no kernel";
    const std::vector<float> g = got.toVector<float>();
    ASSERT_EQ(g.size(), want.size());
    // The probabilities are bf16 in cuDNN's graph (its second matmul's operand type).
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 2e-2 * (1 + std::abs(want[i]))) << i;
  }
  // Without an engine for the graph (a shape cuDNN has not planned yet), the composition runs.
  const Shape qs = Shape({1, 2, 16, 16}, DType::bf16).withTags({"b", "h", "q", "hd"});
  const Tensor q = Tensor::fromValues(gpu, qs, std::vector<float>(512, 0.5f));
  const Tensor k = Tensor::fromValues(gpu, qs.withTags({"b", "h", "k", "hd"}), std::vector<float>(512, 0.25f));
  const std::optional<Tensor> none;
  Exe exe = compile(gpu, &GpuSdpa::forward, GpuSdpa{true}, q, k, k, none, none);
  fakeDnn()->refuse(1);
  const int executions = fakeDnn()->executions(), launches = fake()->launches();
  EXPECT_EQ(exe(GpuSdpa{true}, q, k, k, none, none).shape(), qs);
  fakeDnn()->refuse(0);
  EXPECT_EQ(fakeDnn()->executions(), executions) << "no engine, no execution";
  EXPECT_GT(fake()->launches(), launches) << "the composition's kernels";
}

// Convolutions through cuDNN's graph API (the fake runs them): strides, dilations, groups,
// depthwise, 1-D (a unit axis added for cuDNN), NHWC, each against the CPU's results with one
// cuDNN graph; bf16 runs through cuDNN too (its rounding to bf16 is a kernel here, not run).
struct CudnnConvCase {
  const char* name;
  DType dtype;
  std::vector<int64_t> input, kernel;
  Tensor::ConvOptions options;
};

TEST(FakeCuda, ConvolutionsRunThroughCudnn) {
  REQUIRE_FAKE();
  if (!fakeDnn()) GTEST_SKIP() << "needs RADIX_LIBCUDNN=<tests/gpu fake cuDNN> (ctest Gpu.fakeDriver)";
  const std::vector<CudnnConvCase> cases = {
      {"3x3, padded", DType::f32, {2, 3, 7, 9}, {4, 3, 3, 3}, {.padding = {{1, 1}, {1, 1}}}},
      {"stride 2, dilation 2, 2 groups", DType::f32, {1, 4, 11, 10}, {6, 2, 3, 2},
       {.strides = {2, 2}, .rhsDilation = {2, 1}, .featureGroups = 2}},
      {"depthwise", DType::f32, {2, 5, 6, 6}, {5, 1, 3, 3}, {.padding = {{1, 1}, {0, 2}}, .featureGroups = 5}},
      {"1-D", DType::f32, {2, 3, 17}, {4, 3, 5}, {.strides = {3}}},
      {"NHWC", DType::f32, {1, 6, 5, 3}, {8, 3, 3, 3}, {.inputFeature = 3, .inputSpatial = {1, 2}}},
      {"bf16", DType::bf16, {1, 4, 8, 8}, {8, 4, 3, 3}, {.padding = {{1, 1}, {1, 1}}}},
  };
  const Platform gpu = Platform::cuda(), cpu = Platform::cpu();
  for (const CudnnConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape xs(c.input, c.dtype), ws(c.kernel, c.dtype);
    std::vector<float> vx(static_cast<size_t>(xs.count())), vw(static_cast<size_t>(ws.count()));
    for (size_t i = 0; i < vx.size(); ++i) vx[i] = static_cast<float>(int(i * 7 % 13) - 6) / 4.f;
    for (size_t i = 0; i < vw.size(); ++i) vw[i] = static_cast<float>(int(i * 5 % 11) - 5) / 4.f;
    auto fn = [&](const Tensor& x, const Tensor& w) { return x.convolution(w, c.options); };
    const Tensor hx = Tensor::fromValues(cpu, xs, vx), hw = Tensor::fromValues(cpu, ws, vw);
    const std::vector<float> want = compile(cpu, fn, hx, hw)(hx, hw).toVector<float>();
    const Tensor dx = Tensor::fromValues(gpu, xs, vx), dw = Tensor::fromValues(gpu, ws, vw);
    Exe exe = compile(gpu, fn, dx, dw);
    const int executions = fakeDnn()->executions(), launches = fake()->launches();
    const Tensor got = exe(dx, dw);
    EXPECT_EQ(fakeDnn()->executions(), executions + 1) << "one cuDNN graph";
    // bf16 rounds cuDNN's f32 result in a kernel.
    if (c.dtype == DType::f32) EXPECT_EQ(fake()->launches(), launches) << "no kernel: the padding and the zeros are cuDNN's";
    if (c.dtype != DType::f32) continue;
    const std::vector<float> g = got.toVector<float>();
    ASSERT_EQ(g.size(), want.size());
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
  }
  // Without an engine, the generated loops (the fill and the convolution at least).
  const Tensor x = Tensor::fromValues(gpu, Shape({1, 2, 5, 5}, DType::f32), std::vector<float>(50, 1.f));
  const Tensor w = Tensor::fromValues(gpu, Shape({3, 2, 2, 2}, DType::f32), std::vector<float>(24, 1.f));
  Exe exe = compile(gpu, [](const Tensor& a, const Tensor& b) { return a.conv2d(b, {.padding = {{1, 1}, {0, 1}}}); }, x, w);
  fakeDnn()->refuse(1);
  const int executions = fakeDnn()->executions(), launches = fake()->launches();
  EXPECT_EQ(exe(x, w).shape(), Shape({1, 3, 6, 5}, DType::f32));
  fakeDnn()->refuse(0);
  EXPECT_EQ(fakeDnn()->executions(), executions);
  EXPECT_GE(fake()->launches(), launches + 4) << "the padding's fill and copy, the output's fill and the convolution as kernels";
}

// A gated MLP's two projections of one input, read by one product: both run in cuBLASLt
// without their zero fills, though each fill and contraction has the other's between them;
// only the product is a kernel.
TEST(FakeCuda, GatedProjectionsLeaveOnlyTheirProduct) {
  REQUIRE_FAKE();
  if (!fakeLt()) GTEST_SKIP() << "needs RADIX_LIBCUBLASLT=<tests/gpu fake cuBLASLt> (ctest Gpu.fakeDriver)";
  const Platform gpu = Platform::cuda();
  const Tensor x = Tensor::fromValues(gpu, Shape({3, 8}, DType::bf16), std::vector<float>(24, 1.f));
  const Tensor g = Tensor::fromValues(gpu, Shape({8, 12}, DType::bf16), std::vector<float>(96, 0.5f));
  const Tensor u = Tensor::fromValues(gpu, Shape({8, 12}, DType::bf16), std::vector<float>(96, 0.25f));
  auto fn = [](const Tensor& a, const Tensor& gate, const Tensor& up) {
    return a.dotGeneral(gate, {{1, 0}}, {}).silu().mul(a.dotGeneral(up, {{1, 0}}, {}));
  };
  Exe exe = compile(gpu, fn, x, g, u);
  const int matmuls = fakeLt()->matmuls(), launches = fake()->launches();
  EXPECT_EQ(exe(x, g, u).shape(), Shape({3, 12}, DType::bf16));
  EXPECT_EQ(fakeLt()->matmuls(), matmuls + 2);
  EXPECT_EQ(fake()->launches(), launches + 1) << "the product alone";
}

// Where cuBLASLt finds no algorithm (or is absent: FakeCuda.GenerateOnTheDevice), the generated
// kernels run instead, fill included.
TEST(FakeCuda, ContractionFallsBackToKernels) {
  REQUIRE_FAKE();
  if (!fakeLt()) GTEST_SKIP() << "needs RADIX_LIBCUBLASLT=<tests/gpu fake cuBLASLt> (ctest Gpu.fakeDriver)";
  const Platform gpu = Platform::cuda();
  const Tensor a = Tensor::fromValues(gpu, Shape({11, 13}, DType::f32), std::vector<float>(11 * 13, 1.f));
  const Tensor b = Tensor::fromValues(gpu, Shape({13, 17}, DType::f32), std::vector<float>(13 * 17, 1.f));
  Exe exe = compile(gpu, [](const Tensor& x, const Tensor& y) { return x.dotGeneral(y, {{1, 0}}, {}); }, a, b);
  fakeLt()->refuse(1);
  const int matmuls = fakeLt()->matmuls(), launches = fake()->launches();
  EXPECT_EQ(exe(a, b).shape(), Shape({11, 17}, DType::f32));
  fakeLt()->refuse(0);
  EXPECT_EQ(fakeLt()->matmuls(), matmuls) << "no algorithm, no matmul";
  EXPECT_EQ(fake()->launches(), launches + 2) << "the fill and the contraction as kernels";
}

// `radix generate --device cuda` end to end on the fake driver: weights and KV cache on the
// device, prompt and decode steps and the greedy sampler compiled for it and launched. The ids
// are not the model's (no kernel runs: the fake's zeroed memory gives id 0), their count is.
// It runs with the contractions in cuBLASLt (the fake's, when the ctest names it) and without
// any cuBLASLt (generated kernels).
class FakeCudaGenerate : public ::testing::TestWithParam<bool> {};

// Runs the CLI on the fake driver (and cuBLASLt when `withLibrary`); its exit status and output.
std::pair<int, std::string> runCli(const std::string& arguments, bool withLibrary = true,
                                   const std::string& input = "") {
  const char* lt = std::getenv("RADIX_LIBCUBLASLT");
  const std::string library = withLibrary ? (lt ? lt : "") : "/nonexistent/libcublasLt.so";
  const std::string cmd = (input.empty() ? "" : "printf '" + input + "' | ") + "RADIX_CACHE_DIR=off RADIX_LIBCUDA=" +
                          std::getenv("RADIX_LIBCUDA") + " RADIX_LIBCUBLASLT=" + library + " " + RADIX_CLI_PATH + " " +
                          arguments + " 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_P(FakeCudaGenerate, GenerateOnTheDevice) {
  REQUIRE_FAKE();
  const auto [status, out] = runCli("generate --device cuda --prompt 'In the beginning' -n 5 --temp 0 --ids", GetParam());
  ASSERT_EQ(status, 0) << out;
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

// radix chat and radix bench take --device too: a greedy turn (its KV cache kept on the device)
// and one row of each test, named after the device.
TEST(FakeCuda, ChatAndBenchOnTheDevice) {
  REQUIRE_FAKE();
  radix::iotest::TempDir dir("fake-cuda-cli");
  const std::string chatTemplate = (dir.path / "t.jinja").string();
  std::ofstream(chatTemplate) << "{% for m in messages %}{{ m.content }}\n{% endfor %}";
  const auto [chatStatus, chat] = runCli("chat --device cuda -n 4 --temp 0 -v --template " + chatTemplate, true, "hello\\n");
  ASSERT_EQ(chatStatus, 0) << chat;
  EXPECT_NE(chat.find("turn 1: 0 tokens kept in the cache"), std::string::npos) << chat;
  EXPECT_NE(chat.find("4 generated"), std::string::npos) << chat;
  const std::string make = std::string("/usr/bin/python3 ") + RADIX_SOURCE_DIR + "/tools/make_test_models.py " +
                           dir.path.string() + " --size tiny --only llama-gguf > /dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  const std::string gguf = (dir.path / "llama-tiny.gguf").string();
  const auto [benchStatus, bench] = runCli("bench --device cuda --model " + gguf + " --dtype f32 -p 16 -n 4 -r 1");
  ASSERT_EQ(benchStatus, 0) << bench;
  EXPECT_NE(bench.find("| cuda:0 | pp16 |"), std::string::npos) << bench;
  EXPECT_NE(bench.find("| cuda:0 | tg4 |"), std::string::npos) << bench;
  const auto [badStatus, bad] = runCli("bench --device gpu --model " + gguf);
  EXPECT_EQ(badStatus, 2) << bad;
  EXPECT_NE(bad.find("[bench] --device is cpu, cuda or cuda:N, got \"gpu\""), std::string::npos) << bad;
}

// Greedy decoding on the device copies back the sampled id, not the logits: the argmax runs
// there (a vocabulary of 300 floats would be 1200 bytes a token).
TEST(FakeCuda, GreedyDecodingCopiesBackOnlyTheIds) {
  REQUIRE_FAKE();
  radix::iotest::TempDir dir("fake-cuda-greedy");
  const std::string make = std::string("/usr/bin/python3 ") + RADIX_SOURCE_DIR + "/tools/make_test_models.py " +
                           dir.path.string() + " --size tiny --only llama-gguf > /dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  models::LanguageModel lm = models::LanguageModel::open(Platform::cuda(), (dir.path / "llama-tiny.gguf").string());
  ASSERT_EQ(lm.vocabSize(), 300);
  const std::vector<int32_t> prompt = {1, 2, 3};
  (void)lm.generate(prompt, 2, {});  // compiles
  const uint64_t before = fake()->bytesToHost();
  const int steps = 8;
  EXPECT_EQ(lm.generate(prompt, steps, {}).size(), size_t(steps));
  const uint64_t perToken = (fake()->bytesToHost() - before) / steps;
  EXPECT_LE(perToken, 64u) << "bytes copied to the host per token";
}

INSTANTIATE_TEST_SUITE_P(FakeCuda, FakeCudaGenerate, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "cublasLt" : "withoutCublasLt"; });

}  // namespace
