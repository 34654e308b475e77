// The quantized contraction kernels (src/compiler/kernels/quant, qkernels.h), called directly:
// every GGUF format x path (int8-activation GEMV, f32-activation GEMV, decoded GEMM) x ISA copy
// (AVX2, AVX2 + avx_vnni, AVX-512, AVX-512 + avx512_vnni; skipped where the host lacks them) on
// odd shapes, strided C and row sub-ranges, against dequantize-then-f32 in double.
//
// Weights are random bytes (every bit pattern of the quants) with finite random f16 scales and
// mins. The reference decoder below is written from ggml-common.h's block definitions.
//
// Tolerances, per output, with S = sum_k |a_k w_k|:
//  - f32 paths (gemvF32, gemmDecoded): 1e-6 * S + 1e-6 (the worst seen is a quarter of it). The
//    decode is exact in f32 but for the min's addition (an f16 scale times an integer of at most
//    8 bits); what is left is f32 rounding of products and k-term sums in another order than the
//    double reference.
//  - int8 activations (gemvInt8, gemmInt8): A is rounded to d * round(a / d) per 32-block, d = max|a| / 127,
//    so each |a_k - a'_k| <= d / 2: the bound is sum_k |w_k| d(k) / 2, times 1.01, plus the f32
//    term. This is llama.cpp's error model (about 1/254 of the block's max per element); the worst
//    seen is 0.4 of this bound.
//  - decoded weights on bf16 tiles (gemmAmx, AMX hosts, m >= kAmxMinM): weights and activations
//    rounded to bf16, so 1.01 * S / 256 plus the f32 term.
#include <gtest/gtest.h>
#include <radix/error.h>
#include <radix/quant.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/quant/qkernels.h"

namespace {

using radix::QuantType;
namespace kernels = radix::kernels;
using kernels::QPath;
using kernels::QProblem;

struct Fmt {
  QuantType type;
  const char* name;
  int elems, bytes;
};
const Fmt kFormats[] = {{QuantType::q8_0, "q8_0", 32, 34}, {QuantType::q4_0, "q4_0", 32, 18},
                        {QuantType::q4_1, "q4_1", 32, 20}, {QuantType::q5_0, "q5_0", 32, 22},
                        {QuantType::q5_1, "q5_1", 32, 24}, {QuantType::q4_k, "q4_k", 256, 144},
                        {QuantType::q5_k, "q5_k", 256, 176}, {QuantType::q6_k, "q6_k", 256, 210}};

float halfToFloat(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  const float v = exp == 0 ? std::ldexp(static_cast<float>(man), -24) : std::ldexp(static_cast<float>(man | 1024), exp - 25);
  return sign ? -v : v;
}
float rdHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return halfToFloat(h);
}
uint16_t floatToHalf(float f) {  // round-toward-zero is enough for test scales (normal range)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int exp = static_cast<int>((u >> 23) & 255) - 127 + 15;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (exp << 10) | ((u >> 13) & 1023));
}
void wrHalf(uint8_t* p, float f) {
  const uint16_t h = floatToHalf(f);
  std::memcpy(p, &h, 2);
}

