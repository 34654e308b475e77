// GGUF block formats (radix/quant.h): dequantizeRow against decoders written here from the
// layouts in ggml-common.h, element by element; quantize -> dequantize round trips within each
// format's error bound; hand-derived blocks; f16 scales rounded as F16C does; validation errors.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <radix/quant.h>
#include <radix/radix.h>
#include <radix/testing.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using radix::QuantType;
using radix::testing::errorOf;

constexpr QuantType kBlockTypes[] = {QuantType::q8_0, QuantType::q4_0, QuantType::q4_1, QuantType::q5_0,
                                     QuantType::q5_1, QuantType::q4_k, QuantType::q5_k, QuantType::q6_k};

// ---- independent reference decoders ---------------------------------------------------------

/// IEEE binary16 -> f32 from the definition (sign, 5-bit exponent biased by 15, 10-bit fraction).
float half(const uint8_t* p) {
  const unsigned h = p[0] | (p[1] << 8);
  const int sign = (h >> 15) ? -1 : 1;
  const int e = (h >> 10) & 31;
  const int f = h & 1023;
  if (e == 31) return f ? NAN : sign * INFINITY;
  if (e == 0) return static_cast<float>(sign * std::ldexp(static_cast<double>(f), -24));
  return static_cast<float>(sign * std::ldexp(1.0 + f / 1024.0, e - 15));
}

/// Bit `i` of the little-endian bit string at p.
int bit(const uint8_t* p, int i) { return (p[i / 8] >> (i % 8)) & 1; }
/// `n` bits of p starting at bit `i`, least significant first.
int bits(const uint8_t* p, int i, int n) {
  int v = 0;
  for (int k = 0; k < n; ++k) v |= bit(p, i + k) << k;
  return v;
}

/// Element e of one block. Products of a f16 scale and small integers are exact in f32, so the
/// one rounding happens where the format adds a min (or where q6_k multiplies a third factor).
float referenceElement(QuantType t, const uint8_t* b, int e) {
  switch (t) {
    case QuantType::q8_0: return half(b) * static_cast<float>(static_cast<int8_t>(b[2 + e]));
    case QuantType::q4_0: {  // element j < 16 in the low nibble of qs[j], j >= 16 in the high one of qs[j-16]
      const int q = bits(b + 2, (e % 16) * 8 + (e / 16) * 4, 4);
      return half(b) * static_cast<float>(q - 8);
    }
    case QuantType::q4_1: {
      const int q = bits(b + 4, (e % 16) * 8 + (e / 16) * 4, 4);
      return half(b) * static_cast<float>(q) + half(b + 2);
    }
    case QuantType::q5_0: {  // the fifth bit of element e is bit e of qh
      const int q = bits(b + 6, (e % 16) * 8 + (e / 16) * 4, 4) | (bit(b + 2, e) << 4);
      return half(b) * static_cast<float>(q - 16);
    }
    case QuantType::q5_1: {
      const int q = bits(b + 8, (e % 16) * 8 + (e / 16) * 4, 4) | (bit(b + 4, e) << 4);
      return half(b) * static_cast<float>(q) + half(b + 2);
    }
    case QuantType::q4_k:
    case QuantType::q5_k: {
      // 8 sub-blocks of 32; sub-block s's 6-bit scale and min: s < 4 in the low 6 bits of
      // scales[s] / scales[s+4]; s >= 4: low 4 bits in scales[s+4]'s nibbles, high 2 bits in the
      // top bits of scales[s-4] / scales[s].
      const uint8_t* sc = b + 4;
      const int s = e / 32;
      int scale, min;
      if (s < 4) {
        scale = bits(sc, 8 * s, 6);
        min = bits(sc, 8 * (s + 4), 6);
      } else {
        scale = bits(sc, 8 * (s + 4), 4) | (bits(sc, 8 * (s - 4) + 6, 2) << 4);
        min = bits(sc, 8 * (s + 4) + 4, 4) | (bits(sc, 8 * s + 6, 2) << 4);
      }
      // 64-element chunks share 32 bytes: the first 32 elements in low nibbles, the next in high.
      const int chunk = e / 64, within = e % 32, upper = (e % 64) / 32;
      const uint8_t* qs = t == QuantType::q4_k ? b + 16 : b + 48;
      int q = bits(qs, (chunk * 32 + within) * 8 + upper * 4, 4);
      if (t == QuantType::q5_k) q |= bit(b + 16, within * 8 + chunk * 2 + upper) << 4;
      const float d = half(b) * static_cast<float>(scale);
      const float m = half(b + 2) * static_cast<float>(min);
      return d * static_cast<float>(q) - m;
    }
    case QuantType::q6_k: {
      // Halves of 128; in a half, quarter k of 32 takes ql[l + 32*(k&1)]'s low (k < 2) or high
      // nibble and bits 2k..2k+1 of qh[l]; 16 sub-blocks of 16 with int8 scales.
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int lo = bits(b + h * 64, (l + 32 * (k & 1)) * 8 + (k / 2) * 4, 4);
      const int hi = bits(b + 128 + h * 32, l * 8 + 2 * k, 2);
      const int q = (lo | (hi << 4)) - 32;
      const auto scale = static_cast<int8_t>(b[192 + e / 16]);
      return static_cast<float>(static_cast<double>(half(b + 208)) * scale * q);  // exact in double, one rounding
    }
    default: return NAN;
  }
}

