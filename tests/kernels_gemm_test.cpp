// The contraction kernels (src/compiler/kernels): every path (GEMM, GEMV by rows and by columns,
// bf16 pairs) against a double reference, on odd shapes, operand layouts, batch dims and
// contracting dims anywhere; f32, f16, bf16 and bf16 weights widened to f32; 1 and 2 threads;
// the host's ISA and every lower one it runs, forced through CompileOptions::targetCpu. Each
// case checks the kernel counters, so a silent fallback to the generic loops fails.
#include <gtest/gtest.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include "runtime/buffer_pool.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "compiler/kernels/kernels.h"
#include "io_testing.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
namespace kernels = radix::kernels;
using Dims = std::vector<int64_t>;
using Pairs = std::vector<std::pair<int, int>>;

struct Case {
  const char* name;
  Dims a, b;
  Pairs contracting, batching;
  std::optional<kernels::Path> path;  // nullopt: no kernel expected
};

constexpr auto gemm = kernels::Path::gemm;
constexpr auto gemv = kernels::Path::gemv;
constexpr std::nullopt_t none = std::nullopt;

// Small enough for one thread (under 1 MFLOP).
const std::vector<Case>& smallCases() {
  static const std::vector<Case> cases = {
      // Degenerate contractions (no loop longer than 1, or nothing to contract) are products
      // that canonicalization and fusion fold before bufferization: no kernel to check.
      {"one", {1, 1}, {1, 1}, {{1, 0}}, {}, none},
      {"m7_n17_k129", {7, 129}, {129, 17}, {{1, 0}}, {}, gemm},
      {"tails_m33_n65_k17", {33, 17}, {17, 65}, {{1, 0}}, {}, gemm},
      // Three K blocks, the last one odd (a lone bf16 pair): A's rows packed from k0 on.
      {"k_blocks_m9_n5_k1031", {9, 1031}, {1031, 5}, {{1, 0}}, {}, gemm},
      {"lhs_transposed", {129, 17}, {129, 33}, {{0, 0}}, {}, gemm},
      {"rhs_transposed", {17, 129}, {33, 129}, {{1, 1}}, {}, gemm},
      {"both_transposed", {129, 17}, {33, 129}, {{0, 1}}, {}, gemm},
      {"batched", {3, 7, 17}, {3, 17, 129}, {{2, 1}}, {{0, 0}}, gemm},
      {"batch_last", {7, 17, 3}, {17, 9, 3}, {{1, 0}}, {{2, 2}}, gemm},
      {"two_contracting_crossed", {5, 7, 17}, {17, 9, 7}, {{1, 2}, {2, 0}}, {}, gemm},
      {"two_contracting_merged", {5, 7, 17}, {7, 17, 9}, {{1, 0}, {2, 1}}, {}, gemm},
      {"free_dims_both_sides", {2, 3, 17}, {17, 4, 5}, {{2, 0}}, {}, gemm},
      {"outer_product", {7}, {17}, {}, {}, none},
      {"matvec_rows", {129, 257}, {257}, {{1, 0}}, {}, gemv},
      {"vecmat_columns", {257}, {257, 129}, {{0, 0}}, {}, gemv},
      {"vecmat_rows", {1, 257}, {129, 257}, {{1, 1}}, {}, gemv},
      {"batched_gemv", {4, 1, 65}, {4, 65, 33}, {{2, 1}}, {{0, 0}}, gemv},
      {"dot_product", {129}, {129}, {{0, 0}}, {}, gemv},
  };
  return cases;
}

// Over 1 MFLOP: two threads split them.
const std::vector<Case>& bigCases() {
  static const std::vector<Case> cases = {
      {"split_n_m129_n130_k200", {129, 200}, {200, 130}, {{1, 0}}, {}, gemm},
      {"split_m_m300_n17_k129", {300, 129}, {17, 129}, {{1, 1}}, {}, gemm},
      {"split_batch", {4, 65, 33}, {4, 33, 129}, {{2, 1}}, {{0, 0}}, gemm},
      {"gemv_rows_split", {1031, 517}, {517}, {{1, 0}}, {}, gemv},
      {"gemv_columns_split", {517}, {517, 1031}, {{0, 0}}, {}, gemv},
  };
  return cases;
}

