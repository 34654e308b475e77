// The dequantize graph op and its fusion into contractions (src/ops/quant.cpp,
// src/compiler/kernels/quant/): the op against the host decoder (bit-exact, every format); fused
// dots against a dequantize-then-double reference on odd shapes, batch dims, the weight on either
// side, f32/f16/bf16 activations, on each path the host runs (forced through the compile target);
// proof that no f32 weight is written; the fallback where something else reads the weight;
// nn::Linear / Embedding / QuantizedLinear; the dispatcher called directly; errors.
#include <algorithm>
#include <gtest/gtest.h>
#include <radix/nn.h>
#include <radix/quant.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "compiler/kernels/quant/qkernels.h"
#include "io_testing.h"

namespace {

using radix::DType;
using radix::QuantizedTensor;
using radix::QuantType;
using radix::Shape;
using radix::Tensor;
using radix::testing::errorOf;
namespace kernels = radix::kernels;
using Dims = std::vector<int64_t>;

constexpr QuantType kBlockTypes[] = {QuantType::q8_0, QuantType::q4_0, QuantType::q4_1, QuantType::q5_0,
                                     QuantType::q5_1, QuantType::q4_k, QuantType::q5_k, QuantType::q6_k};

int64_t count(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// Finite f16 bits between 2^-12 and 2^3 in magnitude, zero one time in 16.
uint16_t randomHalf(std::mt19937& rng) {
  if (rng() % 16 == 0) return 0;
  const uint16_t sign = (rng() & 1) << 15, exp = static_cast<uint16_t>(3 + rng() % 15), man = rng() & 1023;
  return static_cast<uint16_t>(sign | exp << 10 | man);
}

// Byte offsets of a block's f16 scales (the rest of a block is any bit pattern).
std::vector<int> halfOffsets(QuantType t) {
  switch (t) {
    case QuantType::q4_1:
    case QuantType::q5_1:
    case QuantType::q4_k:
    case QuantType::q5_k: return {0, 2};
    case QuantType::q6_k: return {208};
    default: return {0};
  }
}

// Random packed rows {rows, rowBytes}: random bytes with finite scales.
std::vector<uint8_t> randomBlocks(QuantType t, int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * radix::rowBytes(t, cols)));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  const int64_t blockBytes = radix::blockBytes(t);
  for (size_t at = 0; at < bytes.size(); at += static_cast<size_t>(blockBytes))
    for (int o : halfOffsets(t)) {
      const uint16_t h = randomHalf(rng);
      std::memcpy(&bytes[at + o], &h, 2);
    }
  return bytes;
}

std::vector<float> hostDecode(QuantType t, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const int64_t rb = radix::rowBytes(t, cols);
  for (int64_t r = 0; r < rows; ++r) radix::dequantizeRow(t, bytes.data() + r * rb, cols, out.data() + r * cols);
  return out;
}

radix::Platform cpuFor(const std::string& targetCpu = "", int threads = 0) {
  radix::CompileOptions options;
  options.cache = false;
  options.targetCpu = targetCpu;
  options.threads = threads;
  return radix::Platform::cpu().withOptions(options);
}

Tensor packed(const radix::Platform& cpu, QuantType t, int64_t rows, int64_t cols, unsigned seed,
              std::vector<float>* decoded = nullptr) {
  const std::vector<uint8_t> bytes = randomBlocks(t, rows, cols, seed);
  if (decoded) *decoded = hostDecode(t, bytes, rows, cols);
  return Tensor::fromBytes(cpu, Shape({rows, radix::rowBytes(t, cols)}, DType::u8), bytes.data(), bytes.size());
}

Tensor randomTensor(const radix::Platform& cpu, const Dims& dims, DType dtype, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(count(dims)));
  for (float& x : v) x = u(rng);
  return Tensor::fromValues(cpu, Shape(dims, dtype), v);
}

uint64_t qcalls(kernels::Isa isa) {
  uint64_t n = 0;
  for (int p = 0; p < kernels::kQPathCount; ++p) n += kernels::qcallCount(kernels::QPath(p), isa);
  return n;
}

uint64_t int8Calls() {
  return kernels::qcallCount(kernels::QPath::gemvInt8) + kernels::qcallCount(kernels::QPath::gemmAmx) +
         kernels::qcallCount(kernels::QPath::gemmInt8);
}