std::vector<float> referenceRow(QuantType t, const std::vector<uint8_t>& bytes) {
  const int64_t qk = radix::blockElems(t), bb = radix::blockBytes(t);
  std::vector<float> out;
  for (size_t b = 0; b < bytes.size() / bb; ++b)
    for (int e = 0; e < qk; ++e) out.push_back(referenceElement(t, bytes.data() + b * bb, e));
  return out;
}

/// Offsets of the f16 fields of a block: scale first, then min/dmin if any.
std::vector<int> halfFields(QuantType t) {
  switch (t) {
    case QuantType::q4_1:
    case QuantType::q5_1:
    case QuantType::q4_k:
    case QuantType::q5_k: return {0, 2};
    case QuantType::q6_k: return {208};
    default: return {0};
  }
}

void setHalf(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h);
  p[1] = static_cast<uint8_t>(h >> 8);
}

// Equal bits (so -0 != +0), first mismatch reported.
void expectSameBits(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i]))
        << what << ": element " << i << ": want " << want[i] << " got " << got[i];
}

std::vector<float> dequantize(QuantType t, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  radix::dequantizeRow(t, bytes.data(), n, y.data());
  return y;
}

std::vector<uint8_t> quantize(QuantType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(static_cast<size_t>(radix::rowBytes(t, static_cast<int64_t>(x.size()))));
  radix::quantizeRow(t, x.data(), static_cast<int64_t>(x.size()), q.data());
  return q;
}

// ---- tests ----------------------------------------------------------------------------------

TEST(QuantFormats, NamesIdsAndSizes) {
  struct Row {
    QuantType t;
    const char* name;
    const char* gguf;
    int id;
    int64_t elems, bytes, row64or256;
  };
  for (const Row& r : std::vector<Row>{{QuantType::q8_0, "q8_0", "Q8_0", 8, 32, 34, 68},
                                       {QuantType::q4_0, "q4_0", "Q4_0", 2, 32, 18, 36},
                                       {QuantType::q4_1, "q4_1", "Q4_1", 3, 32, 20, 40},
                                       {QuantType::q5_0, "q5_0", "Q5_0", 6, 32, 22, 44},
                                       {QuantType::q5_1, "q5_1", "Q5_1", 7, 32, 24, 48},
                                       {QuantType::q4_k, "q4_k", "Q4_K", 12, 256, 144, 144},
                                       {QuantType::q5_k, "q5_k", "Q5_K", 13, 256, 176, 176},
                                       {QuantType::q6_k, "q6_k", "Q6_K", 14, 256, 210, 210}}) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(radix::quantName(r.t), r.name);
    EXPECT_EQ(radix::ggufTypeName(r.t), r.gguf);
    EXPECT_EQ(radix::ggmlTypeId(r.t), r.id);
    EXPECT_EQ(radix::blockElems(r.t), r.elems);
    EXPECT_EQ(radix::blockBytes(r.t), r.bytes);
    EXPECT_EQ(radix::rowBytes(r.t, r.elems == 32 ? 64 : 256), r.row64or256);
    EXPECT_EQ(radix::rowBytes(r.t, 0), 0);
    EXPECT_EQ(radix::parseQuantType(r.name), r.t);
    EXPECT_EQ(radix::parseQuantType(r.gguf), r.t);
  }
  EXPECT_EQ(radix::ggmlTypeId(QuantType::i4_group), -1);
  EXPECT_EQ(radix::rowBytes(QuantType::i8_channel, 96), 96);
  EXPECT_EQ(radix::rowBytes(QuantType::i4_group, 96), 48);
  EXPECT_EQ(radix::parseQuantType("I4_GROUP"), QuantType::i4_group);
  EXPECT_EQ(errorOf([] { radix::parseQuantType("q3_k"); }).substr(0, 35), "[quant] unknown quantized type \"q3_");
  EXPECT_EQ(errorOf([] { radix::rowBytes(QuantType::q4_k, 4096 + 32); }),
            "[quant] q4_k: row of 4128 elements is not a whole number of 256-element blocks");
  EXPECT_EQ(errorOf([] { radix::rowBytes(QuantType::i4_group, 7); }).substr(0, 17), "[quant] i4_group:");
  EXPECT_EQ(errorOf([] { radix::rowBytes(static_cast<QuantType>(200), 32); }), "[quant] invalid QuantType 200");
}