void kScaleMin(int j, const uint8_t* q, int& sc, int& mn) {
  if (j < 4) {
    sc = q[j] & 63, mn = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
    mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// One block -> its elements (ggml-common.h's layouts, dequantize_row_* semantics).
void refBlock(QuantType t, const uint8_t* b, float* y) {
  switch (t) {
    case QuantType::q8_0:
      for (int i = 0; i < 32; ++i) y[i] = rdHalf(b) * static_cast<float>(static_cast<int8_t>(b[2 + i]));
      return;
    case QuantType::q4_0:
    case QuantType::q4_1: {
      const bool one = t == QuantType::q4_1;
      const float d = rdHalf(b), m = one ? rdHalf(b + 2) : 0.0f;
      const uint8_t* qs = b + (one ? 4 : 2);
      for (int i = 0; i < 16; ++i) {
        const int lo = qs[i] & 15, hi = qs[i] >> 4;
        y[i] = one ? d * lo + m : d * (lo - 8);
        y[i + 16] = one ? d * hi + m : d * (hi - 8);
      }
      return;
    }
    case QuantType::q5_0:
    case QuantType::q5_1: {
      const bool one = t == QuantType::q5_1;
      const float d = rdHalf(b), m = one ? rdHalf(b + 2) : 0.0f;
      uint32_t qh;
      std::memcpy(&qh, b + (one ? 4 : 2), 4);
      const uint8_t* qs = b + (one ? 8 : 6);
      for (int i = 0; i < 16; ++i) {
        const int lo = (qs[i] & 15) | (((qh >> i) & 1) << 4), hi = (qs[i] >> 4) | (((qh >> (i + 16)) & 1) << 4);
        y[i] = one ? d * lo + m : d * (lo - 16);
        y[i + 16] = one ? d * hi + m : d * (hi - 16);
      }
      return;
    }
    case QuantType::q4_k:
    case QuantType::q5_k: {
      const bool five = t == QuantType::q5_k;
      const float d = rdHalf(b), dmin = rdHalf(b + 2);
      const uint8_t* sc = b + 4;
      const uint8_t* qh = b + 16;
      const uint8_t* qs = b + (five ? 48 : 16);
      for (int j = 0; j < 8; ++j) {
        int s, m;
        kScaleMin(j, sc, s, m);
        for (int l = 0; l < 32; ++l) {
          const uint8_t byte = qs[32 * (j / 2) + l];
          int q = j % 2 ? byte >> 4 : byte & 15;
          if (five) q |= ((qh[l] >> j) & 1) << 4;
          y[32 * j + l] = d * s * q - dmin * m;
        }
      }
      return;
    }
    case QuantType::q6_k: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
      const float d = rdHalf(b + 208);
      for (int i = 0; i < 256; ++i) {
        const int half = i / 128, r = i % 128, s = r / 32, l = r % 32;
        const uint8_t lq = ql[64 * half + 32 * (s & 1) + l];
        const int lo = s >= 2 ? lq >> 4 : lq & 15;
        const int hi = (qh[32 * half + l] >> (2 * s)) & 3;
        y[i] = d * sc[8 * half + 2 * s + l / 16] * ((lo | (hi << 4)) - 32);
      }
      return;
    }
    default: FAIL() << "no reference for this type";
  }
}

// Random blocks: random bytes, then finite scales (some zero) in the f16 fields.
std::vector<uint8_t> randomRows(const Fmt& f, int64_t n, int64_t k, std::mt19937& rng) {
  const int64_t nb = k / f.elems, rowBytes = nb * f.bytes;
  std::vector<uint8_t> w(static_cast<size_t>(n * rowBytes));
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (int64_t blk = 0; blk < n * nb; ++blk) {
    uint8_t* b = w.data() + blk * f.bytes;
    const float d = blk % 17 == 5 ? 0.0f : scale(rng);
    switch (f.type) {
      case QuantType::q4_1:
      case QuantType::q5_1:
      case QuantType::q4_k:
      case QuantType::q5_k:
        wrHalf(b, f.type == QuantType::q4_k || f.type == QuantType::q5_k ? std::abs(d) * 0.1f : d);
        wrHalf(b + 2, scale(rng) * (f.elems == 256 ? 0.1f : 1.0f));
        break;
      case QuantType::q6_k: wrHalf(b + 208, d * 0.1f); break;
      default: wrHalf(b, d);
    }
  }
  return w;
}

struct Shape3 {
  int64_t m, n, k;
};

struct Isa {
  const char* name;
  const char* feature;  // what the host must have
  bool avx512, vnni, amx = false;
};
const Isa kIsas[] = {{"avx2", "avx2", false, false},
                     {"avx2_vnni", "avxvnni", false, true},
                     {"avx512", "avx512bw", true, false},
                     {"avx512_vnni", "avx512vnni", true, true},
                     {"amx", "amx-bf16 (with the OS's tile permission)", true, true, true}};

bool hostHas(const Isa& isa) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
  if (isa.avx512 && !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")))
    return false;
  if (isa.vnni && !(isa.avx512 ? __builtin_cpu_supports("avx512vnni") : __builtin_cpu_supports("avxvnni")))
    return false;
  if (isa.amx && !kernels::amxBf16Available()) return false;
  return true;
}

QPath runIsa(const Isa& isa, QProblem p, int64_t n0, int64_t n1) {
  p.amx = isa.amx;
  return isa.avx512 ? kernels::runQuantAvx512(p, n0, n1, isa.vnni) : kernels::runQuantAvx2(p, n0, n1, isa.vnni);
}

struct ExactEnv {
  explicit ExactEnv(bool on) {
    if (on)
      setenv("RADIX_QUANT_EXACT", "1", 1);
    else
      unsetenv("RADIX_QUANT_EXACT");
  }
  ~ExactEnv() { unsetenv("RADIX_QUANT_EXACT"); }
};

const char* pathName(QPath p) {
  switch (p) {
    case QPath::scalar: return "scalar";
    case QPath::gemvF32: return "gemvF32";
    case QPath::gemvInt8: return "gemvInt8";
    case QPath::gemmDecoded: return "gemmDecoded";
    case QPath::gemmAmx: return "gemmAmx";
    case QPath::gemmInt8: return "gemmInt8";
  }
  return "?";
}

// gemmAmx rounds each decoded weight and each activation to bf16 (relative error at most 2^-9 each),
// so a product is off by at most about 2^-8 of itself; the tiles sum the exact products in f32.
constexpr double kBf16Products = 1.0 / 256;

// Runs every shape of `shapes` for one format on one ISA copy and checks it.
void checkFormat(const Isa& isa, const Fmt& f, const std::vector<Shape3>& shapes) {
  std::mt19937 rng(1234 + static_cast<int>(f.type));
  for (const auto& s : shapes) {
    const auto w = randomRows(f, s.n, s.k, rng);
    const int64_t rowBytes = s.k / f.elems * f.bytes;
    std::vector<float> wd(static_cast<size_t>(s.n * s.k));
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t b = 0; b < s.k / f.elems; ++b) refBlock(f.type, w.data() + j * rowBytes + b * f.bytes, &wd[j * s.k + b * f.elems]);
    // The reference decoder above agrees with the library's host codec (formats.cpp).
    std::vector<float> lib(static_cast<size_t>(s.k));
    for (int64_t j = 0; j < s.n; j += 7) {
      radix::dequantizeRow(f.type, w.data() + j * rowBytes, s.k, lib.data());
      for (int64_t q = 0; q < s.k; ++q)
        ASSERT_LE(std::abs(lib[q] - wd[j * s.k + q]), 1e-6f * std::abs(wd[j * s.k + q])) << f.name << " element " << q;
    }
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t sam = s.k + 5;
    std::vector<float> a(static_cast<size_t>(s.m * sam));
    for (auto& x : a) x = nd(rng);
    // Per-32 activation steps, for the int8 bound.
    std::vector<double> step(static_cast<size_t>(s.m * (s.k / 32)));
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t g = 0; g < s.k / 32; ++g) {
        double mx = 0;
        for (int l = 0; l < 32; ++l) mx = std::max(mx, std::abs(double(a[i * sam + 32 * g + l])));
        step[i * (s.k / 32) + g] = mx / 127;
      }
    // The int8 GEMM: AVX-512 VNNI, every format.
    const bool int8Gemm = isa.avx512 && isa.vnni;
    for (int mode = 0; mode < 2; ++mode) {  // 0: default, 1: RADIX_QUANT_EXACT=1
      const bool exact = mode == 1;
      const bool gemv = s.m <= 4;
      if (exact && !gemv && !int8Gemm) continue;  // that GEMM is f32 either way
      const bool amx = isa.amx && !exact && s.m >= kernels::kAmxMinM;
      const QPath want = gemv ? (exact ? QPath::gemvF32 : QPath::gemvInt8)
                              : amx ? QPath::gemmAmx : (int8Gemm && !exact ? QPath::gemmInt8 : QPath::gemmDecoded);
      const bool int8 = want == QPath::gemvInt8 || want == QPath::gemmInt8;
      for (int layout = 0; layout < 2; ++layout) {  // row-major padded C, column-major padded C
        const int64_t scm = layout == 0 ? s.n + 3 : 1, scn = layout == 0 ? 1 : s.m + 2;
        std::vector<float> c(static_cast<size_t>(layout == 0 ? s.m * scm : s.n * scn), 0.0f);
        for (size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * static_cast<float>(i % 7);
        const std::vector<float> c0 = c;
        QProblem p;
        p.a = a.data();
        p.w = w.data();
        p.c = c.data();
        p.type = f.type;
        p.m = s.m, p.n = s.n, p.k = s.k, p.sam = sam, p.wRowBytes = rowBytes, p.scm = scm, p.scn = scn;
        ExactEnv env(exact);
        // Two sub-ranges, as two threads would run them.
        const int64_t split = s.n / 3;
        const QPath got0 = runIsa(isa, p, 0, split), got1 = runIsa(isa, p, split, s.n);
        const std::string where = std::string(isa.name) + " " + f.name + " m" + std::to_string(s.m) + " n" +
                                  std::to_string(s.n) + " k" + std::to_string(s.k) + (exact ? " exact" : "") +
                                  (layout ? " colmajorC" : "");
        if (split > 0) EXPECT_EQ(pathName(got0), pathName(want)) << where;
        ASSERT_EQ(pathName(got1), pathName(want)) << where;
        int bad = 0;
        for (int64_t i = 0; i < s.m && bad < 3; ++i)
          for (int64_t j = 0; j < s.n && bad < 3; ++j) {
            double ref = 0, mag = 0, qbound = 0;
            for (int64_t q = 0; q < s.k; ++q) {
              const double wv = wd[j * s.k + q], av = a[i * sam + q];
              ref += wv * av;
              mag += std::abs(wv * av);
              qbound += std::abs(wv) * step[i * (s.k / 32) + q / 32] / 2;
            }
            const int64_t at = i * scm + j * scn;
            ref += c0[at];
            const double tol = 1e-6 * mag + 1e-6 + (int8 ? 1.01 * qbound : 0.0) + (amx ? 1.01 * kBf16Products * mag : 0.0);
            if (!(std::abs(c[at] - ref) <= tol)) {
              ++bad;
              ADD_FAILURE() << where << " C[" << i << "][" << j << "] = " << c[at] << ", reference " << ref
                            << " (tolerance " << tol << ")";
            }
          }
        // Padding between rows/columns of C is untouched.
        for (size_t q = 0; q < c.size(); ++q) {
          const bool inside = layout == 0 ? int64_t(q % scm) < s.n : int64_t(q % scn) < s.m;
          if (!inside) ASSERT_EQ(c[q], c0[q]) << where << " wrote padding at " << q;
        }
      }
    }
  }
}