void expectBitEqual(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    if (std::memcmp(&actual[i], &expected[i], 4) != 0 && reported++ < 5)
      ADD_FAILURE() << what << " element " << i << ": " << actual[i] << " vs " << expected[i];
}

// ---- the op against the host decoder ----

TEST(QuantOps, DequantizeIsBitExactWithTheHostDecoder) {
  const radix::Platform cpu = cpuFor();
  for (QuantType t : kBlockTypes) {
    const int64_t cols = radix::blockElems(t) * 2, rows = 3;
    SCOPED_TRACE(std::string(radix::quantName(t)));
    std::vector<float> expected;
    Tensor data = packed(cpu, t, rows, cols, 11, &expected);
    auto fn = [t, cols](Tensor d) { return QuantizedTensor{d, {}, {}, t, cols}.dequantize(); };
    Tensor y = radix::testing::compileAndCall(cpu, fn, data);
    EXPECT_EQ(y.shape().str(), Shape({rows, cols}, DType::f32).str());
    expectBitEqual(y.toVector<float>(), expected, "f32");
  }
}

// A bf16 result is the f32 decode rounded to nearest even.
TEST(QuantOps, DequantizeToBf16RoundsTheF32Decode) {
  const radix::Platform cpu = cpuFor();
  for (QuantType t : {QuantType::q4_k, QuantType::q5_1}) {
    const int64_t cols = 256;
    std::vector<float> expected;
    Tensor data = packed(cpu, t, 2, cols, 12, &expected);
    auto fn = [t, cols](Tensor d) { return QuantizedTensor{d, {}, {}, t, cols}.dequantize(DType::bf16); };
    Tensor y = radix::testing::compileAndCall(cpu, fn, data);
    const std::vector<float> rounded = Tensor::fromValues(cpu, Shape({2, cols}, DType::bf16), expected).toVector<float>();
    expectBitEqual(y.toVector<float>(), rounded, std::string(radix::quantName(t)) + " bf16");
  }
}

struct IntCase {
  QuantType type;
  int64_t rows, cols, group;
  DType scaleType;
  bool zeros;
};

// The int formats from their definitions: x = s*q (i8_channel), x = s*(q - z) with z = 8 when
// absent (i4_group, low nibble first).
struct IntWeight {
  QuantizedTensor q;
  std::vector<float> decoded;
};

IntWeight intWeight(const radix::Platform& cpu, const IntCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  const bool i4 = c.type == QuantType::i4_group;
  const int64_t groups = i4 ? c.cols / c.group : 1;
  std::vector<int> q(static_cast<size_t>(c.rows * c.cols));
  for (int& x : q) x = i4 ? static_cast<int>(rng() % 16) : static_cast<int>(rng() % 256) - 128;
  std::vector<float> s(static_cast<size_t>(c.rows * groups)), z(s.size());
  for (float& x : s) x = u(rng);
  for (float& x : z) x = static_cast<float>(rng() % 16);
  Tensor scales = Tensor::fromValues(cpu, i4 ? Shape({c.rows, groups}, c.scaleType) : Shape({c.rows}, c.scaleType), s);
  Tensor zeros = Tensor::fromValues(cpu, Shape({c.rows, groups}, c.scaleType), z);
  s = scales.toVector<float>();  // as stored
  z = zeros.toVector<float>();
  IntWeight w;
  w.decoded.resize(q.size());
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t k = 0; k < c.cols; ++k) {
      const size_t e = static_cast<size_t>(r * c.cols + k), g = static_cast<size_t>(r * groups + k / (i4 ? c.group : c.cols));
      w.decoded[e] = i4 ? s[g] * (static_cast<float>(q[e]) - (c.zeros ? z[g] : 8.f)) : s[g] * static_cast<float>(q[e]);
    }
  Tensor data;
  if (i4) {
    std::vector<int> bytes(q.size() / 2);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = q[2 * i] | q[2 * i + 1] << 4;
    data = Tensor::fromValues(cpu, Shape({c.rows, c.cols / 2}, DType::u8), bytes);
  } else {
    data = Tensor::fromValues(cpu, Shape({c.rows, c.cols}, DType::i8), q);
  }
  w.q = QuantizedTensor{data, scales, c.zeros ? std::optional<Tensor>(zeros) : std::nullopt, c.type, c.cols,
                        i4 ? c.group : 0};
  return w;
}