enum class Mode { f32, f16, bf16, bf16Weights };  // bf16Weights: f32 x convert(bf16 -> f32)

const char* modeName(Mode m) {
  switch (m) {
    case Mode::f32: return "f32";
    case Mode::f16: return "f16";
    case Mode::bf16: return "bf16";
    case Mode::bf16Weights: return "bf16_weights";
  }
  return "?";
}

Tensor randomTensor(const radix::Platform& cpu, const Dims& dims, DType dtype, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return Tensor::fromValues(cpu, Shape(dims, dtype), v);
}

// dotGeneral in double: result dims are batch, lhs free, rhs free (as the op defines them).
std::vector<double> reference(const Case& c, const std::vector<double>& a, const std::vector<double>& b) {
  const int ra = static_cast<int>(c.a.size()), rb = static_cast<int>(c.b.size());
  std::vector<int> roleA(ra, -1), roleB(rb, -1);  // -1 free, else index into batch/contract lists
  std::vector<int> freeA, freeB;
  for (size_t i = 0; i < c.batching.size(); ++i) roleA[c.batching[i].first] = roleB[c.batching[i].second] = 100 + static_cast<int>(i);
  for (size_t i = 0; i < c.contracting.size(); ++i) roleA[c.contracting[i].first] = roleB[c.contracting[i].second] = 200 + static_cast<int>(i);
  for (int i = 0; i < ra; ++i)
    if (roleA[i] < 0) freeA.push_back(i);
  for (int j = 0; j < rb; ++j)
    if (roleB[j] < 0) freeB.push_back(j);
  Dims outDims, kDims;
  for (auto& p : c.batching) outDims.push_back(c.a[p.first]);
  for (int i : freeA) outDims.push_back(c.a[i]);
  for (int j : freeB) outDims.push_back(c.b[j]);
  for (auto& p : c.contracting) kDims.push_back(c.a[p.first]);
  auto count = [](const Dims& d) {
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    return n;
  };
  auto offset = [](const Dims& dims, const Dims& idx) {
    int64_t o = 0;
    for (size_t i = 0; i < dims.size(); ++i) o = o * dims[i] + idx[i];
    return o;
  };
  std::vector<double> out(static_cast<size_t>(count(outDims)));
  Dims oi(outDims.size(), 0), ki(kDims.size(), 0), ia(ra), ib(rb);
  for (int64_t o = 0; o < count(outDims); ++o) {
    int64_t rest = o;
    for (size_t d = outDims.size(); d-- > 0;) oi[d] = rest % outDims[d], rest /= outDims[d];
    double sum = 0;
    for (int64_t k = 0; k < count(kDims); ++k) {
      rest = k;
      for (size_t d = kDims.size(); d-- > 0;) ki[d] = rest % kDims[d], rest /= kDims[d];
      size_t slot = 0;
      for (size_t i = 0; i < c.batching.size(); ++i, ++slot) ia[c.batching[i].first] = ib[c.batching[i].second] = oi[slot];
      for (int i : freeA) ia[i] = oi[slot++];
      for (int j : freeB) ib[j] = oi[slot++];
      for (size_t i = 0; i < c.contracting.size(); ++i) ia[c.contracting[i].first] = ib[c.contracting[i].second] = ki[i];
      sum += a[static_cast<size_t>(offset(c.a, ia))] * b[static_cast<size_t>(offset(c.b, ib))];
    }
    out[static_cast<size_t>(o)] = sum;
  }
  return out;
}

uint64_t calls(kernels::Path path, kernels::Isa isa) { return kernels::callCount(path, isa); }

