// AMX (src/compiler/kernels/amx*.cpp): which ISA a compile target asks for and what the dispatch
// runs (AmxDispatch: on an AMX host a large bf16 GEMM must take the tiles; elsewhere the request
// must fall back with right results), the tile drivers on emulated tiles (AmxEmulated: blocking,
// packing, edges, in-place A, prepacked B, any host), and the real tiles (AmxNumerics: skipped
// where the CPU or the OS lacks them, naming the feature).
#include <gtest/gtest.h>
#include <radix/radix.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/kernels.h"
#include "compiler/kernels/lower.h"
#include "compiler/kernels/packed.h"
#include "io_testing.h"

namespace {

namespace kernels = radix::kernels;
using kernels::Isa;
using radix::DType;
using radix::Shape;
using radix::Tensor;

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
double fromBf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A bf16 GEMM problem with its own storage: A [m][k] (or [k][m] when aT), B [k][n] (or [n][k]
// when bT), C [m][n] (or [n][m] when cT), batch copies of each.
struct Bf16Case {
  const char* name;
  int64_t batch, m, n, k;
  bool aT, bT, cT;
};

struct Bf16Data {
  std::vector<uint16_t> a, b;
  std::vector<float> c;
  kernels::Problem p;
};

Bf16Data makeBf16(const Bf16Case& t, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Bf16Data d;
  d.a.resize(static_cast<size_t>(t.batch * t.m * t.k));
  d.b.resize(static_cast<size_t>(t.batch * t.k * t.n));
  d.c.resize(static_cast<size_t>(t.batch * t.m * t.n));
  for (auto& x : d.a) x = toBf16(u(rng));
  for (auto& x : d.b) x = toBf16(u(rng));
  for (auto& x : d.c) x = u(rng);  // the kernels accumulate: C += A . B
  kernels::Problem& p = d.p;
  p.a = d.a.data(), p.b = d.b.data(), p.c = d.c.data();
  p.aType = p.bType = kernels::Elem::bf16;
  p.batch = t.batch, p.m = t.m, p.n = t.n, p.k = t.k;
  p.sab = t.m * t.k, p.sam = t.aT ? 1 : t.k, p.sak = t.aT ? t.m : 1;
  p.sbb = t.k * t.n, p.sbk = t.bT ? 1 : t.n, p.sbn = t.bT ? t.k : 1;
  p.scb = t.m * t.n, p.scm = t.cT ? 1 : t.n, p.scn = t.cT ? t.m : 1;
  return d;
}

std::vector<double> referenceBf16(const Bf16Data& d) {
  const kernels::Problem& p = d.p;
  std::vector<double> out(d.c.begin(), d.c.end());
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double s = 0;
        for (int64_t k = 0; k < p.k; ++k)
          s += fromBf16(d.a[bi * p.sab + i * p.sam + k * p.sak]) * fromBf16(d.b[bi * p.sbb + k * p.sbk + j * p.sbn]);
        out[bi * p.scb + i * p.scm + j * p.scn] += s;
      }
  return out;
}

void expectNear(const std::vector<float>& got, const std::vector<double>& want, int64_t k) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 2e-6 * static_cast<double>(k) + 1e-5;
    if (std::fabs(got[i] - want[i]) > tol && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": " << got[i] << " vs " << want[i];
  }
}