const std::vector<IntCase>& intCases() {
  static const std::vector<IntCase> cases = {
      {QuantType::i8_channel, 5, 96, 0, DType::f32, false},   {QuantType::i8_channel, 3, 64, 0, DType::f16, false},
      {QuantType::i8_channel, 1, 32, 0, DType::bf16, false},  {QuantType::i4_group, 5, 96, 32, DType::f16, false},
      {QuantType::i4_group, 3, 128, 64, DType::bf16, true},   {QuantType::i4_group, 2, 256, 128, DType::f32, true},
  };
  return cases;
}

TEST(QuantOps, DequantizeIntFormatsMatchTheirDefinition) {
  const radix::Platform cpu = cpuFor();
  for (const IntCase& c : intCases()) {
    SCOPED_TRACE(std::string(radix::quantName(c.type)) + " group " + std::to_string(c.group) + " scales " +
                 std::string(radix::name(c.scaleType)) + (c.zeros ? " zeros" : ""));
    const IntWeight w = intWeight(cpu, c, 21);
    Tensor y = radix::testing::compileAndCall(cpu, [](QuantizedTensor q) { return q.dequantize(); }, w.q);
    expectBitEqual(y.toVector<float>(), w.decoded, "int");
  }
}

// ---- fused contractions ----

struct DotCase {
  QuantType type;
  Dims x;         // activations, the last dim is k
  int64_t n;      // weight rows
  DType act;
  bool weightLeft;  // W.dot(x) instead of x.dot(W)
};

const std::vector<DotCase>& dotCases() {
  static const std::vector<DotCase> cases = {
      {QuantType::q8_0, {1, 32}, 5, DType::f32, false},     {QuantType::q4_0, {3, 96}, 96, DType::f32, false},
      {QuantType::q4_1, {17, 64}, 1, DType::f32, false},    {QuantType::q5_0, {64, 32}, 5, DType::f32, true},
      {QuantType::q5_1, {2, 3, 96}, 5, DType::f32, false},  {QuantType::q4_k, {1, 256}, 96, DType::f32, false},
      {QuantType::q5_k, {3, 512}, 5, DType::bf16, false},   {QuantType::q6_k, {17, 256}, 1, DType::f32, true},
      {QuantType::q6_k, {64, 512}, 96, DType::bf16, false}, {QuantType::q8_0, {2, 3, 64}, 96, DType::bf16, true},
      {QuantType::q4_0, {1, 512}, 96, DType::f16, false},   {QuantType::q4_k, {1, 1, 512}, 5, DType::bf16, false},
  };
  return cases;
}

struct Target {
  const char* cpu;
  kernels::Isa isa;
};

std::vector<Target> runnableTargets() {
  std::vector<Target> out = {{"x86-64", kernels::Isa::x86_64}};
  if (kernels::hostIsa() >= kernels::Isa::avx2) out.push_back({"x86-64-v3", kernels::Isa::avx2});
  return out;
}

// y[i][j] = sum_k x[i][k] w[j][k] in double, with two error bounds per element: f32 accumulation
// (1e-5 of sum |x w|) and, for paths that quantize activations to int8 per block of 32, the
// rounding of x to amax/127 steps (sum |w| amax/254).
struct Reference {
  std::vector<double> y, f32Tol, int8Tol;
};

Reference reference(const std::vector<double>& x, const std::vector<float>& w, int64_t m, int64_t n, int64_t k) {
  Reference r;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, mag = 0, q = 0;
      for (int64_t b = 0; b < k; b += 32) {
        double amax = 0;
        for (int64_t l = b; l < std::min(k, b + 32); ++l) amax = std::max(amax, std::fabs(x[i * k + l]));
        for (int64_t l = b; l < std::min(k, b + 32); ++l) {
          const double wl = w[static_cast<size_t>(j * k + l)];
          sum += x[i * k + l] * wl;
          mag += std::fabs(x[i * k + l] * wl);
          q += std::fabs(wl) * amax / 254;
        }
      }
      r.y.push_back(sum);
      r.f32Tol.push_back(1e-5 * mag + 1e-6);
      r.int8Tol.push_back(1.01 * q + 1e-5 * mag + 1e-6);
    }
  return r;
}