// Compiles and runs one case; checks the numbers and that the kernel of `isa` ran.
void check(const Case& c, Mode mode, int threads, const std::string& targetCpu, kernels::Isa isa) {
  SCOPED_TRACE(std::string(c.name) + " " + modeName(mode) + " threads " + std::to_string(threads) + " target " +
               (targetCpu.empty() ? "host" : targetCpu));
  radix::CompileOptions options;
  options.threads = threads;
  options.targetCpu = targetCpu;
  options.cache = false;
  const radix::Platform cpu = radix::Platform::cpu().withOptions(options);
  const DType da = mode == Mode::f16 ? DType::f16 : mode == Mode::bf16 ? DType::bf16 : DType::f32;
  const DType db = mode == Mode::bf16Weights ? DType::bf16 : da;
  Tensor a = randomTensor(cpu, c.a, da, 1), b = randomTensor(cpu, c.b, db, 2);
  std::vector<radix::AxisPair> contracting, batching;
  for (auto& p : c.contracting) contracting.emplace_back(p.first, p.second);
  for (auto& p : c.batching) batching.emplace_back(p.first, p.second);
  auto fn = [contracting, batching](Tensor x, Tensor w) {
    return x.dotGeneral(w.dtype() == x.dtype() ? w : w.convert(x.dtype()), contracting, batching);
  };
  const uint64_t before = c.path ? calls(*c.path, isa) : 0;
  Tensor y = radix::compile(cpu, fn, a, b)(a, b);
  if (c.path)
    EXPECT_GT(calls(*c.path, isa), before) << "the " << (*c.path == gemm ? "GEMM" : "GEMV") << " kernel for ISA "
                                           << kernels::isaName(isa) << " did not run";
  const std::vector<double> expected = reference(c, a.toVector<double>(), b.toVector<double>());
  const std::vector<double> actual = y.toVector<double>();
  ASSERT_EQ(actual.size(), expected.size());
  int64_t k = 1;
  for (auto& p : c.contracting) k *= c.a[p.first];
  // f32 accumulation error grows with k; the result is rounded to its dtype.
  const double rounding = da == DType::bf16 ? 1.0 / 256 : da == DType::f16 ? 1.0 / 2048 : 0;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double tol = 1e-6 * static_cast<double>(k) + 1e-6 + rounding * std::fabs(expected[i]);
    if (std::fabs(actual[i] - expected[i]) > tol && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": " << actual[i] << " vs " << expected[i] << " (tol " << tol << ")";
  }
}

struct Target {
  const char* cpu;  // "" is the host
  kernels::Isa isa;
};

std::vector<Target> targets() {
  const kernels::Isa host = kernels::hostIsa();
  std::vector<Target> out = {{"", host}};
  if (host >= kernels::Isa::amx) out.push_back({"cooperlake", kernels::Isa::avx512bf16});
  if (host >= kernels::Isa::avx512bf16) out.push_back({"skylake-avx512", kernels::Isa::avx512});
  if (host >= kernels::Isa::avx2) out.push_back({"x86-64-v3", kernels::Isa::avx2});
  if (host > kernels::Isa::x86_64) out.push_back({"x86-64", kernels::Isa::x86_64});
  return out;
}

TEST(KernelsGemm, SmallCasesEveryTargetAndDtype) {
  for (const Target& t : targets())
    for (Mode mode : {Mode::f32, Mode::bf16, Mode::f16, Mode::bf16Weights})
      for (const Case& c : smallCases()) check(c, mode, 1, t.cpu, t.isa);
}

TEST(KernelsGemm, TwoThreadsSplitEveryTarget) {
  for (const Target& t : targets())
    for (Mode mode : {Mode::f32, Mode::bf16})
      for (const Case& c : bigCases()) check(c, mode, 2, t.cpu, t.isa);
  for (const Case& c : bigCases()) check(c, Mode::bf16Weights, 2, "", kernels::hostIsa());
}

// f32 B with contiguous columns is packed either inside the product or before it, by CPU
// (kernels::packAlongPays): both ways on every target, whichever this host takes.
TEST(KernelsGemm, F32BPackedAlongAndBefore) {
  for (int along : {1, 0}) {
    SCOPED_TRACE(along ? "packed along the product" : "packed before the product");
    kernels::forcePackAlong(along);
    for (const Target& t : targets()) {
      for (const Case& c : smallCases()) check(c, Mode::f32, 1, t.cpu, t.isa);
      for (const Case& c : bigCases()) check(c, Mode::f32, 2, t.cpu, t.isa);
    }
  }
  kernels::forcePackAlong(-1);
}