TEST(QuantFormats, DequantizeMatchesReferenceDecoderOnRandomBlocks) {
  // Scale patterns: ordinary, the largest finite, zero, -0, smallest and largest subnormal, tiny
  // normal, negative large; then random finite halves.
  const std::vector<uint16_t> special = {0x3c00, 0x7bff, 0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0xfbff, 0x2e66};
  std::mt19937 rng(18);
  for (QuantType t : kBlockTypes) {
    SCOPED_TRACE(std::string(radix::quantName(t)));
    const int64_t qk = radix::blockElems(t), bb = radix::blockBytes(t);
    for (int64_t blocks : {1, 3, 17}) {
      std::vector<uint8_t> bytes(static_cast<size_t>(blocks * bb));
      for (int round = 0; round < 12; ++round) {
        for (auto& v : bytes) v = static_cast<uint8_t>(rng());
        for (int64_t b = 0; b < blocks; ++b) {
          for (int off : halfFields(t)) {
            uint16_t h = static_cast<uint16_t>(rng());
            if ((h & 0x7c00) == 0x7c00) h &= 0xbfff;  // finite
            if (rng() % 2) h = special[(b + off + round) % special.size()];
            setHalf(bytes.data() + b * bb + off, h);
          }
        }
        expectSameBits(referenceRow(t, bytes), dequantize(t, bytes, blocks * qk),
                       std::to_string(blocks) + " blocks, round " + std::to_string(round));
      }
      // Extreme quant bytes: all ones and all zeros.
      for (uint8_t fill : {uint8_t{0xff}, uint8_t{0x00}}) {
        std::fill(bytes.begin(), bytes.end(), fill);
        for (int64_t b = 0; b < blocks; ++b)
          for (int off : halfFields(t)) setHalf(bytes.data() + b * bb + off, 0x7bff);
        expectSameBits(referenceRow(t, bytes), dequantize(t, bytes, blocks * qk), "fill");
      }
    }
  }
}