void checkDot(const DotCase& c, const Target& target) {
  const int64_t k = c.x.back(), m = count(c.x) / k;
  SCOPED_TRACE(std::string(radix::quantName(c.type)) + " x " + Shape(c.x, c.act).str() + " n " + std::to_string(c.n) +
               (c.weightLeft ? " W.dot(x)" : " x.dot(W)") + " target " + target.cpu);
  const radix::Platform cpu = cpuFor(target.cpu);
  std::vector<float> w;
  Tensor data = packed(cpu, c.type, c.n, k, 31, &w);
  std::vector<radix::Tag> tags;
  for (size_t i = 0; i + 1 < c.x.size(); ++i) tags.push_back(i == 0 ? "b" : "s");
  tags.push_back("d");
  Tensor x = randomTensor(cpu, c.x, c.act, 32).withTags(tags);
  const QuantType t = c.type;
  const bool left = c.weightLeft;
  auto fn = [t, k, left](Tensor xs, Tensor d) {
    Tensor wt = QuantizedTensor{d.withTags({"n", "d"}), {}, {}, t, k}.dequantize(xs.dtype());
    return left ? wt.dot(xs, {"d"}) : xs.dot(wt, {"d"});
  };
  const uint64_t before = qcalls(target.isa), int8Before = int8Calls();
  Tensor y = radix::compile(cpu, fn, x, data)(x, data);
  EXPECT_GT(qcalls(target.isa), before) << "no quantized kernel ran on " << target.cpu;
  const bool int8 = int8Calls() > int8Before;
  const Reference ref = reference(x.toVector<double>(), w, m, c.n, k);
  std::vector<double> actual = y.toVector<double>();
  ASSERT_EQ(actual.size(), ref.y.size());
  const double rounding = c.act == DType::bf16 ? 1.0 / 256 : c.act == DType::f16 ? 1.0 / 2048 : 0;
  int reported = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const size_t r = static_cast<size_t>(i * c.n + j);
      const size_t a = left ? static_cast<size_t>(j * m + i) : r;  // W.dot(x) is {n, ...x}
      const double tol = (int8 ? ref.int8Tol[r] : ref.f32Tol[r]) + rounding * std::fabs(ref.y[r]);
      if (std::fabs(actual[a] - ref.y[r]) > tol && reported++ < 5)
        ADD_FAILURE() << "y[" << i << "][" << j << "] = " << actual[a] << ", expected " << ref.y[r] << " (tol " << tol
                      << (int8 ? ", int8 path)" : ")");
    }
}

TEST(QuantOps, FusedDotMatchesTheDequantizedReference) {
  for (const Target& target : runnableTargets())
    for (const DotCase& c : dotCases()) checkDot(c, target);
}

TEST(QuantOps, FusedDotIntFormats) {
  for (const Target& target : runnableTargets())
    for (const IntCase& c : intCases()) {
      SCOPED_TRACE(std::string(radix::quantName(c.type)) + " group " + std::to_string(c.group) + " target " + target.cpu);
      const radix::Platform cpu = cpuFor(target.cpu);
      const IntWeight w = intWeight(cpu, c, 41);
      Tensor x = randomTensor(cpu, {3, c.cols}, DType::bf16, 42).withTags({"s", "d"});
      auto fn = [](Tensor xs, QuantizedTensor q) { return xs.dot(q.dequantize(xs.dtype()).withTags({"n", "d"}), {"d"}); };
      const uint64_t before = qcalls(target.isa), int8Before = int8Calls();
      Tensor y = radix::compile(cpu, fn, x, w.q)(x, w.q);
      EXPECT_GT(qcalls(target.isa), before);
      const bool int8 = int8Calls() > int8Before;
      const Reference ref = reference(x.toVector<double>(), w.decoded, 3, c.rows, c.cols);
      const std::vector<double> actual = y.toVector<double>();
      ASSERT_EQ(actual.size(), ref.y.size());
      for (size_t i = 0; i < actual.size(); ++i)
        EXPECT_NEAR(actual[i], ref.y[i], (int8 ? ref.int8Tol[i] : ref.f32Tol[i]) + std::fabs(ref.y[i]) / 256) << i;
    }
}

std::string loweredText(const std::string& dir) {
  std::string text;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.path().string().find("radix-lower-rows") != std::string::npos) {  // one file per function
      std::ifstream in(entry.path());
      text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  return text;
}