std::vector<Shape3> shapesFor(const Fmt& f) {
  const int64_t b = f.elems;
  std::vector<Shape3> out;
  for (int64_t m : {1, 2, 3, 7, 16, 33})
    for (int64_t n : {1, 3, 64, 257}) {
      out.push_back({m, n, b});
      if (n != 257 || m <= 3) out.push_back({m, n, b == 32 ? 96 : 768});
    }
  out.push_back({1, 64, 4096});
  out.push_back({1, 7, b == 32 ? 608 : 1280});  // 19 blocks: a full group of 16 scales and an odd tail
  out.push_back({4, 33, 4096});
  out.push_back({9, 17, 4096});
  out.push_back({40, 300, 1024});  // several 128-row blocks of decoded weights on the AMX path
  return out;
}

class QuantKernels : public ::testing::TestWithParam<int> {};

TEST_P(QuantKernels, EveryFormatMatchesTheDequantizedReference) {
  const Isa& isa = kIsas[GetParam()];
  if (!hostHas(isa)) GTEST_SKIP() << "host lacks " << isa.feature;
  for (const auto& f : kFormats) {
    SCOPED_TRACE(f.name);
    checkFormat(isa, f, shapesFor(f));
  }
}

INSTANTIATE_TEST_SUITE_P(, QuantKernels, ::testing::Range(0, 5),
                         [](const auto& info) { return std::string(kIsas[info.param].name); });

TEST(QuantKernelsErrors, PartialBlockIsAnError) {
  std::vector<float> a(48, 1.0f), c(1, 0.0f);
  std::vector<uint8_t> w(34 * 2, 0);
  QProblem p;
  p.a = a.data(), p.w = w.data(), p.c = c.data(), p.type = QuantType::q8_0;
  p.m = 1, p.n = 1, p.k = 48, p.sam = 48, p.wRowBytes = 68, p.scm = 1, p.scn = 1;
  try {
    kernels::runQuantAvx2(p, 0, 1, false);
    FAIL() << "k = 48 with q8_0 should throw";
  } catch (const radix::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[qcontract] k=48"), std::string::npos) << e.what();
  }
}

}  // namespace