TEST(QuantFormats, HandDerivedBlocks) {
  // q8_0 of {-127, -15, -14, ..., 15}: amax 127, so d = 1 (f16 0x3c00) and q = x.
  std::vector<float> ramp(32);
  for (int j = 0; j < 32; ++j) ramp[j] = j == 0 ? -127.f : static_cast<float>(j - 16);
  std::vector<uint8_t> want = {0x00, 0x3c};
  for (float v : ramp) want.push_back(static_cast<uint8_t>(static_cast<int8_t>(v)));
  EXPECT_EQ(quantize(QuantType::q8_0, ramp), want);
  expectSameBits(ramp, dequantize(QuantType::q8_0, want, 32), "q8_0 ramp");

  // q4_0 of {-8..7, -8..7}: the first largest magnitude is -8, so d = -8 / -8 = 1 and q = x + 8.
  std::vector<float> nib(32);
  for (int j = 0; j < 32; ++j) nib[j] = static_cast<float>(j % 16 - 8);
  want = {0x00, 0x3c};
  for (int j = 0; j < 16; ++j) want.push_back(static_cast<uint8_t>(j | (j << 4)));
  EXPECT_EQ(quantize(QuantType::q4_0, nib), want);
  expectSameBits(nib, dequantize(QuantType::q4_0, want, 32), "q4_0 ramp");

  // q4_1 of {0, 0.5, ..., 7.5} twice: min 0, d = 7.5 / 15 = 0.5 (0x3800), q = 2x.
  std::vector<float> half16(32);
  for (int j = 0; j < 32; ++j) half16[j] = 0.5f * static_cast<float>(j % 16);
  want = {0x00, 0x38, 0x00, 0x00};
  for (int j = 0; j < 16; ++j) want.push_back(static_cast<uint8_t>(j | (j << 4)));
  EXPECT_EQ(quantize(QuantType::q4_1, half16), want);

  // q5_0 of {-16..15}: d = -16 / -16 = 1, q = x + 16; elements 16..31 have the fifth bit set.
  std::vector<float> five(32);
  for (int j = 0; j < 32; ++j) five[j] = static_cast<float>(j - 16);
  want = {0x00, 0x3c, 0x00, 0x00, 0xff, 0xff};
  for (int j = 0; j < 16; ++j) want.push_back(static_cast<uint8_t>(j | (j << 4)));
  EXPECT_EQ(quantize(QuantType::q5_0, five), want);
  expectSameBits(five, dequantize(QuantType::q5_0, want, 32), "q5_0 ramp");

  // All-zero rows: zero scales (-0 where the reference divides by a negative level count, as
  // q4_0's d = 0 / -8), zero values (+-0).
  for (QuantType t : kBlockTypes) {
    std::vector<float> zeros(512, 0.f);
    std::vector<uint8_t> q = quantize(t, zeros);
    for (int off : halfFields(t)) EXPECT_EQ((q[off] | (q[off + 1] << 8)) & 0x7fff, 0) << radix::quantName(t);
    for (float v : dequantize(t, q, 512)) ASSERT_EQ(v, 0.f) << radix::quantName(t);
  }
}

// Stored scales round to nearest even, as F16C's vcvtps2ph (ggml's GGML_FP32_TO_FP16) does:
// q8_0 stores d = amax / 127.
__attribute__((target("f16c"))) uint16_t f16c(float f) { return static_cast<uint16_t>(_cvtss_sh(f, 0)); }

TEST(QuantFormats, ScalesRoundLikeF16c) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "host lacks f16c";
  std::mt19937 rng(7);
  std::vector<float> x(32, 0.f);
  for (int i = 0; i < 20000; ++i) {
    // Random magnitudes over f16's subnormal and normal range, and exact ties (13 low bits 0x1000).
    uint32_t bitsv = 0x33000000u + rng() % (0x477f0000u - 0x33000000u);
    if (i % 3 == 0) bitsv = (bitsv & ~0x1fffu) | 0x1000u;
    const float d = std::bit_cast<float>(bitsv);
    x[5] = d * 127.f;
    if (!std::isfinite(x[5]) || x[5] / 127 != d) continue;
    std::vector<uint8_t> q = quantize(QuantType::q8_0, x);
    ASSERT_EQ(q[0] | (q[1] << 8), f16c(d)) << "d = " << d;
  }
}