// Odd shapes on purpose: M, N, K off the 16/32 tiles and the 64 int8 K step, over the 1024 KC
// and 256 MC blocks, transposed operands (packed A; column-major B), strided C (scratch tiles).
const std::vector<Bf16Case>& bf16Cases() {
  static const std::vector<Bf16Case> cases = {
      {"whole_tiles_64x64x64", 1, 64, 64, 64, false, false, false},
      {"odd_m7_n17_k129", 1, 7, 17, 129, false, false, false},
      {"edges_m33_n65_k31", 1, 33, 65, 31, false, false, false},
      {"k_over_kc_m40_n40_k1100", 1, 40, 40, 1100, false, false, false},
      {"m_over_mc_m300_n48_k64", 1, 300, 48, 64, false, false, false},
      {"b_transposed_m50_n70_k96", 1, 50, 70, 96, false, true, false},
      {"a_transposed_m35_n33_k40", 1, 35, 33, 40, true, false, false},
      {"c_transposed_m32_n32_k32", 1, 32, 32, 32, false, false, true},
      {"batched_3x_m20_n36_k70", 3, 20, 36, 70, false, false, false},
      // B = W^T runs W in place on the tiles' A side and writes C^T blocks back transposed.
      {"b_transposed_edges_m33_n65_k31", 1, 33, 65, 31, false, true, false},
      {"b_transposed_k_over_kc_m40_n70_k1100", 1, 40, 70, 1100, false, true, false},
      {"b_transposed_blocks_m600_n300_k200", 1, 600, 300, 200, false, true, false},
      {"b_and_c_transposed_m45_n37_k70", 1, 45, 37, 70, false, true, true},
      {"b_transposed_batched_2x_m17_n50_k64", 2, 17, 50, 64, false, true, false},
      // Row-major B in whole panels (packed KT rows at a time across panels) plus a tail panel.
      {"panels_and_tail_m20_n70_k96", 1, 20, 70, 96, false, false, false},
      {"panels_k_over_kc_m40_n64_k2048", 1, 40, 64, 2048, false, false, false},
  };
  return cases;
}

struct Int8Case {
  const char* name;
  int64_t m, n, k;
  bool packed, accumulate;
};

const std::vector<Int8Case>& int8Cases() {
  static const std::vector<Int8Case> cases = {
      {"whole_64x64x64", 64, 64, 64, false, false},
      {"odd_m7_n17_k129", 7, 17, 129, false, false},
      {"edges_m33_n65_k63", 33, 65, 63, false, true},
      {"k_over_kc_m40_n40_k2100", 40, 40, 2100, true, false},
      {"packed_accumulate_m70_n100_k200", 70, 100, 200, true, true},
  };
  return cases;
}

struct Int8Data {
  std::vector<uint8_t> a;
  std::vector<int8_t> b;
  std::vector<uint8_t> packed;
  std::vector<int32_t> c, want;
};

Int8Data makeInt8(const Int8Case& t, unsigned seed) {
  std::mt19937 rng(seed);
  Int8Data d;
  d.a.resize(static_cast<size_t>(t.m * t.k));
  d.b.resize(static_cast<size_t>(t.k * t.n));
  d.c.resize(static_cast<size_t>(t.m * t.n));
  for (auto& x : d.a) x = static_cast<uint8_t>(rng() & 0xff);
  for (auto& x : d.b) x = static_cast<int8_t>(static_cast<int>(rng() & 0xff) - 128);
  for (auto& x : d.c) x = static_cast<int32_t>(rng() % 2001) - 1000;
  d.want.assign(d.c.size(), 0);
  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t j = 0; j < t.n; ++j) {
      int64_t s = t.accumulate ? d.c[i * t.n + j] : 0;
      for (int64_t k = 0; k < t.k; ++k) s += int64_t(d.a[i * t.k + k]) * int64_t(d.b[k * t.n + j]);
      d.want[i * t.n + j] = static_cast<int32_t>(s);
    }
  if (t.packed) {
    d.packed.resize(kernels::amxInt8PackedBytes(t.k, t.n) + 64);
    kernels::amxInt8PackB(t.k, t.n, d.b.data(), t.n, d.packed.data());
  }
  return d;
}

// ---- AmxDispatch ----

kernels::KernelTarget target(const std::string& cpu, const std::string& features) {
  return {"x86_64-unknown-linux-gnu", cpu, features, 0};
}