radix::Platform dumping(const std::string& dir, const std::string& targetCpu = "") {
  std::filesystem::remove_all(dir);
  // radix-lower-rows: the first pass after the kernel rewrites.
  radix::CompileOptions options = radix::iotest::passDumpOptions(dir, "radix-lower-rows");
  options.targetCpu = targetCpu;
  return radix::Platform::cpu().withOptions(options);
}

// The IR after the kernel rewrites calls radix_kernel_qcontract and holds no {n, k} f32 buffer
// and no decode loop; the kernel ran.
TEST(QuantOps, FusedDotNeverMaterializesTheWeight) {
  const std::string dir = ::testing::TempDir() + "radix_quant_ops_fused";
  for (const bool bf16 : {false, true}) {
    const radix::Platform cpu = dumping(dir);
    Tensor data = packed(cpu, QuantType::q4_0, 96, 256, 51);
    Tensor x = randomTensor(cpu, {3, 256}, bf16 ? DType::bf16 : DType::f32, 52).withTags({"s", "d"});
    const radix::nn::Linear layer{data, std::nullopt, "d", "f", QuantType::q4_0, 256};
    const uint64_t before = qcalls(kernels::hostIsa());
    radix::compile(cpu, &radix::nn::Linear::forward, layer, x)(layer, x);
    EXPECT_GT(qcalls(kernels::hostIsa()), before);
    const std::string text = loweredText(dir);
    ASSERT_FALSE(text.empty()) << "no IR dumped in " << dir;
    EXPECT_NE(text.find("call @radix_kernel_qcontract"), std::string::npos) << text;
    EXPECT_EQ(text.find("96x256x"), std::string::npos) << "a decoded weight buffer is left: " << text;
    EXPECT_EQ(text.find("radix.dequantize"), std::string::npos) << "a decode loop is left: " << text;
  }
  std::filesystem::remove_all(dir);
}

// Where something besides a contraction reads the decoded weight, the op runs as written for that
// reader and the contraction still takes the kernel; a contraction the kernel cannot take
// (activations strided along k) reads the decoded weight: both correct.
TEST(QuantOps, OtherReadersAndStridedActivationsFallBack) {
  const radix::Platform cpu = cpuFor();
  std::vector<float> w;
  Tensor data = packed(cpu, QuantType::q8_0, 5, 64, 61, &w);
  Tensor x = randomTensor(cpu, {3, 64}, DType::f32, 62).withTags({"s", "d"});
  Tensor xt = randomTensor(cpu, {64, 3}, DType::f32, 63).withTags({"d", "s"});
  auto fn = [](Tensor xs, Tensor xts, Tensor d) {
    Tensor wt = QuantizedTensor{d.withTags({"n", "d"}), {}, {}, QuantType::q8_0, 64}.dequantize();
    return std::make_tuple(xs.dot(wt, {"d"}), wt.sum("d"), xts.dot(wt, {"d"}));
  };
  const uint64_t before = qcalls(kernels::hostIsa());
  setenv("RADIX_QUANT_EXACT", "1", 1);  // f32 activations: the 1e-4 checks below are not int8's
  auto [y, sums, yt] = radix::compile(cpu, fn, x, xt, data)(x, xt, data);
  unsetenv("RADIX_QUANT_EXACT");
  EXPECT_GT(qcalls(kernels::hostIsa()), before);
  const std::vector<double> xv = x.toVector<double>(), xtv = xt.toVector<double>();
  const std::vector<double> yv = y.toVector<double>(), sv = sums.toVector<double>(), ytv = yt.toVector<double>();
  std::vector<double> xtRows(xtv.size());  // xt {d, s} as rows of s
  for (int i = 0; i < 3; ++i)
    for (int l = 0; l < 64; ++l) xtRows[i * 64 + l] = xtv[l * 3 + i];
  const Reference ref = reference(xv, w, 3, 5, 64), refT = reference(xtRows, w, 3, 5, 64);
  for (int j = 0; j < 5; ++j) {
    double s = 0;
    for (int l = 0; l < 64; ++l) s += w[j * 64 + l];
    EXPECT_NEAR(sv[j], s, 1e-5 * (1 + std::fabs(s)));
  }
  for (size_t i = 0; i < ref.y.size(); ++i) {
    EXPECT_NEAR(yv[i], ref.y[i], ref.int8Tol[i]) << "fused " << i;          // the kernel may quantize x
    EXPECT_NEAR(ytv[i], refT.y[i], refT.f32Tol[i]) << "materialized " << i;  // f32 loops
  }
}