TEST(QuantFormats, RoundTripWithinErrorBound) {
  // Per format: the bound on |x - x'| over a block as a fraction of the block's (max - min) for
  // the 32-element formats (half a step, a full step where the symmetric formats clamp the top
  // level, plus the f16 rounding of scale and min), and on the RMS error relative to the data's
  // RMS for all of them.
  struct Row {
    QuantType t;
    double maxOfRange;
    double rms;
  };
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (const Row& r : std::vector<Row>{{QuantType::q8_0, 0.5 / 127 * 1.5, 0.01},
                                       {QuantType::q4_0, 1.0 / 8 * 1.02, 0.16},
                                       {QuantType::q4_1, 0.5 / 15 * 1.1, 0.11},
                                       {QuantType::q5_0, 1.0 / 16 * 1.02, 0.08},
                                       {QuantType::q5_1, 0.5 / 31 * 1.1, 0.055},
                                       {QuantType::q4_k, 0, 0.1},
                                       {QuantType::q5_k, 0, 0.05},
                                       {QuantType::q6_k, 0, 0.03}}) {
    SCOPED_TRACE(std::string(radix::quantName(r.t)));
    for (float scale : {1.f, 1e-3f, 300.f}) {
      std::vector<float> x(256 * 5);
      for (size_t i = 0; i < x.size(); ++i) x[i] = scale * (i % 97 == 0 ? 4.f * normal(rng) : normal(rng));
      const std::vector<float> y = dequantize(r.t, quantize(r.t, x), static_cast<int64_t>(x.size()));
      double err2 = 0, x2 = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        err2 += (x[i] - y[i]) * (x[i] - y[i]);
        x2 += x[i] * x[i];
      }
      EXPECT_LT(std::sqrt(err2 / x2), r.rms) << "scale " << scale;
      if (r.maxOfRange == 0) continue;
      for (size_t b = 0; b < x.size(); b += 32) {
        float lo = 0, hi = 0;
        for (size_t i = b; i < b + 32; ++i) {
          lo = std::min(lo, x[i]);
          hi = std::max(hi, x[i]);
        }
        const double bound = r.maxOfRange * (hi - lo);
        for (size_t i = b; i < b + 32; ++i) ASSERT_LE(std::fabs(x[i] - y[i]), bound) << "element " << i;
      }
    }
  }
}

TEST(QuantFormats, ErrorsOnBadSizesAndNonFiniteValues) {
  std::vector<float> x(512, 1.f);
  std::vector<uint8_t> q(1024);
  struct Row {
    std::function<void()> call;
    std::string want;
  };
  const std::vector<Row> rows = {
      {[&] { radix::quantizeRow(QuantType::q8_0, x.data(), 33, q.data()); },
       "[quant] quantizeRow: q8_0 row of 33 elements is not a whole number of 32-element blocks"},
      {[&] { radix::dequantizeRow(QuantType::q6_k, q.data(), 255, x.data()); },
       "[quant] dequantizeRow: q6_k row of 255 elements is not a whole number of 256-element blocks"},
      {[&] { radix::dequantizeRow(QuantType::q4_0, q.data(), -32, x.data()); },
       "[quant] dequantizeRow: q4_0 row of -32 elements is not a whole number of 32-element blocks"},
      {[&] { radix::quantizeRow(QuantType::i8_channel, x.data(), 32, q.data()); },
       "[quant] quantizeRow: i8_channel is not a GGUF block format"},
      {[&] {
         x[40] = NAN;
         radix::quantizeRow(QuantType::q4_k, x.data(), 256, q.data());
       },
       "[quant] quantizeRow: q4_k: element 40 is nan"},
      {[&] {
         x[40] = 1e6f;  // d = 1e6 / 8 does not fit f16
         radix::quantizeRow(QuantType::q4_0, x.data(), 64, q.data());
       },
       "[quant] quantizeRow: block 1: scale is inf"},
  };
  for (const Row& r : rows) EXPECT_EQ(errorOf(r.call), r.want);
  radix::quantizeRow(QuantType::q8_0, x.data(), 0, q.data());  // empty rows are fine
  radix::dequantizeRow(QuantType::q8_0, q.data(), 0, x.data());
}