TEST(AmxDispatch, TargetFeaturesChooseTheIsa) {
  // isaOf reads LLVM's target registry, which the first compile initializes.
  const radix::Platform cpu = radix::Platform::cpu().withOptions({.cache = false});
  Tensor x = Tensor::fromValues(cpu, Shape({2}, DType::f32), std::vector<float>{1, 2});
  radix::compile(cpu, [](Tensor v) { return v.addConstant(1.0); }, x);
  struct Row {
    const char* cpu;
    const char* features;
    Isa isa;
  };
  const Row rows[] = {
      {"sapphirerapids", "", Isa::amx},
      {"graniterapids", "", Isa::amx},
      {"sapphirerapids", "-amx-tile", Isa::avx512bf16},
      {"sapphirerapids", "-amx-bf16", Isa::avx512bf16},
      {"cooperlake", "", Isa::avx512bf16},
      {"cooperlake", "+amx-tile,+amx-bf16", Isa::amx},
      {"skylake-avx512", "+amx-tile,+amx-bf16", Isa::avx512},  // AMX stands on avx512bf16
      {"x86-64-v3", "+amx-tile,+amx-bf16", Isa::avx2},
      {"x86-64", "", Isa::x86_64},
  };
  for (const Row& r : rows)
    EXPECT_EQ(static_cast<int>(kernels::isaOf(target(r.cpu, r.features))), static_cast<int>(r.isa))
        << r.cpu << " " << r.features;
  EXPECT_STREQ(kernels::isaName(Isa::amx), "amx");
}

// The kernel call's last operand (the ISA) in the LLVM-dialect dump of a module compiled for `cpu`.
int64_t loweredIsa(const std::string& cpu, const std::string& features) {
  const std::string dir = ::testing::TempDir() + "radix_amx_dispatch_dump";
  std::filesystem::remove_all(dir);
  radix::CompileOptions options = radix::iotest::passDumpOptions(dir, "convert-func-to-llvm");
  options.targetCpu = cpu;
  options.targetFeatures = features;
  const radix::Platform cpuPlatform = radix::Platform::cpu().withOptions(options);
  Tensor a = Tensor::fromValues(cpuPlatform, Shape({64, 96}, DType::bf16), std::vector<float>(64 * 96, 1.0f));
  Tensor b = Tensor::fromValues(cpuPlatform, Shape({96, 80}, DType::bf16), std::vector<float>(96 * 80, 1.0f));
  radix::compile(cpuPlatform, [](Tensor x, Tensor w) { return x.dotGeneral(w, {{1, 0}}, {}); }, a, b);
  std::string text;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.path().string().find("convert-func-to-llvm") != std::string::npos) {
      std::ifstream in(entry.path());
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  std::filesystem::remove_all(dir);
  std::smatch call;
  if (!std::regex_search(text, call, std::regex(R"(llvm\.call @radix_kernel_contract\(([^)]*)\))"))) {
    ADD_FAILURE() << "no kernel call in\n" << text;
    return -1;
  }
  const std::string args = call[1].str();
  const std::string last = args.substr(args.find_last_of(',') + 1);
  const std::string name = std::regex_replace(last, std::regex(R"(\s)"), "");
  std::smatch def;
  if (!std::regex_search(text, def, std::regex(std::regex_replace(name, std::regex(R"(\W)"), R"(\$&)") +
                                               R"( = (?:llvm\.mlir|arith)\.constant\(?(\d+) : i64)"))) {
    ADD_FAILURE() << "the ISA operand " << name << " is not a constant";
    return -1;
  }
  return std::stoll(def[1].str());
}

TEST(AmxDispatch, TargetOverrideAsksForAmxInTheLoweredCall) {
  // Compiled only (never run): this host need not execute sapphirerapids code.
  EXPECT_EQ(loweredIsa("sapphirerapids", ""), static_cast<int64_t>(Isa::amx));
  EXPECT_EQ(loweredIsa("sapphirerapids", "-amx-tile"), static_cast<int64_t>(Isa::avx512bf16));
}