// Integer contractions keep the generic loops: no kernel call, exact result.
TEST(KernelsGemm, IntegersKeepTheGenericPath) {
  const radix::Platform cpu = radix::Platform::cpu().withOptions({.cache = false});
  Tensor a = Tensor::fromValues(cpu, Shape({2, 3}, DType::i32), std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::fromValues(cpu, Shape({3, 2}, DType::i32), std::vector<int32_t>{1, 0, 0, 1, 1, 1});
  uint64_t before = 0;
  for (int p = 0; p < kernels::kPathCount; ++p)
    for (int i = 0; i < kernels::kIsaCount; ++i) before += calls(kernels::Path(p), kernels::Isa(i));
  Tensor y = radix::compile(cpu, [](Tensor x, Tensor w) { return x.dotGeneral(w, {{1, 0}}, {}); }, a, b)(a, b);
  uint64_t after = 0;
  for (int p = 0; p < kernels::kPathCount; ++p)
    for (int i = 0; i < kernels::kIsaCount; ++i) after += calls(kernels::Path(p), kernels::Isa(i));
  EXPECT_EQ(after, before);
  EXPECT_EQ(y.toVector<int32_t>(), (std::vector<int32_t>{4, 5, 10, 11}));
}

// A platform that dumps the IR after convert-func-to-llvm into `dir`, and that IR.
radix::Platform dumpingToLlvm(const std::string& dir) {
  return radix::Platform::cpu().withOptions(radix::iotest::passDumpOptions(dir, "convert-func-to-llvm"));
}
std::string llvmDialectText(const std::string& dir) {
  std::string text;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.path().string().find("convert-func-to-llvm") != std::string::npos) {
      std::ifstream in(entry.path());
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  return text;
}

// The compiled module calls the kernel symbol (what a cached object resolves from the process).
TEST(KernelsGemm, LoweredModuleCallsTheKernel) {
  const std::string dir = ::testing::TempDir() + "radix_kernels_gemm_dump";
  const radix::Platform cpu = dumpingToLlvm(dir);
  Tensor a = randomTensor(cpu, {5, 7}, DType::f32, 3), b = randomTensor(cpu, {7, 3}, DType::f32, 4);
  radix::compile(cpu, [](Tensor x, Tensor w) { return x.dotGeneral(w, {{1, 0}}, {}); }, a, b);
  const std::string text = llvmDialectText(dir);
  EXPECT_NE(text.find("llvm.call @radix_kernel_contract"), std::string::npos) << text;
  EXPECT_EQ(text.find("llvm.fmul"), std::string::npos) << "a contraction loop was left: " << text;
  std::filesystem::remove_all(dir);
}

// Two contractions of one shape reading an elementwise result: neither copies its operand or a
// shared zero init (each has a memset of its own), and compiled code allocates through
// runtime/alloc.cpp; the numbers are right.
TEST(KernelsGemm, NoCopiesAroundContractions) {
  const std::string dir = ::testing::TempDir() + "radix_kernels_gemm_copies";
  const radix::Platform cpu = dumpingToLlvm(dir);
  Tensor x = randomTensor(cpu, {300, 64}, DType::f32, 7), w1 = randomTensor(cpu, {64, 80}, DType::f32, 8),
         w2 = randomTensor(cpu, {64, 80}, DType::f32, 9);
  auto fn = [](Tensor a, Tensor b, Tensor c) {
    Tensor h = a.mulConstant(2.0);
    return h.dotGeneral(b, {{1, 0}}, {}).mul(h.dotGeneral(c, {{1, 0}}, {}));
  };
  Tensor y = radix::compile(cpu, fn, x, w1, w2)(x, w1, w2);
  const std::string text = llvmDialectText(dir);
  size_t zeros = 0;
  for (size_t at = text.find("llvm.call @radix_kernel_zero"); at != std::string::npos;
       at = text.find("llvm.call @radix_kernel_zero", at + 1))
    ++zeros;
  EXPECT_EQ(zeros, 2u) << text;
  EXPECT_EQ(text.find("memcpy"), std::string::npos) << "a copy is left: " << text;
  EXPECT_EQ(text.find("memrefCopy"), std::string::npos) << "a copy is left: " << text;
  EXPECT_EQ(text.find("llvm.call @malloc"), std::string::npos) << text;
  EXPECT_NE(text.find("_mlir_memref_to_llvm_"), std::string::npos) << text;
  const auto xv = x.toVector<double>(), av = w1.toVector<double>(), bv = w2.toVector<double>(),
             yv = y.toVector<double>();
  ASSERT_EQ(yv.size(), 300u * 80u);
  for (int i = 0; i < 300; i += 7)
    for (int j = 0; j < 80; ++j) {
      double r1 = 0, r2 = 0;
      for (int k = 0; k < 64; ++k) r1 += 2 * xv[i * 64 + k] * av[k * 80 + j], r2 += 2 * xv[i * 64 + k] * bv[k * 80 + j];
      EXPECT_NEAR(yv[i * 80 + j], r1 * r2, 1e-3 * (1 + std::fabs(r1 * r2))) << i << "," << j;
    }
  std::filesystem::remove_all(dir);
}

// radix_kernel_zero: exactly the bytes asked for, at an offset, on one thread and split.
TEST(KernelsGemm, ZeroKernel) {
  for (const int64_t bytes : {int64_t(1), int64_t(4093), int64_t(5) << 20})
    for (const int64_t threads : {1, 2}) {
      std::vector<uint8_t> buf(static_cast<size_t>(bytes + 64), 0xab);
      radix_kernel_zero(reinterpret_cast<int64_t>(buf.data()), 32, bytes, threads);
      for (size_t i = 0; i < buf.size(); ++i) {
        const bool inside = i >= 32 && static_cast<int64_t>(i) < 32 + bytes;
        ASSERT_EQ(buf[i], inside ? 0 : 0xab) << "byte " << i << " of " << bytes << " on " << threads;
      }
    }
}

}  // namespace

namespace {

uint64_t totalCalls() {
  uint64_t n = 0;
  for (int p = 0; p < kernels::kPathCount; ++p)
    for (int i = 0; i < kernels::kIsaCount; ++i) n += kernels::callCount(kernels::Path(p), kernels::Isa(i));
  return n;
}

// Operands that are slices (static or at run-time offsets) of bigger tensors.
TEST(KernelsGemm, SlicedOperands) {
  const radix::Platform cpu = radix::Platform::cpu().withOptions({.cache = false});
  Tensor a = randomTensor(cpu, {9, 33}, DType::f32, 5), b = randomTensor(cpu, {33, 20}, DType::f32, 6);
  Tensor pos = Tensor::fromValues(cpu, Shape({}, DType::i32), std::vector<int32_t>{3});
  auto fn = [](Tensor x, Tensor w, Tensor p) {
    Tensor xs = x.dynamicSlice({{0, {.start = p, .len = 4}}});       // rows 3..6
    Tensor ws = w.slice({{1, {.start = 2, .end = 19, .step = 1}}});  // columns 2..18
    return xs.dotGeneral(ws, {{1, 0}}, {});
  };
  const uint64_t before = totalCalls();
  Tensor y = radix::compile(cpu, fn, a, b, pos)(a, b, pos);
  EXPECT_GT(totalCalls(), before);
  const auto av = a.toVector<double>(), bv = b.toVector<double>(), yv = y.toVector<double>();
  ASSERT_EQ(yv.size(), 4u * 17u);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 17; ++j) {
      double r = 0;
      for (int k = 0; k < 33; ++k) r += av[(3 + i) * 33 + k] * bv[k * 20 + 2 + j];
      EXPECT_NEAR(yv[i * 17 + j], r, 1e-4) << i << "," << j;
    }
}