TEST(QuantFormats, CheckBlocksRejectsNonFiniteScales) {
  struct Row {
    QuantType t;
    int offset;  // of the poisoned f16 in block 2
    uint16_t value;
    const char* want;
  };
  for (const Row& r : std::vector<Row>{{QuantType::q8_0, 0, 0x7e00, "[quant] w: block 2: scale is nan"},
                                       {QuantType::q4_0, 0, 0xfc00, "[quant] w: block 2: scale is inf"},
                                       {QuantType::q4_1, 2, 0x7c00, "[quant] w: block 2: min is inf"},
                                       {QuantType::q5_0, 0, 0x7c01, "[quant] w: block 2: scale is nan"},
                                       {QuantType::q5_1, 2, 0xfe00, "[quant] w: block 2: min is nan"},
                                       {QuantType::q4_k, 0, 0x7c00, "[quant] w: block 2: scale is inf"},
                                       {QuantType::q5_k, 2, 0x7d00, "[quant] w: block 2: dmin is nan"},
                                       {QuantType::q6_k, 208, 0xfc00, "[quant] w: block 2: scale is inf"}}) {
    SCOPED_TRACE(std::string(radix::quantName(r.t)));
    const auto bb = static_cast<size_t>(radix::blockBytes(r.t));
    std::vector<uint8_t> bytes(4 * bb, 0x7c);  // quant bytes that look like infinities do not matter
    for (size_t b = 0; b < 4; ++b)
      for (int off : halfFields(r.t)) setHalf(bytes.data() + b * bb + off, 0x3c00);
    EXPECT_NO_THROW(radix::checkBlocks(r.t, bytes, "w"));
    setHalf(bytes.data() + 2 * bb + r.offset, r.value);
    EXPECT_EQ(errorOf([&] { radix::checkBlocks(r.t, bytes, "w"); }), r.want);
    EXPECT_TRUE(errorOf([&] { radix::checkBlocks(r.t, std::span(bytes).first(bb + 1), "w"); })
                    .starts_with("[quant] w: " + std::to_string(bb + 1) + " bytes is not"));
  }
}

// ---- whole tensors: quantize / dequantizeHost -------------------------------------------------

radix::Tensor randomWeight(int64_t rows, int64_t cols, radix::DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 0.5f);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (float& x : v) x = normal(rng);
  return radix::Tensor::fromValues(radix::Platform::cpu(), radix::Shape({rows, cols}, dtype), v);
}

TEST(QuantFormats, QuantizeTensorGgufFormatsRowByRow) {
  for (QuantType t : kBlockTypes) {
    SCOPED_TRACE(std::string(radix::quantName(t)));
    const int64_t cols = radix::blockElems(t) * 3, rows = 5;
    const radix::Tensor w = randomWeight(rows, cols, radix::DType::bf16, 11);
    const radix::QuantizedTensor q = radix::quantize(w, t);
    EXPECT_EQ(q.type, t);
    EXPECT_EQ(q.cols, cols);
    EXPECT_EQ(q.rows(), rows);
    EXPECT_EQ(q.data.dtype(), radix::DType::u8);
    ASSERT_EQ(q.data.shape().dim(1), radix::rowBytes(t, cols));
    const std::vector<float> x = w.toVector<float>();
    const std::vector<uint8_t> bytes = q.data.toBytes();
    for (int64_t r = 0; r < rows; ++r) {  // each row is quantizeRow of the (bf16-rounded) row
      std::vector<float> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
      EXPECT_EQ(quantize(t, row), std::vector<uint8_t>(bytes.begin() + r * q.data.shape().dim(1),
                                                       bytes.begin() + (r + 1) * q.data.shape().dim(1)));
    }
    const radix::Tensor y = radix::dequantizeHost(q);
    EXPECT_EQ(y.shape().dim(0), rows);
    EXPECT_EQ(y.shape().dim(1), cols);
    expectSameBits(referenceRow(t, bytes), y.toVector<float>(), "dequantizeHost");
  }
}