// ---- nn ----

TEST(QuantOps, LinearEmbeddingAndQuantizedLinear) {
  const radix::Platform cpu = cpuFor();
  {  // nn::Linear, q5_k weights, bf16 activations with a bias
    std::vector<float> w;
    Tensor data = packed(cpu, QuantType::q5_k, 5, 256, 71, &w);
    Tensor bias = randomTensor(cpu, {5}, DType::f32, 72);
    Tensor x = randomTensor(cpu, {2, 3, 256}, DType::bf16, 73).withTags({"b", "s", "d"});
    const radix::nn::Linear layer{data, bias, "d", "f", QuantType::q5_k, 256};
    const uint64_t before = qcalls(kernels::hostIsa());
    Tensor y = radix::testing::compileAndCall(cpu, &radix::nn::Linear::forward, layer, x);
    EXPECT_GT(qcalls(kernels::hostIsa()), before);
    EXPECT_EQ(y.shape().str(), Shape({2, 3, 5}, DType::bf16).withTags({"b", "s", "f"}).str());
    const Reference ref = reference(x.toVector<double>(), w, 6, 5, 256);
    const std::vector<double> yv = y.toVector<double>(), bv = bias.toVector<double>();
    for (size_t i = 0; i < yv.size(); ++i) {
      const double e = ref.y[i] + bv[i % 5];
      EXPECT_NEAR(yv[i], e, ref.int8Tol[i] + std::fabs(e) / 128) << i;
    }
  }
  {  // nn::Embedding, q6_k table: only the gathered rows are decoded, bit-exact
    std::vector<float> w;
    Tensor table = packed(cpu, QuantType::q6_k, 7, 256, 74, &w);
    Tensor ids = Tensor::fromValues(cpu, Shape({2, 3}, DType::i32), std::vector<int32_t>{6, 0, 3, 3, 1, 9});
    const radix::nn::Embedding emb{table, QuantType::q6_k, 256};
    Tensor y = radix::testing::compileAndCall(cpu, &radix::nn::Embedding::forward, emb, ids.withTags({"b", "s"}));
    EXPECT_EQ(y.shape().str(), Shape({2, 3, 256}, DType::f32).withTags({"b", "s", "d"}).str());
    std::vector<float> expected;
    for (int id : {6, 0, 3, 3, 1, 6})  // 9 is clamped to the last row
      expected.insert(expected.end(), w.begin() + id * 256, w.begin() + (id + 1) * 256);
    expectBitEqual(y.toVector<float>(), expected, "embedding");
  }
  {  // nn::QuantizedLinear, i4_group with zeros
    const IntWeight w = intWeight(cpu, {QuantType::i4_group, 5, 128, 32, DType::f16, true}, 75);
    Tensor x = randomTensor(cpu, {3, 128}, DType::f32, 76).withTags({"s", "d"});
    const radix::nn::QuantizedLinear layer{w.q, std::nullopt, "d", "f"};
    const uint64_t before = qcalls(kernels::hostIsa());
    Tensor y = radix::testing::compileAndCall(cpu, &radix::nn::QuantizedLinear::forward, layer, x);
    EXPECT_GT(qcalls(kernels::hostIsa()), before);
    const Reference ref = reference(x.toVector<double>(), w.decoded, 3, 5, 128);
    const std::vector<double> yv = y.toVector<double>();
    for (size_t i = 0; i < yv.size(); ++i) EXPECT_NEAR(yv[i], ref.y[i], ref.int8Tol[i]) << i;
  }
}

// ---- the dispatcher, without MLIR ----

std::vector<float> qcontract(const std::vector<float>& a, const std::vector<uint8_t>& w, QuantType t, int64_t m,
                             int64_t n, int64_t k, int64_t threads, int64_t isa, kernels::Elem act = kernels::Elem::f32) {
  std::vector<float> c(static_cast<size_t>(m * n), 0.5f);  // accumulates onto C
  std::vector<uint16_t> narrow;
  int64_t aBase = reinterpret_cast<int64_t>(a.data());
  if (act != kernels::Elem::f32) {
    narrow.resize(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      uint32_t u;
      std::memcpy(&u, &a[i], 4);
      narrow[i] = static_cast<uint16_t>(u >> 16);  // bf16 by truncation (a is bf16-exact here)
    }
    aBase = reinterpret_cast<int64_t>(narrow.data());
  }
  const int64_t types = static_cast<int64_t>(t) | (static_cast<int64_t>(act) << kernels::kQActShift);
  radix_kernel_qcontract(aBase, 0, reinterpret_cast<int64_t>(w.data()), 0, 0, 0, 0, 0,
                         reinterpret_cast<int64_t>(c.data()), 0, types, m, n, k, 0, k, radix::rowBytes(t, k), n, 1,
                         threads, isa);
  return c;
}

