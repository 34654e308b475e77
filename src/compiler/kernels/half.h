#pragma once
// Scalar bf16 and f16 to f32 (bit-exact, subnormals, Inf and NaN included) and f32 to bf16, for
// the tails of the kernels' vector loops and for TUs without F16C or avx512bf16. In an anonymous namespace: each ISA's TU keeps
// its own copy, compiled for its target.
#include <cstdint>
#include <cstring>

namespace {

inline float bf16ToF32(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f rounded to bf16 as arith.truncf and vcvtneps2bf16 do: to nearest even, NaN kept a (quiet) NaN.
inline uint16_t f32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float f16ToF32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    const float f = static_cast<float>(man) * 5.9604644775390625e-8f;  // 2^-24: zero or subnormal
    std::memcpy(&u, &f, 4);
    u |= sign;
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace
