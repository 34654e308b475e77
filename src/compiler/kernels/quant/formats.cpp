// Host codecs of the GGUF block formats (radix/quant.h), written from ggml-common.h's block
// layouts and ggml-quants.c's reference quantizers so that the bytes match llama.cpp's
// `llama-quantize` (without an importance matrix) and the floats match its dequantize_row_*.
// Float expressions are evaluated as written (no FMA contraction), as ggml-base compiles them.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "radix/error.h"
#include "radix/quant.h"
#include "runtime/runtime.h"

#pragma clang fp contract(off)

namespace radix {
namespace {

struct FormatInfo {
  QuantType type;
  std::string_view name;
  std::string_view gguf;
  int ggmlId;
  int64_t elems;
  int64_t bytes;
};

constexpr std::array<FormatInfo, 11> kFormats{{
    {QuantType::none, "none", "F32", 0, 1, 4},
    {QuantType::q8_0, "q8_0", "Q8_0", 8, 32, 34},
    {QuantType::q4_0, "q4_0", "Q4_0", 2, 32, 18},
    {QuantType::q4_1, "q4_1", "Q4_1", 3, 32, 20},
    {QuantType::q5_0, "q5_0", "Q5_0", 6, 32, 22},
    {QuantType::q5_1, "q5_1", "Q5_1", 7, 32, 24},
    {QuantType::q4_k, "q4_k", "Q4_K", 12, 256, 144},
    {QuantType::q5_k, "q5_k", "Q5_K", 13, 256, 176},
    {QuantType::q6_k, "q6_k", "Q6_K", 14, 256, 210},
    {QuantType::i8_channel, "i8_channel", "I8_CHANNEL", -1, 1, 1},
    {QuantType::i4_group, "i4_group", "I4_GROUP", -1, 2, 1},
}};

const FormatInfo& info(QuantType type) {
  auto index = static_cast<size_t>(type);
  if (index >= kFormats.size()) throw Error("[quant] invalid QuantType " + std::to_string(index));
  return kFormats[index];
}

bool isBlockFormat(QuantType type) { return type >= QuantType::q8_0 && type <= QuantType::q6_k; }

void checkRow(QuantType type, int64_t n, std::string_view op) {
  if (!isBlockFormat(type))
    throw Error("[quant] " + std::string(op) + ": " + std::string(quantName(type)) + " is not a GGUF block format");
  int64_t qk = info(type).elems;
  if (n < 0 || n % qk != 0)
    throw Error("[quant] " + std::string(op) + ": " + std::string(quantName(type)) + " row of " + std::to_string(n) +
                " elements is not a whole number of " + std::to_string(qk) + "-element blocks");
}

uint16_t toHalf(float f) { return detail::floatToHalf(f); }
float fromHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return detail::halfToFloat(h);
}
void putHalf(uint8_t* p, float f) {
  uint16_t h = toHalf(f);
  std::memcpy(p, &h, 2);
}

// ggml's nearest_int: round half to even through the 1.5*2^23 trick (defined for any input).
int nearestInt(float v) {
  float t = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &t, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// Float -> int as x86's cvttss2si does (the reference's casts compile to it): truncation, and
// INT_MIN for NaN or out-of-range values, which the reference meets when 1/d overflows.
int32_t truncInt(float v) {
  if (!(v > -2147483648.f && v < 2147483648.f)) return INT32_MIN;
  return static_cast<int32_t>(v);
}
// The reference's `(int8_t)(float)` and `(uint8_t)(float)`: the low byte of truncInt.
int toI8(float v) { return static_cast<int8_t>(static_cast<uint32_t>(truncInt(v)) & 0xFFu); }
int toU8(float v) { return static_cast<int>(static_cast<uint32_t>(truncInt(v)) & 0xFFu); }

constexpr float kGroupMaxEps = 1e-15f;

// ---- 32-element formats -------------------------------------------------------------------

void quantizeQ8_0(const float* x, uint8_t* y) {
  float amax = 0.f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  putHalf(y, d);
  for (int j = 0; j < 32; ++j) y[2 + j] = static_cast<uint8_t>(toI8(std::round(x[j] * id)));
}

// q4_0 / q5_0: d = max / -(2^(bits-1)), q = min(2^bits - 1, trunc(x/d + 2^(bits-1) + 0.5)).
void quantizeSymmetric(const float* x, uint8_t* y, int bits) {
  float amax = 0.f, max = 0.f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const int half = 1 << (bits - 1), top = (1 << bits) - 1;
  const float d = max / static_cast<float>(-half);
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  putHalf(y, d);
  const float bias = static_cast<float>(half) + 0.5f;
  uint8_t* qs = bits == 4 ? y + 2 : y + 6;
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    int q0 = static_cast<uint8_t>(std::min(top, toI8(x[j] * id + bias)));
    int q1 = static_cast<uint8_t>(std::min(top, toI8(x[16 + j] * id + bias)));
    qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
  }
  if (bits == 5) std::memcpy(y + 2, &qh, 4);
}

// q4_1 / q5_1: d = (max - min) / (2^bits - 1), m = min.
void quantizeAffine(const float* x, uint8_t* y, int bits) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const int top = (1 << bits) - 1;
  const float d = (max - min) / static_cast<float>(top);
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  putHalf(y, d);
  putHalf(y + 2, min);
  uint8_t* qs = bits == 4 ? y + 4 : y + 8;
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    // q4_1 clamps an int8_t to 15; q5_1 converts to uint8_t without a clamp.
    int q0 = bits == 4 ? static_cast<uint8_t>(std::min(15, toI8((x[j] - min) * id + 0.5f)))
                       : toU8((x[j] - min) * id + 0.5f);
    int q1 = bits == 4 ? static_cast<uint8_t>(std::min(15, toI8((x[16 + j] - min) * id + 0.5f)))
                       : toU8((x[16 + j] - min) * id + 0.5f);
    qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
  }
  if (bits == 5) std::memcpy(y + 4, &qh, 4);
}

