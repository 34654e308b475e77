// 8-bit contractions (i8/u8 operands in any mix, C in i32) on every path, exact against a naive
// reference: the ISA kernels of bytes_impl.h, the int8 tile driver on emulated tiles (any CPU) and
// on the tiles themselves (AMX-INT8 hosts), radix_kernel_contract's routing, and the compiler's
// dotGeneral(..., DType::i32) with the target override choosing the path.
#include <gtest/gtest.h>
#include <radix/radix.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/kernels.h"
#include "compiler/kernels/packed.h"

namespace {

namespace kernels = radix::kernels;
using kernels::Elem;
using kernels::Isa;
using radix::DType;
using radix::Shape;
using radix::Tensor;

struct BytesCase {
  const char* name;
  Elem a, b;
  int64_t batch, m, n, k;
  bool aT, bT;      // A stored {k, m}; B stored {n, k} (nn::Linear's weights)
  int64_t cPad;     // C's row stride is n + cPad
  bool accumulate;  // C starts non-zero
};

const std::vector<BytesCase>& cases() {
  static const std::vector<BytesCase> all = {
      {"u8s8_64x64x64", Elem::u8, Elem::i8, 1, 64, 64, 64, false, false, 0, false},
      {"s8s8_odd_7x17x129", Elem::i8, Elem::i8, 1, 7, 17, 129, false, false, 0, true},
      {"u8u8_edges_33x65x63_bT", Elem::u8, Elem::u8, 1, 33, 65, 63, false, true, 0, true},
      {"s8u8_k_over_a_block_40x40x2100", Elem::i8, Elem::u8, 1, 40, 40, 2100, false, false, 3, false},
      {"u8s8_batch3_aT_bT_70x100x200", Elem::u8, Elem::i8, 3, 70, 100, 200, true, true, 0, true},
      {"s8s8_gemv_1x300x129", Elem::i8, Elem::i8, 1, 1, 300, 129, false, true, 0, false},
      {"u8s8_column_5x1x77", Elem::u8, Elem::i8, 1, 5, 1, 77, false, false, 0, true},
  };
  return all;
}

struct BytesData {
  std::vector<uint8_t> a, b;
  std::vector<int32_t> c, want;
  kernels::Problem p;
};

// Random bytes, a quarter of them at the extremes (0, 255 / -128, 127).
BytesData make(const BytesCase& t, unsigned seed) {
  std::mt19937 rng(seed);
  BytesData d;
  auto fill = [&](std::vector<uint8_t>& v, int64_t n) {
    v.resize(static_cast<size_t>(n));
    constexpr uint8_t extremes[4] = {0x00, 0x7f, 0x80, 0xff};  // as u8 and as i8
    for (auto& x : v) {
      const unsigned r = rng();
      x = (r & 3) == 0 ? extremes[(r >> 2) & 3] : static_cast<uint8_t>(r >> 8);
    }
  };
  fill(d.a, t.batch * t.m * t.k);
  fill(d.b, t.batch * t.k * t.n);
  const int64_t ldc = t.n + t.cPad;
  d.c.resize(static_cast<size_t>(t.batch * t.m * ldc));
  for (auto& x : d.c) x = t.accumulate ? static_cast<int32_t>(rng() % 20001) - 10000 : 0;
  kernels::Problem& p = d.p;
  p.a = d.a.data(), p.b = d.b.data(), p.c = reinterpret_cast<float*>(d.c.data());
  p.aType = t.a, p.bType = t.b;
  p.batch = t.batch, p.m = t.m, p.n = t.n, p.k = t.k;
  p.sab = t.m * t.k, p.sam = t.aT ? 1 : t.k, p.sak = t.aT ? t.m : 1;
  p.sbb = t.k * t.n, p.sbk = t.bT ? 1 : t.n, p.sbn = t.bT ? t.k : 1;
  p.scb = t.m * ldc, p.scm = ldc, p.scn = 1;
  auto value = [](Elem e, uint8_t x) { return e == Elem::i8 ? int64_t(int8_t(x)) : int64_t(x); };
  d.want = d.c;
  for (int64_t bi = 0; bi < t.batch; ++bi)
    for (int64_t i = 0; i < t.m; ++i)
      for (int64_t j = 0; j < t.n; ++j) {
        int64_t s = d.c[bi * p.scb + i * ldc + j];
        for (int64_t q = 0; q < t.k; ++q)
          s += value(t.a, d.a[bi * p.sab + i * p.sam + q * p.sak]) *
               value(t.b, d.b[bi * p.sbb + q * p.sbk + j * p.sbn]);
        d.want[bi * p.scb + i * ldc + j] = static_cast<int32_t>(s);
      }
  return d;
}

void expectEveryCase(const std::function<void(const kernels::Problem&)>& run) {
  for (const BytesCase& t : cases()) {
    SCOPED_TRACE(t.name);
    BytesData d = make(t, 23);
    run(d.p);
    EXPECT_EQ(d.c, d.want);
  }
}

TEST(KernelsBytes, BaselineKernelIsExact) {
  for (int threads : {1, 2}) expectEveryCase([&](const kernels::Problem& p) { kernels::bytesGemmX86_64(p, threads); });
}

TEST(KernelsBytes, Avx2KernelIsExact) {
  if (kernels::hostIsa() < Isa::avx2) GTEST_SKIP() << "host lacks avx2";
  for (int threads : {1, 2}) expectEveryCase([&](const kernels::Problem& p) { kernels::bytesGemmAvx2(p, threads); });
}

TEST(KernelsBytes, Avx512KernelIsExact) {
  if (kernels::hostIsa() < Isa::avx512) GTEST_SKIP() << "host lacks avx512 f/bw/vl/dq";
  for (int threads : {1, 2}) expectEveryCase([&](const kernels::Problem& p) { kernels::bytesGemmAvx512(p, threads); });
}

TEST(KernelsBytes, Avx512VnniKernelIsExactForEverySignMix) {
  if (kernels::hostIsa() < Isa::avx512 || !kernels::hostHasAvx512Vnni()) GTEST_SKIP() << "host lacks avx512_vnni";
  for (int threads : {1, 2}) expectEveryCase([&](const kernels::Problem& p) { kernels::bytesGemmVnni(p, threads); });
}

TEST(KernelsBytes, EmulatedInt8TilesAreExactForEverySignMix) {
  expectEveryCase([](const kernels::Problem& p) { kernels::amxEmulatedBytes(p); });
}

TEST(KernelsBytes, Int8TilesAreExactForEverySignMix) {
  if (!kernels::amxInt8Available()) GTEST_SKIP() << "host lacks amx-int8 (or the OS refused the AMX tile state)";
  for (int threads : {1, 2}) expectEveryCase([&](const kernels::Problem& p) { kernels::amxBytesRun(p, threads); });
}

// The entry compiled code calls, asking for every ISA the host runs: exact, counted on the ISA
// that ran (the tiles where they take the problem). With the overwrite flag, C's old contents
// (garbage here) must not count.
TEST(KernelsBytes, EntryRoutesEveryIsaAndHonoursOverwrite) {
  for (int isa = 0; isa <= static_cast<int>(kernels::hostIsa()); ++isa)
    for (bool overwrite : {false, true}) {
      SCOPED_TRACE(std::string(kernels::isaName(static_cast<Isa>(isa))) + (overwrite ? " overwrite" : ""));
      for (const BytesCase& t : cases()) {
        SCOPED_TRACE(t.name);
        BytesData d = make(t, 29);
        const kernels::Problem& p = d.p;
        const Isa want = kernels::bytesOnTiles(p, static_cast<Isa>(isa)) ? Isa::amx
                         : isa >= static_cast<int>(Isa::avx512)          ? Isa::avx512
                                                                         : static_cast<Isa>(isa);
        const kernels::Path path = p.m == 1 || p.n == 1 ? kernels::Path::gemv : kernels::Path::gemm;
        const uint64_t before = kernels::callCount(path, want);
        int64_t types = static_cast<int64_t>(p.aType) | (static_cast<int64_t>(p.bType) << 8);
        std::vector<int32_t> expected = d.want;
        if (overwrite) {
          types |= kernels::kContractOverwrite;
          for (size_t i = 0; i < d.c.size(); ++i) {
            expected[i] -= d.c[i];  // A . B alone
            d.c[i] = 0x5a5a5a5a;
          }
        }
        radix_kernel_contract(reinterpret_cast<int64_t>(p.a), 0, reinterpret_cast<int64_t>(p.b), 0,
                              reinterpret_cast<int64_t>(p.c), 0, types, p.batch, p.m, p.n, p.k, p.sab, p.sam, p.sak,
                              p.sbb, p.sbk, p.sbn, p.scb, p.scm, p.scn, 2, isa);
        EXPECT_EQ(kernels::callCount(path, want), before + 1) << "expected on " << kernels::isaName(want);
        for (int64_t bi = 0; bi < p.batch; ++bi)
          for (int64_t i = 0; i < p.m; ++i)
            for (int64_t j = 0; j < p.n; ++j) {
              const int64_t at = bi * p.scb + i * p.scm + j;
              ASSERT_EQ(d.c[at], expected[at]) << bi << "," << i << "," << j;
            }
      }
    }
}

// Through the compiler: u8 x i8 -> i32 compiled for the host takes the int8 tiles where the host
// has them (no silent fallback), and the target override without AMX (or without AVX-512) runs
// the vector kernel it names; every result exact.
TEST(KernelsBytes, CompiledInt8GemmTakesThePathTheTargetNames) {
  const int64_t m = 96, k = 320, n = 160;
  std::mt19937 rng(7);
  std::vector<float> av(m * k), bv(k * n);
  for (auto& x : av) x = static_cast<float>(rng() % 256);
  for (auto& x : bv) x = static_cast<float>(static_cast<int>(rng() % 256) - 128);
  std::vector<int64_t> want(m * n, 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < n; ++j) want[i * n + j] += int64_t(av[i * k + q]) * int64_t(bv[q * n + j]);
  struct Row {
    const char* cpu;
    const char* features;
    Isa needs, runs;
  };
  const bool tiles = kernels::amxInt8Available();
  const Row rows[] = {
      {"", "", kernels::hostIsa(), tiles ? Isa::amx : std::min(kernels::hostIsa(), Isa::avx512)},
      {"sapphirerapids", "-amx-tile", Isa::avx512bf16, Isa::avx512},
      {"x86-64-v3", "", Isa::avx2, Isa::avx2},
      {"x86-64", "", Isa::x86_64, Isa::x86_64},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(r.cpu) + " " + r.features);
    if (kernels::hostIsa() < r.needs) continue;  // this host cannot run code for that target
    radix::CompileOptions options;
    options.cache = false;
    options.targetCpu = r.cpu;
    options.targetFeatures = r.features;
    const radix::Platform cpu = radix::Platform::cpu().withOptions(options);
    Tensor a = Tensor::fromValues(cpu, Shape({m, k}, DType::u8), av);
    Tensor b = Tensor::fromValues(cpu, Shape({k, n}, DType::i8), bv);
    auto fn = [](Tensor x, Tensor w) { return x.dotGeneral(w, {{1, 0}}, {}, DType::i32); };
    auto exe = radix::compile(cpu, fn, a, b);
    const uint64_t hitsBefore = kernels::packedCacheStats().hits;
    for (int call = 0; call < 3; ++call) {  // the weight seen, packed whole, then read from the cache
      SCOPED_TRACE("call " + std::to_string(call));
      const uint64_t before = kernels::callCount(kernels::Path::gemm, r.runs);
      Tensor y = exe(a, b);
      EXPECT_GT(kernels::callCount(kernels::Path::gemm, r.runs), before) << "not on " << kernels::isaName(r.runs);
      EXPECT_EQ(y.shape(), Shape({m, n}, DType::i32));
      EXPECT_EQ(y.toVector<int64_t>(), want);
    }
    if (r.runs == Isa::amx || (r.runs == Isa::avx512 && kernels::hostHasAvx512Vnni()))
      EXPECT_GT(kernels::packedCacheStats().hits, hitsBefore) << "B never came from the packed-weight cache";
  }
}

}  // namespace
