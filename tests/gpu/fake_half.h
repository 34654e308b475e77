#pragma once
// f16 and bf16 for the stand-in libraries of tests/gpu (fake_libcublaslt.cpp, fake_libcudnn.cpp):
// widening (the kernels' scalar conversions), and narrowing rounded to nearest even (finite
// values; overflow is not tested).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "compiler/kernels/half.h"

namespace fakegpu {

inline float fromBf16(uint16_t h) { return bf16ToF32(h); }
inline float fromF16(uint16_t h) { return f16ToF32(h); }

inline uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return uint16_t((bits >> 16) | 0x40);
  return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

inline uint16_t toF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (a < std::ldexp(1.f, -14)) return uint16_t(sign | uint16_t(std::nearbyint(a * std::ldexp(1.f, 24))));
  int e;
  const float m = std::frexp(a, &e);                               // a = m * 2^e, m in [0.5, 1)
  const uint32_t mantissa = uint32_t(std::nearbyint(m * 2048.f));  // 11 bits, may carry to 2048
  return uint16_t(sign | ((uint32_t(e + 14) << 10) + (mantissa - 1024)));
}

}  // namespace fakegpu