void dequantize32(QuantType type, const uint8_t* b, float* y) {
  switch (type) {
    case QuantType::q8_0: {
      const float d = fromHalf(b);
      for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
      return;
    }
    case QuantType::q4_0: {
      const float d = fromHalf(b);
      for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>((b[2 + j] & 0xF) - 8) * d;
        y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
      }
      return;
    }
    case QuantType::q4_1: {
      const float d = fromHalf(b), m = fromHalf(b + 2);
      for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>(b[4 + j] & 0xF) * d + m;
        y[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
      }
      return;
    }
    case QuantType::q5_0: {
      const float d = fromHalf(b);
      uint32_t qh;
      std::memcpy(&qh, b + 2, 4);
      for (int j = 0; j < 16; ++j) {
        int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
        y[j] = static_cast<float>(((b[6 + j] & 0xF) | h0) - 16) * d;
        y[j + 16] = static_cast<float>(((b[6 + j] >> 4) | h1) - 16) * d;
      }
      return;
    }
    case QuantType::q5_1: {
      const float d = fromHalf(b), m = fromHalf(b + 2);
      uint32_t qh;
      std::memcpy(&qh, b + 4, 4);
      for (int j = 0; j < 16; ++j) {
        int h0 = ((qh >> j) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
        y[j] = static_cast<float>((b[8 + j] & 0xF) | h0) * d + m;
        y[j + 16] = static_cast<float>((b[8 + j] >> 4) | h1) * d + m;
      }
      return;
    }
    default: break;
  }
}

// ---- 256-element k-quants -----------------------------------------------------------------

// ggml's make_qkx2_quants: the affine (scale, -min) of n values with levels 0..nmax, searched
// over nstep+1 candidate scales for the least weighted error.
float makeQkx2Quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* theMin, uint8_t* Laux,
                     float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sumW = weights[0];
  float sumX = sumW * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    float w = weights[i];
    sumW += w;
    sumX += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *theMin = -min;
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float bestError = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearestInt(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = diff * diff;
    bestError += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sumL = 0, sumL2 = 0, sumXL = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearestInt(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      float w = weights[i];
      float fl = static_cast<float>(l);
      sumL += w * fl;
      sumL2 += w * fl * fl;
      sumXL += w * fl * x[i];
    }
    float D = sumW * sumL2 - sumL * sumL;
    if (D > 0) {
      float thisScale = (sumW * sumXL - sumX * sumL) / D;
      float thisMin = (sumL2 * sumX - sumL * sumXL) / D;
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = sumXL / sumL2;
      }
      float curError = 0;
      for (int i = 0; i < n; ++i) {
        float diff = thisScale * static_cast<float>(Laux[i]) + thisMin - x[i];
        diff = diff * diff;
        curError += weights[i] * diff;
      }
      if (curError < bestError) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        bestError = curError;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  *theMin = -min;
  return scale;
}

