// The packed-weight cache (src/compiler/kernels/packed.h): a constant weight argument is packed
// once and reused by later calls; a donated (rewritten) weight, a freed and reallocated buffer at
// the same address, concurrent callers and the memory bound all keep the results right.
#include <gtest/gtest.h>
#include <radix/io.h>
#include <radix/radix.h>

#include <cmath>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "compiler/kernels/kernels.h"
#include "compiler/kernels/packed.h"
#include "io_testing.h"

namespace {

namespace kernels = radix::kernels;
using radix::DType;
using radix::Shape;
using radix::Tensor;

constexpr int64_t M = 24, K = 80, N = 72;  // a GEMM (M > 1), over 1 MFLOP is not needed

std::vector<float> randomValues(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// {M, k} x {k, n}.
std::vector<double> matmul(const std::vector<float>& x, const std::vector<float>& w, int64_t k = K, int64_t n = N) {
  std::vector<double> y(M * n, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < n; ++j) y[i * n + j] += double(x[i * k + q]) * w[q * n + j];
  return y;
}

void expectMatmul(const Tensor& y, const std::vector<float>& x, const std::vector<float>& w, int64_t k = K,
                  int64_t n = N) {
  const auto got = y.toVector<double>();
  const auto want = matmul(x, w, k, n);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "element " << i;
}

radix::Platform platform() { return radix::Platform::cpu().withOptions({.cache = false, .threads = 1}); }

auto product() {
  return [](Tensor x, Tensor w) { return x.dotGeneral(w, {{1, 0}}, {}); };
}

TEST(PackedWeights, ConstantWeightIsPackedOnceAcrossCalls) {
  const radix::Platform cpu = platform();
  const auto xv = randomValues(M * K, 1), wv = randomValues(K * N, 2);
  Tensor x = Tensor::fromValues(cpu, Shape({M, K}, DType::f32), xv);
  Tensor w = Tensor::fromValues(cpu, Shape({K, N}, DType::f32), wv);
  auto f = radix::compile(cpu, product(), x, w);
  const auto s0 = kernels::packedCacheStats();
  for (int call = 0; call < 4; ++call) expectMatmul(f(x, w), xv, wv);
  const auto s1 = kernels::packedCacheStats();
  // The first call packs per block (a B seen once is not cached), the second packs B whole.
  EXPECT_EQ(s1.packs, s0.packs + 1) << "B should be packed whole by the second call only";
  EXPECT_EQ(s1.hits, s0.hits + 2);
}

struct OneWeight {
  Tensor w;
};

// A model's weight (bound by io::loadInto) is packed whole on its first use: a prompt's first
// chunk already reuses it, and the next call hits.
TEST(PackedWeights, LoadedWeightIsPackedOnFirstUse) {
  const radix::Platform cpu = platform();
  const auto xv = randomValues(M * K, 11), wv = randomValues(K * N, 12);
  std::string bytes(reinterpret_cast<const char*>(wv.data()), wv.size() * sizeof(float));
  const std::string file = radix::iotest::safetensors({{"w", "F32", {K, N}, bytes}});
  const radix::io::Checkpoint ckpt = radix::io::Checkpoint::fromSafetensorsBytes(radix::iotest::span(file), "w.safetensors");
  OneWeight model{Tensor(Shape({K, N}, DType::f32))};
  radix::io::loadInto(cpu, model, ckpt);
  Tensor x = Tensor::fromValues(cpu, Shape({M, K}, DType::f32), xv);
  auto f = radix::compile(cpu, product(), x, model.w);
  const auto s0 = kernels::packedCacheStats();
  expectMatmul(f(x, model.w), xv, wv);
  const auto s1 = kernels::packedCacheStats();
  EXPECT_EQ(s1.packs, s0.packs + 1) << "a loaded weight is packed by its first call";
  expectMatmul(f(x, model.w), xv, wv);
  EXPECT_EQ(kernels::packedCacheStats().hits, s1.hits + 1);
}

// A weight read by one executable, then updated in place by another (donation): the next read
// sees the new values, though the buffer (and its address) is the same.
TEST(PackedWeights, DonatedWeightUpdatedInPlaceGivesNewResults) {
  const radix::Platform cpu = platform();
  const auto xv = randomValues(M * K, 3), wv = randomValues(K * N, 4);
  Tensor x = Tensor::fromValues(cpu, Shape({M, K}, DType::f32), xv);
  Tensor w = Tensor::fromValues(cpu, Shape({K, N}, DType::f32), wv);
  auto f = radix::compile(cpu, product(), x, w);
  auto update = radix::compile(cpu, [](Tensor v) { return v.addConstant(1.0).reuseBuffer(v); }, w);
  const auto s0 = kernels::packedCacheStats();
  for (int call = 0; call < 3; ++call) expectMatmul(f(x, w), xv, wv);
  EXPECT_EQ(kernels::packedCacheStats().hits, s0.hits + 1) << "w's packed copy should be in use";
  const void* address = w.bufferAddress();
  Tensor w2 = update(w);
  EXPECT_EQ(w2.bufferAddress(), address) << "donation should keep the buffer";
  std::vector<float> w2v = wv;
  for (float& v : w2v) v += 1.0f;
  for (int call = 0; call < 3; ++call) expectMatmul(f(x, w2), xv, w2v);
}

// A freed buffer whose address comes back for a new weight: its generation is new.
TEST(PackedWeights, ReallocatedBufferAtTheSameAddressIsNotConfused) {
  const radix::Platform cpu = platform();
  // A 1 MiB weight: the buffer pool keeps freed blocks of that size and more for the next buffer
  // of the same size (a smaller one would depend on malloc handing the address back).
  constexpr int64_t kBig = 512, nBig = 512;
  const auto xv = randomValues(M * kBig, 5);
  Tensor x = Tensor::fromValues(cpu, Shape({M, kBig}, DType::f32), xv);
  const void* lastAddress = nullptr;
  int sameAddress = 0;
  std::optional<decltype(radix::compile(cpu, product(), x, x))> f;
  for (unsigned round = 0; round < 4; ++round) {
    const auto wv = randomValues(kBig * nBig, 10 + round);
    Tensor w = Tensor::fromValues(cpu, Shape({kBig, nBig}, DType::f32), wv);
    if (!f) f.emplace(radix::compile(cpu, product(), x, w));
    sameAddress += w.bufferAddress() == lastAddress;
    lastAddress = w.bufferAddress();
    for (int call = 0; call < 3; ++call) expectMatmul((*f)(x, w), xv, wv, kBig, nBig);  // seen, packed, reused
  }  // w freed here; the buffer pool hands its address to the next round's weight
#if !__has_feature(address_sanitizer)  // ASan quarantines freed memory, and the pool is off there
  EXPECT_GT(sameAddress, 0) << "the allocator never reused the address: the case above did not occur";
#endif
  // The same case on every build: one caller-owned block bound again with new contents.
  std::vector<float> block(static_cast<size_t>(kBig * nBig));
  for (unsigned round = 0; round < 3; ++round) {
    const auto wv = randomValues(kBig * nBig, 20 + round);
    std::copy(wv.begin(), wv.end(), block.begin());
    Tensor w = Tensor::fromExternal(cpu, Shape({kBig, nBig}, DType::f32), block.data(), nullptr);
    ASSERT_EQ(w.bufferAddress(), static_cast<const void*>(block.data()));
    for (int call = 0; call < 3; ++call) expectMatmul((*f)(x, w), xv, wv, kBig, nBig);
  }
}

TEST(PackedWeights, MemoryBoundZeroDisablesTheCache) {
  const radix::Platform cpu = platform();
  const auto xv = randomValues(M * K, 6), wv = randomValues(K * N, 7);
  Tensor x = Tensor::fromValues(cpu, Shape({M, K}, DType::f32), xv);
  Tensor w = Tensor::fromValues(cpu, Shape({K, N}, DType::f32), wv);
  auto f = radix::compile(cpu, product(), x, w);
  const size_t limit = kernels::packedCacheLimit();
  kernels::setPackedCacheLimit(0);
  const auto s0 = kernels::packedCacheStats();
  for (int call = 0; call < 3; ++call) expectMatmul(f(x, w), xv, wv);
  const auto s1 = kernels::packedCacheStats();
  kernels::setPackedCacheLimit(limit);
  EXPECT_EQ(s1.packs, s0.packs);
  EXPECT_EQ(s1.hits, s0.hits);
  EXPECT_EQ(s1.entries, 0u);
}

// A bound of one packed weight: a second weight does not evict the first while it is in use
// (no thrashing), and does once the first has been idle for several rounds of lookups.
TEST(PackedWeights, MemoryBoundKeepsTheWeightInUseAndEvictsIdleOnes) {
  const radix::Platform cpu = platform();
  const auto xv = randomValues(M * K, 8), av = randomValues(K * N, 9), bv = randomValues(K * N, 10);
  Tensor x = Tensor::fromValues(cpu, Shape({M, K}, DType::f32), xv);
  Tensor wa = Tensor::fromValues(cpu, Shape({K, N}, DType::f32), av);
  Tensor wb = Tensor::fromValues(cpu, Shape({K, N}, DType::f32), bv);
  auto f = radix::compile(cpu, product(), x, wa);
  const size_t limit = kernels::packedCacheLimit();
  const size_t before = kernels::packedCacheStats().bytes;
  expectMatmul(f(x, wa), xv, av);
  expectMatmul(f(x, wa), xv, av);  // packed whole on its second use
  const size_t one = kernels::packedCacheStats().bytes - before;
  ASSERT_GT(one, 0u);
  kernels::setPackedCacheLimit(one);  // room for one packed copy, nothing more
  const auto s0 = kernels::packedCacheStats();
  for (int round = 0; round < 3; ++round) {
    expectMatmul(f(x, wb), xv, bv);  // packed per call, not cached: wa is in use
    expectMatmul(f(x, wa), xv, av);  // hit
  }
  const auto s1 = kernels::packedCacheStats();
  EXPECT_EQ(s1.evictions, s0.evictions);
  EXPECT_EQ(s1.hits, s0.hits + 3);
  EXPECT_LE(s1.bytes, one);
  for (int call = 0; call < 120; ++call) expectMatmul(f(x, wb), xv, bv);  // wa idle: evicted for wb
  const auto s2 = kernels::packedCacheStats();
  kernels::setPackedCacheLimit(limit);
  EXPECT_EQ(s2.evictions, s1.evictions + 1);
  EXPECT_GT(s2.hits, s1.hits + 10);
  EXPECT_LE(s2.bytes, one);
}

// Several threads calling one executable with the same weight (and their own inputs): one
// packed copy serves them all (TSan-clean: the cache and the pins are under one mutex).
TEST(Concurrency, PackedWeightSharedByConcurrentCalls) {
  const radix::Platform cpu = platform();
  const auto wv = randomValues(K * N, 20);
  Tensor w = Tensor::fromValues(cpu, Shape({K, N}, DType::f32), wv);
  Tensor x0 = Tensor::fromValues(cpu, Shape({M, K}, DType::f32), randomValues(M * K, 21));
  auto f = radix::compile(cpu, product(), x0, w);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const auto xv = randomValues(M * K, 30 + t);
      Tensor x = Tensor::fromValues(cpu, Shape({M, K}, DType::f32), xv);
      const auto want = matmul(xv, wv);
      for (int r = 0; r < 5; ++r) {
        const auto got = f(x, w).toVector<double>();
        for (size_t i = 0; i < got.size(); ++i)
          if (std::fabs(got[i] - want[i]) > 1e-4) ++failures[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

// A convolution's kernel (NCHW input, OIHW weights: the kernel is the GEMM's packed X) is packed
// once too, in each kernel's own layout, keyed by the call's descriptor.
constexpr int64_t kB = 2, kC = 8, kO = 16, kH = 10, kW = 11;  // 3x3, padding 1; the kernel over 4 KB (pinned)

std::vector<double> conv3x3(const std::vector<float>& x, const std::vector<float>& w, int64_t c = kC, int64_t o = kO) {
  std::vector<double> y(static_cast<size_t>(kB * o * kH * kW), 0.0);
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t f = 0; f < o; ++f)
      for (int64_t i = 0; i < kH; ++i)
        for (int64_t j = 0; j < kW; ++j) {
          double acc = 0;
          for (int64_t q = 0; q < c; ++q)
            for (int64_t u = 0; u < 3; ++u)
              for (int64_t v = 0; v < 3; ++v) {
                const int64_t ii = i + u - 1, jj = j + v - 1;
                if (ii >= 0 && ii < kH && jj >= 0 && jj < kW)
                  acc += double(x[((b * c + q) * kH + ii) * kW + jj]) * w[((f * c + q) * 3 + u) * 3 + v];
              }
          y[((b * o + f) * kH + i) * kW + j] = acc;
        }
  return y;
}

void expectConv(const Tensor& y, const std::vector<double>& want, double tol) {
  const auto got = y.toVector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
}

auto conv() {
  Tensor::ConvOptions o;
  o.padding = {{1, 1}, {1, 1}};
  return [o](Tensor x, Tensor w) { return x.conv2d(w, o); };
}

TEST(PackedWeights, ConvolutionKernelIsPackedOnceAcrossCalls) {
  const radix::Platform cpu = platform();
  const auto xv = randomValues(kB * kC * kH * kW, 31), wv = randomValues(kO * kC * 9, 32);
  Tensor x = Tensor::fromValues(cpu, Shape({kB, kC, kH, kW}, DType::f32), xv);
  Tensor w = Tensor::fromValues(cpu, Shape({kO, kC, 3, 3}, DType::f32), wv);
  auto f = radix::compile(cpu, conv(), x, w);
  const auto want = conv3x3(xv, wv);
  const auto s0 = kernels::packedCacheStats();
  for (int call = 0; call < 4; ++call) expectConv(f(x, w), want, 1e-5);
  const auto s1 = kernels::packedCacheStats();
  EXPECT_EQ(s1.packs, s0.packs + 1) << "the kernel should be packed whole by the second call only";
  EXPECT_EQ(s1.hits, s0.hits + 2);
  // Updated in place (donation): the same buffer, new values, new results.
  auto update = radix::compile(cpu, [](Tensor v) { return v.addConstant(1.0).reuseBuffer(v); }, w);
  Tensor w2 = update(w);
  std::vector<float> w2v = wv;
  for (float& v : w2v) v += 1.0f;
  const auto want2 = conv3x3(xv, w2v);
  for (int call = 0; call < 3; ++call) expectConv(f(x, w2), want2, 1e-5);
}

// bf16, 64 channels: AMX's grid packs the kernel tap-major, the bf16 rows kernel in pairs; each
// is cached under its own layout. The input (x) is never cached: only the kernel operand is.
TEST(PackedWeights, Bf16ConvolutionKernelIsPackedOnce) {
  const radix::Platform cpu = platform();
  constexpr int64_t c = 64, o = 40;
  const auto xv = randomValues(kB * c * kH * kW, 41), wv = randomValues(o * c * 9, 42);
  Tensor x = Tensor::fromValues(cpu, Shape({kB, c, kH, kW}, DType::bf16), xv);
  Tensor w = Tensor::fromValues(cpu, Shape({o, c, 3, 3}, DType::bf16), wv);
  std::vector<float> xr, wr;
  for (double v : x.toVector<double>()) xr.push_back(static_cast<float>(v));
  for (double v : w.toVector<double>()) wr.push_back(static_cast<float>(v));
  auto f = radix::compile(cpu, conv(), x, w);
  const auto want = conv3x3(xr, wr, c, o);
  const auto s0 = kernels::packedCacheStats();
  for (int call = 0; call < 4; ++call) expectConv(f(x, w), want, 1.0 / 64);
  const auto s1 = kernels::packedCacheStats();
  const kernels::Isa isa = kernels::hostIsa();
  if (isa == kernels::Isa::amx || isa == kernels::Isa::avx512bf16) {
    EXPECT_EQ(s1.packs, s0.packs + 1);
    EXPECT_EQ(s1.hits, s0.hits + 2);
  } else {
    GTEST_SKIP() << "bf16 convolutions run the tabled GEMM without avx512bf16 (packed per block); numerics checked";
  }
}

}  // namespace