// A cached object compiled for AMX, run on this CPU: the request is counted as amx and the
// dispatch runs the best ISA the host has (amx itself where it has the tiles).
TEST(AmxDispatch, AmxRequestRunsTheHostIsaWithRightResults) {
  const Bf16Case t{"m64_n80_k96", 1, 64, 80, 96, false, false, false};
  Bf16Data d = makeBf16(t, 11);
  const std::vector<double> want = referenceBf16(d);
  const Isa run = std::min(Isa::amx, kernels::hostIsa());
  const uint64_t asked = kernels::requestCount(Isa::amx), ran = kernels::callCount(kernels::Path::gemm, run);
  const kernels::Problem& p = d.p;
  radix_kernel_contract(reinterpret_cast<int64_t>(p.a), 0, reinterpret_cast<int64_t>(p.b), 0,
                        reinterpret_cast<int64_t>(p.c), 0, int64_t(2) | (int64_t(2) << 8), p.batch, p.m, p.n, p.k,
                        p.sab, p.sam, p.sak, p.sbb, p.sbk, p.sbn, p.scb, p.scm, p.scn, 1,
                        static_cast<int64_t>(Isa::amx));
  EXPECT_EQ(kernels::requestCount(Isa::amx), asked + 1);
  EXPECT_EQ(kernels::callCount(kernels::Path::gemm, run), ran + 1) << "ran on " << kernels::isaName(run);
  expectNear(d.c, want, t.k);
}

// The scripts/test guard: where the host has AMX, a large bf16 GEMM compiled for the host must
// run on the tiles (no silent fallback); elsewhere the host path runs and the CPU must really
// lack them (or the OS refused them).
TEST(AmxDispatch, LargeBf16GemmTakesTheTilesWhereTheHostHasThem) {
  const radix::Platform cpu = radix::Platform::cpu().withOptions({.cache = false});
  const int64_t m = 256, k = 320, n = 288;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> av(m * k), bv(k * n);
  for (auto& x : av) x = u(rng);
  for (auto& x : bv) x = u(rng);
  Tensor a = Tensor::fromValues(cpu, Shape({m, k}, DType::bf16), av);
  Tensor b = Tensor::fromValues(cpu, Shape({k, n}, DType::bf16), bv);
  auto fn = [](Tensor x, Tensor w) { return x.dotGeneral(w, {{1, 0}}, {}); };
  const Isa host = kernels::hostIsa();
  const uint64_t before = kernels::callCount(kernels::Path::gemm, host);
  const uint64_t amxBefore = kernels::callCount(kernels::Path::gemm, Isa::amx);
  Tensor y = radix::compile(cpu, fn, a, b)(a, b);
  EXPECT_GT(kernels::callCount(kernels::Path::gemm, host), before) << "the " << kernels::isaName(host)
                                                                   << " GEMM did not run";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") &&
      __builtin_cpu_supports("avx512bf16")) {
    EXPECT_TRUE(kernels::amxTilesPermitted()) << "the CPU has AMX but Linux refused the tile state";
    EXPECT_EQ(host, Isa::amx);
    EXPECT_GT(kernels::callCount(kernels::Path::gemm, Isa::amx), amxBefore) << "AMX host, AMX GEMM not selected";
  } else {
    EXPECT_NE(host, Isa::amx);
    EXPECT_FALSE(kernels::amxBf16Available());
  }
  const auto got = y.toVector<double>(), ar = a.toVector<double>(), br = b.toVector<double>();
  for (int64_t i = 0; i < m; i += 37)
    for (int64_t j = 0; j < n; j += 29) {
      double s = 0;
      for (int64_t kk = 0; kk < k; ++kk) s += ar[i * k + kk] * br[kk * n + j];
      EXPECT_NEAR(got[i * n + j], s, 1e-3 + std::fabs(s) / 128) << i << "," << j;  // bf16 result
    }
}