// ggml's make_qx_quants with rmse_type 1 and no importance weights (q6_k): signed levels
// -nmax..nmax-1, stored offset by nmax; returns the scale.
float makeQxQuants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float fnmax = static_cast<float>(nmax);
  float iscale = -fnmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearestInt(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    float w = x[i] * x[i];
    float fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0.f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(fnmax + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearestInt(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      float w = x[i] * x[i];
      float fl = static_cast<float>(l);
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        int l = nearestInt(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j from the 12 packed bytes.
void scaleMinK4(int j, const uint8_t* q, uint8_t& d, uint8_t& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// q4_k / q5_k: 8 sub-blocks of 32 with 6-bit scales and mins, `bits` 4 or 5.
void quantizeQk(const float* x, uint8_t* y, int bits) {
  const int nmax = (1 << bits) - 1;
  uint8_t L[256], Laux[32];
  float weights[32], mins[8], scales[8];
  float maxScale = 0, maxMin = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sumX2 = 0;
    for (int l = 0; l < 32; ++l) sumX2 += xs[l] * xs[l];
    float avX = std::sqrt(sumX2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = avX + std::fabs(xs[l]);
    scales[j] = bits == 4 ? makeQkx2Quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, -1.f, 0.1f, 20)
                          : makeQkx2Quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, -0.5f, 0.1f, 15);
    if (scales[j] > maxScale) maxScale = scales[j];
    if (mins[j] > maxMin) maxMin = mins[j];
  }
  uint8_t* sc = y + 4;
  std::memset(sc, 0, 12);
  const float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
  const float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
  for (int j = 0; j < 8; ++j) {
    auto ls = static_cast<uint8_t>(nearestInt(invScale * scales[j]));
    auto lm = static_cast<uint8_t>(nearestInt(invMin * mins[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      sc[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      sc[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  putHalf(y, maxScale / 63.f);
  putHalf(y + 2, maxMin / 63.f);
  const float dAll = fromHalf(y), mAll = fromHalf(y + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t s, m;
    scaleMinK4(j, sc, s, m);
    const float d = dAll * static_cast<float>(s);
    if (d == 0.f) continue;
    const float dm = mAll * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      int l = nearestInt((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
  if (bits == 4) {
    uint8_t* q = y + 16;
    for (int j = 0; j < 256; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    return;
  }
  uint8_t* qh = y + 16;
  uint8_t* ql = y + 48;
  std::memset(qh, 0, 32);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < 256; n += 64, ql += 32) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
  }
}

void quantizeQ6K(const float* x, uint8_t* y) {
  int8_t L[256];
  float scales[16];
  float maxScale = 0, maxAbsScale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    scales[ib] = makeQxQuants(16, 32, x + 16 * ib, L + 16 * ib);
    if (std::fabs(scales[ib]) > maxAbsScale) {
      maxAbsScale = std::fabs(scales[ib]);
      maxScale = scales[ib];
    }
  }
  std::memset(y, 0, 210);
  if (maxAbsScale < kGroupMaxEps) return;  // all-zero block: d = 0 (f16 +0 is all zero bits)
  auto* sc = reinterpret_cast<int8_t*>(y + 192);
  const float iscale = -128.f / maxScale;
  putHalf(y + 208, 1 / iscale);
  for (int ib = 0; ib < 16; ++ib) sc[ib] = static_cast<int8_t>(std::min(127, nearestInt(iscale * scales[ib])));
  const float dAll = fromHalf(y + 208);
  for (int j = 0; j < 16; ++j) {
    const float d = dAll * static_cast<float>(sc[j]);
    if (d == 0.f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = nearestInt(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }
  uint8_t* ql = y;
  uint8_t* qh = y + 128;
  for (int j = 0; j < 256; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      auto q = [&](int o) { return static_cast<uint8_t>(L[j + l + o]); };
      ql[l] = static_cast<uint8_t>((q(0) & 0xF) | ((q(64) & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q(32) & 0xF) | ((q(96) & 0xF) << 4));
      qh[l] = static_cast<uint8_t>((q(0) >> 4) | ((q(32) >> 4) << 2) | ((q(64) >> 4) << 4) | ((q(96) >> 4) << 6));
    }
  }
}

void dequantize256(QuantType type, const uint8_t* b, float* y) {
  if (type == QuantType::q6_k) {
    const float d = fromHalf(b + 208);
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        int is = l / 16;
        int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
    return;
  }
  const bool five = type == QuantType::q5_k;
  const float d = fromHalf(b), min = fromHalf(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = five ? b + 48 : b + 16;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < 256; j += 64, q += 32, is += 2) {
    uint8_t s, m;
    scaleMinK4(is, scales, s, m);
    const float d1 = d * static_cast<float>(s), m1 = min * static_cast<float>(m);
    scaleMinK4(is + 1, scales, s, m);
    const float d2 = d * static_cast<float>(s), m2 = min * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      int v = (q[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0);
      *y++ = d1 * static_cast<float>(v) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      int v = (q[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0);
      *y++ = d2 * static_cast<float>(v) - m2;
    }
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

// Offsets of the f16 scale fields that checkBlocks validates, and their names.
struct ScaleField {
  int offset;
  const char* what;
};

std::span<const ScaleField> scaleFields(QuantType type) {
  static constexpr ScaleField kD[] = {{0, "scale"}};
  static constexpr ScaleField kDm[] = {{0, "scale"}, {2, "min"}};
  static constexpr ScaleField kDdmin[] = {{0, "scale"}, {2, "dmin"}};
  static constexpr ScaleField kQ6[] = {{208, "scale"}};
  switch (type) {
    case QuantType::q8_0:
    case QuantType::q4_0:
    case QuantType::q5_0: return kD;
    case QuantType::q4_1:
    case QuantType::q5_1: return kDm;
    case QuantType::q4_k:
    case QuantType::q5_k: return kDdmin;
    case QuantType::q6_k: return kQ6;
    default: return {};
  }
}

}  // namespace

std::string_view quantName(QuantType type) { return info(type).name; }
std::string_view ggufTypeName(QuantType type) { return info(type).gguf; }
int ggmlTypeId(QuantType type) { return isBlockFormat(type) ? info(type).ggmlId : -1; }
int64_t blockElems(QuantType type) { return info(type).elems; }
int64_t blockBytes(QuantType type) { return info(type).bytes; }

QuantType parseQuantType(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const FormatInfo& f : kFormats)
    if (f.type != QuantType::none && lower == f.name) return f.type;
  throw Error("[quant] unknown quantized type \"" + std::string(name) +
              "\" (expected q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, i8_channel or i4_group)");
}

int64_t rowBytes(QuantType type, int64_t cols) {
  const FormatInfo& f = info(type);
  if (type == QuantType::none) return cols * 4;
  if (cols < 0 || cols % f.elems != 0)
    throw Error("[quant] " + std::string(f.name) + ": row of " + std::to_string(cols) +
                " elements is not a whole number of " + std::to_string(f.elems) + "-element blocks");
  return cols / f.elems * f.bytes;
}

void quantizeRow(QuantType type, const float* x, int64_t n, uint8_t* out) {
  checkRow(type, n, "quantizeRow");
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      throw Error("[quant] quantizeRow: " + std::string(quantName(type)) + ": element " + std::to_string(i) + " is " +
                  (std::isnan(x[i]) ? "nan" : "inf"));
  const int64_t qk = blockElems(type), bb = blockBytes(type);
  for (int64_t b = 0; b < n / qk; ++b) {
    const float* xb = x + b * qk;
    uint8_t* yb = out + b * bb;
    switch (type) {
      case QuantType::q8_0: quantizeQ8_0(xb, yb); break;
      case QuantType::q4_0: quantizeSymmetric(xb, yb, 4); break;
      case QuantType::q5_0: quantizeSymmetric(xb, yb, 5); break;
      case QuantType::q4_1: quantizeAffine(xb, yb, 4); break;
      case QuantType::q5_1: quantizeAffine(xb, yb, 5); break;
      case QuantType::q4_k: quantizeQk(xb, yb, 4); break;
      case QuantType::q5_k: quantizeQk(xb, yb, 5); break;
      case QuantType::q6_k: quantizeQ6K(xb, yb); break;
      default: break;
    }
  }
  // Values beyond f16's range give an infinite scale, which no reader accepts.
  checkBlocks(type, {out, static_cast<size_t>(n / qk * bb)}, "quantizeRow");
}

void dequantizeRow(QuantType type, const uint8_t* blocks, int64_t n, float* y) {
  checkRow(type, n, "dequantizeRow");
  const int64_t qk = blockElems(type), bb = blockBytes(type);
  for (int64_t b = 0; b < n / qk; ++b) {
    if (qk == 32)
      dequantize32(type, blocks + b * bb, y + b * qk);
    else
      dequantize256(type, blocks + b * bb, y + b * qk);
  }
}

void checkBlocks(QuantType type, std::span<const uint8_t> bytes, std::string_view name) {
  if (!isBlockFormat(type))
    throw Error("[quant] " + std::string(name) + ": " + std::string(quantName(type)) + " is not a GGUF block format");
  const auto bb = static_cast<size_t>(blockBytes(type));
  if (bytes.size() % bb != 0)
    throw Error("[quant] " + std::string(name) + ": " + std::to_string(bytes.size()) + " bytes is not a whole number of " +
                std::string(ggufTypeName(type)) + " blocks of " + std::to_string(bb) + " bytes");
  const auto fields = scaleFields(type);
  for (size_t b = 0; b < bytes.size() / bb; ++b) {
    for (const ScaleField& f : fields) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + b * bb + static_cast<size_t>(f.offset), 2);
      if ((h & 0x7c00u) == 0x7c00u)
        throw Error("[quant] " + std::string(name) + ": block " + std::to_string(b) + ": " + f.what + " is " +
                    ((h & 0x3ffu) != 0 ? "nan" : "inf"));
    }
  }
}

}  // namespace radix