TEST(QuantOps, DispatchSplitsRowsAndLowersTheIsa) {
  const int64_t m = 2, n = 1000, k = 1024;  // over the single-thread threshold
  const std::vector<uint8_t> w = randomBlocks(QuantType::q8_0, n, k, 81);
  std::vector<float> a(static_cast<size_t>(m * k));
  std::mt19937 rng(82);
  for (float& x : a) {
    const float v = std::uniform_real_distribution<float>(-1, 1)(rng);
    uint32_t u;
    std::memcpy(&u, &v, 4);
    u &= 0xffff0000u;  // bf16-exact, so that the bf16 activations below are the same numbers
    std::memcpy(&x, &u, 4);
  }
  const int64_t scalar = static_cast<int64_t>(kernels::Isa::x86_64);
  const uint64_t scalarBefore = kernels::qcallCount(kernels::QPath::scalar, kernels::Isa::x86_64);
  const std::vector<float> one = qcontract(a, w, QuantType::q8_0, m, n, k, 1, scalar);
  const std::vector<float> two = qcontract(a, w, QuantType::q8_0, m, n, k, 2, scalar);
  const std::vector<float> bf16 = qcontract(a, w, QuantType::q8_0, m, n, k, 2, scalar, kernels::Elem::bf16);
  EXPECT_EQ(kernels::qcallCount(kernels::QPath::scalar, kernels::Isa::x86_64), scalarBefore + 3);
  expectBitEqual(two, one, "2 threads vs 1");
  expectBitEqual(bf16, one, "bf16 activations");
  const std::vector<float> decoded = hostDecode(QuantType::q8_0, w, n, k);
  std::vector<double> ad(a.begin(), a.end());
  const Reference ref = reference(ad, decoded, m, n, k);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(one[i], 0.5 + ref.y[i], ref.f32Tol[i]) << i;
  // An object compiled for AVX-512 + VNNI runs the lower of its target and what this CPU has.
  const kernels::Isa run = std::min(kernels::hostIsa(), kernels::Isa::avx512);
  const uint64_t runBefore = qcalls(run);
  qcontract(a, w, QuantType::q8_0, m, n, k, 1, static_cast<int64_t>(kernels::Isa::avx512) | kernels::kQIsaVnni);
  EXPECT_EQ(qcalls(run), runBefore + 1) << "expected to run on " << kernels::isaName(run);
}

// AVX-512 / VNNI targets: the lowered call carries the ISA and the VNNI bit (checked on any host);
// the numbers only where the CPU has the feature.
TEST(QuantOps, VnniTargetsPassTheFeature) {
  struct VnniTarget {
    const char* cpu;
    kernels::Isa isa;
    const char* feature;
  };
  const VnniTarget targets[] = {{"sapphirerapids", kernels::Isa::amx, "amx"},
                                {"cooperlake", kernels::Isa::avx512bf16, "avx512_vnni"},
                                {"alderlake", kernels::Isa::avx2, "avx_vnni"}};
  const std::string dir = ::testing::TempDir() + "radix_quant_ops_vnni";
  std::string lacking;
  int ran = 0;
  for (const VnniTarget& t : targets) {
    SCOPED_TRACE(t.cpu);
    const radix::Platform cpu = dumping(dir, t.cpu);
    Tensor data = packed(cpu, QuantType::q4_0, 16, 64, 91);
    Tensor x = randomTensor(cpu, {1, 64}, DType::f32, 92).withTags({"s", "d"});
    const radix::nn::Linear layer{data, std::nullopt, "d", "f", QuantType::q4_0, 64};
    auto exe = radix::compile(cpu, &radix::nn::Linear::forward, layer, x);
    const std::string text = loweredText(dir);
    const int64_t isaArg = static_cast<int64_t>(t.isa) | kernels::kQIsaVnni;
    EXPECT_NE(text.find("call @radix_kernel_qcontract"), std::string::npos) << text;
    EXPECT_NE(text.find("arith.constant " + std::to_string(isaArg) + " : i64"), std::string::npos)
        << "no isa argument " << isaArg << " in " << text;
    if (kernels::hostIsa() < t.isa || !kernels::hostVnni(t.isa)) {
      lacking += std::string(lacking.empty() ? "" : ", ") + t.feature;
      continue;
    }
    const uint64_t before = qcalls(t.isa);
    exe(layer, x);
    EXPECT_GT(qcalls(t.isa), before);
    ++ran;
  }
  std::filesystem::remove_all(dir);
  if (!lacking.empty()) std::printf("[ NOTE     ] host lacks %s: lowered IR checked, not run\n", lacking.c_str());
  if (ran == 0) GTEST_SKIP() << "host lacks " << lacking << " (lowered IR checked, numbers not run)";
}