// radix::hostVectorFeatures (printed by `radix targets` and the benches) names exactly the
// features the CPU reports, whatever name LLVM gives the CPU.
TEST(AmxDispatch, HostVectorFeaturesNameWhatTheCpuHas) {
  const std::vector<std::string> features = radix::hostVectorFeatures();
  auto has = [&](const std::string& f) { return std::find(features.begin(), features.end(), f) != features.end(); };
  __builtin_cpu_init();
  EXPECT_EQ(has("avx2"), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(has("avx512f"), __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(has("avx512bf16"), __builtin_cpu_supports("avx512bf16") != 0);
  EXPECT_EQ(has("amx-tile"), __builtin_cpu_supports("amx-tile") != 0);
  EXPECT_EQ(has("amx-bf16"), __builtin_cpu_supports("amx-bf16") != 0);
  EXPECT_EQ(has("amx-int8"), __builtin_cpu_supports("amx-int8") != 0);
}

TEST(AmxDispatch, Int8EntryRefusesWithoutTheTiles) {
  const Int8Case t{"m16_n16_k64", 16, 16, 64, false, false};
  Int8Data d = makeInt8(t, 3);
  const std::vector<int32_t> before = d.c;
  const bool ran = kernels::amxInt8Gemm(t.m, t.n, t.k, d.a.data(), t.k, d.b.data(), t.n, d.c.data(), t.n);
  EXPECT_EQ(ran, kernels::amxInt8Available());
  EXPECT_EQ(d.c, ran ? d.want : before);
  // Bad arguments are refused, C untouched.
  EXPECT_FALSE(kernels::amxInt8Gemm(t.m, t.n, t.k, d.a.data(), t.k - 1, d.b.data(), t.n, d.c.data(), t.n));
  EXPECT_FALSE(kernels::amxInt8Gemm(0, t.n, t.k, d.a.data(), t.k, d.b.data(), t.n, d.c.data(), t.n));
}

// ---- AmxEmulated ----

TEST(AmxEmulated, Bf16DriverMatchesTheReference) {
  for (const Bf16Case& t : bf16Cases()) {
    SCOPED_TRACE(t.name);
    Bf16Data d = makeBf16(t, 7);
    const std::vector<double> want = referenceBf16(d);
    kernels::amxEmulatedBf16Gemm(d.p);
    expectNear(d.c, want, t.k);
  }
}

// C = A . B (the zero fill dropped, kContractOverwrite): C's old values, NaN here, are never
// read, at edges and in the swapped (C^T) blocks too.
void expectOverwrites(const std::function<void(const kernels::Problem&)>& run) {
  for (const Bf16Case& t : bf16Cases()) {
    SCOPED_TRACE(t.name);
    Bf16Data d = makeBf16(t, 23);
    std::fill(d.c.begin(), d.c.end(), 0.0f);
    const std::vector<double> want = referenceBf16(d);
    std::fill(d.c.begin(), d.c.end(), std::numeric_limits<float>::quiet_NaN());
    d.p.overwrite = true;
    run(d.p);
    expectNear(d.c, want, t.k);
  }
}

TEST(AmxEmulated, Bf16OverwriteNeverReadsC) {
  expectOverwrites([](const kernels::Problem& p) { kernels::amxEmulatedBf16Gemm(p); });
}

// B from the packed-weight cache (a pinned buffer): packed whole once, then reused.
TEST(AmxEmulated, Bf16PrepackedBIsPackedOnceAndReused) {
  for (const Bf16Case& t : bf16Cases()) {
    if (t.batch != 1) continue;
    SCOPED_TRACE(t.name);
    Bf16Data d = makeBf16(t, 9);
    const std::vector<float> c0 = d.c;
    const std::vector<double> want = referenceBf16(d);
    const uint64_t generation = (uint64_t(1) << 62) + static_cast<uint64_t>(t.m * 100000 + t.n * 100 + t.k);
    kernels::pinBuffer(d.b.data(), d.b.size() * 2, generation);
    d.p.bBase = d.b.data();
    const auto s0 = kernels::packedCacheStats();
    for (int call = 0; call < 3; ++call) {  // per block (B seen once), packed whole, reused
      d.c = c0;
      d.p.c = d.c.data();
      kernels::amxEmulatedBf16Gemm(d.p);
      expectNear(d.c, want, t.k);
    }
    const auto s1 = kernels::packedCacheStats();
    // B = W^T (k contiguous) runs W in place as the tiles' A operand: nothing is packed or cached.
    const bool inPlace = t.bT && !t.aT;
    EXPECT_EQ(s1.packs, s0.packs + (inPlace ? 0 : 1));
    EXPECT_EQ(s1.hits, s0.hits + (inPlace ? 0 : 1));
    kernels::unpinBuffer(d.b.data());
    kernels::forgetGeneration(generation);
  }
}

TEST(AmxEmulated, Int8DriverIsExact) {
  for (const Int8Case& t : int8Cases()) {
    SCOPED_TRACE(t.name);
    Int8Data d = makeInt8(t, 13);
    kernels::amxEmulatedInt8Gemm(t.m, t.n, t.k, d.a.data(), t.k, t.packed ? nullptr : d.b.data(), t.n,
                                 t.packed ? d.packed.data() : nullptr, d.c.data(), t.n, t.accumulate);
    EXPECT_EQ(d.c, d.want);
  }
}

// ---- AmxNumerics (the tiles themselves) ----

TEST(AmxNumerics, Bf16TilesMatchTheReference) {
  if (!kernels::amxBf16Available()) GTEST_SKIP() << "host lacks amx-bf16 (or the OS refused the AMX tile state)";
  for (int threads : {1, 2})
    for (const Bf16Case& t : bf16Cases()) {
      SCOPED_TRACE(std::string(t.name) + " threads " + std::to_string(threads));
      Bf16Data d = makeBf16(t, 17);
      const std::vector<double> want = referenceBf16(d);
      EXPECT_EQ(kernels::runAmx(d.p, threads), kernels::Path::gemm);
      expectNear(d.c, want, t.k);
    }
}

TEST(AmxNumerics, Bf16OverwriteNeverReadsC) {
  if (!kernels::amxBf16Available()) GTEST_SKIP() << "host lacks amx-bf16 (or the OS refused the AMX tile state)";
  expectOverwrites([](const kernels::Problem& p) { kernels::runAmx(p, 2); });
}

// Every ISA the host runs: the overwrite flag in the entry's types word (the tiles honour it,
// the other kernels get C zeroed first).
TEST(AmxDispatch, OverwriteFlagOnEveryIsa) {
  for (int isa = 0; isa <= static_cast<int>(kernels::hostIsa()); ++isa) {
    SCOPED_TRACE(kernels::isaName(static_cast<Isa>(isa)));
    expectOverwrites([isa](const kernels::Problem& p) {
      const int64_t types = int64_t(2) | (int64_t(2) << 8) | kernels::kContractOverwrite;
      radix_kernel_contract(reinterpret_cast<int64_t>(p.a), 0, reinterpret_cast<int64_t>(p.b), 0,
                            reinterpret_cast<int64_t>(p.c), 0, types, p.batch, p.m, p.n, p.k, p.sab, p.sam, p.sak,
                            p.sbb, p.sbk, p.sbn, p.scb, p.scm, p.scn, 2, isa);
    });
  }
}

TEST(AmxNumerics, Int8TilesAreExact) {
  if (!kernels::amxInt8Available()) GTEST_SKIP() << "host lacks amx-int8 (or the OS refused the AMX tile state)";
  for (int threads : {1, 2})
    for (const Int8Case& t : int8Cases()) {
      SCOPED_TRACE(std::string(t.name) + " threads " + std::to_string(threads));
      Int8Data d = makeInt8(t, 19);
      const bool ran = t.packed ? kernels::amxInt8GemmPacked(t.m, t.n, t.k, d.a.data(), t.k, d.packed.data(),
                                                             d.c.data(), t.n, t.accumulate, threads)
                                : kernels::amxInt8Gemm(t.m, t.n, t.k, d.a.data(), t.k, d.b.data(), t.n, d.c.data(),
                                                       t.n, t.accumulate, threads);
      EXPECT_TRUE(ran);
      EXPECT_EQ(d.c, d.want);
    }
}

}  // namespace