TEST(QuantFormats, QuantizeTensorIntFormats) {
  // i8_channel: s = f16(amax / 127) per row; i4_group: s = f16(max / -8) per group, q in 0..15
  // around 8. Reference: decode the stored bytes here and bound the error by half a step (plus
  // the clamp of the top level for i4).
  const radix::Tensor w = randomWeight(3, 256, radix::DType::f32, 5);
  const std::vector<float> x = w.toVector<float>();
  {
    const radix::QuantizedTensor q = radix::quantize(w, QuantType::i8_channel);
    ASSERT_TRUE(q.scales);
    EXPECT_EQ(q.data.dtype(), radix::DType::i8);
    EXPECT_EQ(q.scales->dtype(), radix::DType::f16);
    const std::vector<float> s = q.scales->toVector<float>();
    const std::vector<int64_t> levels = q.data.toVector<int64_t>();
    const std::vector<float> y = radix::dequantizeHost(q).toVector<float>();
    for (int64_t r = 0; r < 3; ++r) {
      float amax = 0;
      for (int64_t c = 0; c < 256; ++c) amax = std::max(amax, std::fabs(x[r * 256 + c]));
      EXPECT_NEAR(s[r], amax / 127, amax / 127 / 1024);
      for (int64_t c = 0; c < 256; ++c) {
        const size_t i = static_cast<size_t>(r * 256 + c);
        ASSERT_EQ(y[i], s[r] * static_cast<float>(levels[i]));
        ASSERT_LE(std::fabs(y[i] - x[i]), s[r] * 0.5f + amax / 1024) << i;
      }
    }
  }
  for (int64_t group : {32, 64, 128}) {
    SCOPED_TRACE("group " + std::to_string(group));
    const radix::QuantizedTensor q = radix::quantize(w, QuantType::i4_group, group);
    ASSERT_TRUE(q.scales);
    EXPECT_FALSE(q.zeros);
    EXPECT_EQ(q.group, group);
    EXPECT_EQ(q.data.shape().dim(1), 128);
    EXPECT_EQ(q.scales->shape().dim(1), 256 / group);
    const std::vector<uint8_t> bytes = q.data.toBytes();
    const std::vector<float> s = q.scales->toVector<float>();
    const std::vector<float> y = radix::dequantizeHost(q).toVector<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      const int level = bits(bytes.data(), static_cast<int>(i) * 4, 4);  // low nibble first
      const float scale = s[i / group];
      ASSERT_EQ(y[i], scale * static_cast<float>(level - 8)) << i;
      ASSERT_LE(std::fabs(y[i] - x[i]), std::fabs(scale) * 1.01f) << i;
    }
    // Explicit zeros replace z = 8.
    radix::QuantizedTensor withZeros = q;
    std::vector<float> z(3 * 256 / group, 3.f);
    withZeros.zeros = radix::Tensor::fromValues(radix::Platform::cpu(), radix::Shape({3, 256 / group}, radix::DType::f32), z);
    const std::vector<float> yz = radix::dequantizeHost(withZeros).toVector<float>();
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(yz[i], s[i / group] * static_cast<float>(bits(bytes.data(), static_cast<int>(i) * 4, 4) - 3));
  }
}

TEST(QuantFormats, QuantizeTensorErrors) {
  const radix::Tensor w = randomWeight(2, 96, radix::DType::f32, 1);
  const radix::Tensor nan = radix::Tensor::fromValues(radix::Platform::cpu(), radix::Shape({1, 32}, radix::DType::f32),
                                                      std::vector<float>(32, NAN));
  const radix::Tensor v = radix::Tensor::fromValues(radix::Platform::cpu(), radix::Shape({32}, radix::DType::f32),
                                                    std::vector<float>(32, 1.f));
  struct Row {
    std::function<void()> call;
    std::string want;
  };
  for (const Row& r : std::vector<Row>{
           {[&] { radix::quantize(w, QuantType::q4_k); },
            "[quantize] q4_k: rows of 96 in {2,96}:f32 are not a whole number of 256-element blocks"},
           {[&] { radix::quantize(w, QuantType::i4_group, 48); }, "[quantize] i4_group: group 48 is not 32, 64 or 128"},
           {[&] { radix::quantize(w, QuantType::i4_group, 64); },
            "[quantize] i4_group: 96 columns of {2,96}:f32 are not a whole number of groups of 64"},
           {[&] { radix::quantize(nan, QuantType::q8_0); }, "[quantize] element 0 of {1,32}:f32 is nan"},
           {[&] { radix::quantize(v, QuantType::q8_0); }, "[quantize] expects a {rows, cols} weight, got {32}:f32"},
           {[&] { radix::quantize(w, QuantType::none); }, "[quantize] QuantType::none is not a quantized format"},
           {[&] {
              radix::QuantizedTensor q = radix::quantize(w, QuantType::q8_0);
              q.cols = 64;
              radix::dequantizeHost(q);
            },
            "[dequantizeHost] q8_0 of 64 columns needs data {2,68}:u8, got {2,102}:u8"},
           {[&] {
              radix::QuantizedTensor q = radix::quantize(w, QuantType::i4_group, 32);
              q.scales.reset();
              radix::dequantizeHost(q);
            },
            "[dequantizeHost] i4_group needs scales"},
       })
    EXPECT_EQ(errorOf(r.call), r.want);
}

}  // namespace