// An object loaded from the on-disk cache resolves the kernel symbol from the process too.
TEST(KernelsGemm, CachedObjectCallsTheKernel) {
  const std::string dir = ::testing::TempDir() + "radix_kernels_gemm_cache";
  std::filesystem::remove_all(dir);
  radix::CompileOptions options;
  options.cache = true;
  options.cacheDir = dir;
  const radix::Platform cpu = radix::Platform::cpu().withOptions(options);
  Tensor a = randomTensor(cpu, {17, 129}, DType::bf16, 7), b = randomTensor(cpu, {129, 33}, DType::bf16, 8);
  auto fn = [](Tensor x, Tensor w) { return x.dotGeneral(w, {{1, 0}}, {}); };
  auto cold = radix::compile(cpu, fn, a, b);
  auto warm = radix::compile(cpu, fn, a, b);
  EXPECT_FALSE(cold.fromCache());
  EXPECT_TRUE(warm.fromCache());
  const uint64_t before = totalCalls();
  const auto yc = cold(a, b).toVector<float>(), yw = warm(a, b).toVector<float>();
  EXPECT_EQ(totalCalls(), before + 2);
  EXPECT_EQ(yc, yw);
  std::filesystem::remove_all(dir);
}

}  // namespace

extern "C" {
void* _mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size);
void _mlir_memref_to_llvm_free(void* block);
}

namespace {

// Compiled code's small temporaries are kept per thread by size: the same size gets the freed
// block back, other sizes do not, and blocks stay 64-byte aligned.
TEST(KernelsAlloc, SmallBlocksAreReusedBySize) {
  void* a = _mlir_memref_to_llvm_aligned_alloc(64, 1600);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, 1600);
  _mlir_memref_to_llvm_free(a);
  void* taker = std::malloc(1600);  // would take a's chunk back from malloc's free lists
  void* b = _mlir_memref_to_llvm_aligned_alloc(64, 1600);
  EXPECT_EQ(b, a);
  EXPECT_NE(taker, a);
  std::free(taker);
  void* c = _mlir_memref_to_llvm_aligned_alloc(16, 1601);  // rounded to 1664: another class
  EXPECT_NE(c, a);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u);
  std::memset(c, 2, 1601);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
  // A freed block serves only the thread that freed it.
  std::thread([&] {
    void* other = _mlir_memref_to_llvm_aligned_alloc(64, 1600);
    EXPECT_NE(other, a);
    _mlir_memref_to_llvm_free(other);
  }).join();
  // Over-aligned requests bypass the kept blocks.
  void* wide = _mlir_memref_to_llvm_aligned_alloc(4096, 1600);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(wide) % 4096, 0u);
  _mlir_memref_to_llvm_free(wide);
  EXPECT_EQ(_mlir_memref_to_llvm_aligned_alloc(64, 1600), a);
  _mlir_memref_to_llvm_free(a);
}

// A thread keeps at most 4 MiB of freed small blocks: of 16 blocks of each of 16 sizes from 40
// to 55 KiB (11.8 MiB), the first ones freed are kept up to the bound, and come back.
TEST(KernelsAlloc, SmallBlocksKeptPerThreadAreBounded) {
  std::thread([] {
    EXPECT_EQ(radix::detail::smallBlocksKept(), 0u);
    std::vector<void*> blocks;
    for (int c = 0; c < 16; ++c)
      for (int i = 0; i < 16; ++i) blocks.push_back(_mlir_memref_to_llvm_aligned_alloc(64, (40 + c) * 1024));
    for (void* b : blocks) _mlir_memref_to_llvm_free(b);
    const size_t kept = radix::detail::smallBlocksKept();
    EXPECT_GT(kept, size_t(3) << 20);
    EXPECT_LE(kept, size_t(4) << 20);
    void* again = _mlir_memref_to_llvm_aligned_alloc(64, 40 * 1024);
    EXPECT_EQ(radix::detail::smallBlocksKept(), kept - 40 * 1024);
    _mlir_memref_to_llvm_free(again);
    EXPECT_EQ(radix::detail::smallBlocksKept(), kept);
  }).join();
}

}  // namespace