// ---- errors ----

TEST(QuantOps, ErrorsNameTheProblem) {
  const radix::Platform cpu = cpuFor();
  Tensor q40 = packed(cpu, QuantType::q4_0, 4, 64, 99);                         // {4,36}:u8
  Tensor asI8 = Tensor::fromValues(cpu, Shape({4, 36}, DType::i8), std::vector<float>(144, 1));
  Tensor i4 = Tensor::fromValues(cpu, Shape({4, 32}, DType::u8), std::vector<float>(128, 1));
  Tensor s4 = Tensor::fromValues(cpu, Shape({4, 2}, DType::f16), std::vector<float>(8, 1));
  Tensor x = randomTensor(cpu, {2, 64}, DType::f32, 98);
  struct Case {
    std::function<Tensor()> run;
    const char* expected;
  };
  auto deq = [&](Tensor d, QuantizedTensor q) {
    return [=]() {
      return radix::testing::compileAndCall(cpu, [q](Tensor dd) {
        QuantizedTensor qq = q;
        qq.data = dd;
        return qq.dequantize();
      }, d);
    };
  };
  const Case cases[] = {
      {deq(q40, {{}, {}, {}, QuantType::q4_0, 96}), "[dequantize] q4_0 data {4,36}:u8 has 36 bytes per row; 96 columns need 54"},
      {deq(q40, {{}, {}, {}, QuantType::q4_0, 48}), "[dequantize] q4_0 cols 48 is not a multiple of its block of 32"},
      {deq(q40, {{}, {}, {}, QuantType::q4_k, 64}), "[dequantize] q4_k cols 64 is not a multiple of its block of 256"},
      {deq(asI8, {{}, {}, {}, QuantType::q4_0, 64}), "[dequantize] q4_0 data must be u8, got {4,36}:i8"},
      {deq(q40, {{}, {}, {}, QuantType::none, 64}), "[dequantize] type is none: data {4,36}:u8 is not quantized"},
      {deq(q40, {{}, {}, {}, QuantType::q4_0, 0}), "[dequantize] q4_0 needs cols > 0"},
      {deq(i4, {{}, s4, {}, QuantType::i4_group, 64, 48}), "[dequantize] i4_group group 48 is not 32, 64 or 128"},
      {deq(i4, {{}, {}, {}, QuantType::i4_group, 64, 32}), "[dequantize] i4_group needs scales {4,2}"},
      {deq(i4, {{}, s4, {}, QuantType::i4_group, 64, 64}), "[dequantize] i4_group scales {4,2}:f16 must be {4,1}"},
      {[&] {
         const radix::nn::Linear layer{q40, std::nullopt, "d", "f", QuantType::q4_0, 72};
         return radix::testing::compileAndCall(cpu, &radix::nn::Linear::forward, layer, x);
       },
       "[nn.Linear] [dequantize] q4_0 cols 72 is not a multiple of its block of 32"},
      {[&] {
         const radix::nn::Linear layer{q40, std::nullopt, "d", "f", QuantType::i8_channel, 36};
         return radix::testing::compileAndCall(cpu, &radix::nn::Linear::forward, layer, x);
       },
       "[nn.Linear] i8_channel needs separate scales: use nn::QuantizedLinear"},
  };
  for (const Case& c : cases) {
    const std::string error = errorOf(c.run);
    EXPECT_EQ(error.rfind(c.expected, 0), 0u) << "got: " << error << "\nexpected it to start with: " << c.expected;
  }
}

}  // namespace
