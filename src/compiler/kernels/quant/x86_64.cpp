// The scalar quantized path, correct for every format on any x86-64: each weight row is decoded
// into a buffer (dequantizeRow for the GGUF blocks), then dotted with every row of A in f32.
#include <cstring>
#include <vector>

#include "compiler/kernels/impl.h"
#include "compiler/kernels/quant/qkernels.h"

namespace radix::kernels {

namespace {

float scaleAt(const void* base, Elem e, int64_t i) {
  if (e == Elem::f32) return static_cast<const float*>(base)[i];
  const uint16_t h = static_cast<const uint16_t*>(base)[i];
  return e == Elem::f16 ? f16ToF32(h) : bf16ToF32(h);
}

// Row j of the weight, decoded into w[0, k).
void decodeRow(const QProblem& p, int64_t j, float* w) {
  const uint8_t* row = p.w + j * p.wRowBytes;
  switch (p.type) {
    case QuantType::i8_channel: {
      const float s = scaleAt(p.scales, p.scaleType, j);
      const auto* q = reinterpret_cast<const int8_t*>(row);
      for (int64_t x = 0; x < p.k; ++x) w[x] = s * static_cast<float>(q[x]);
      return;
    }
    case QuantType::i4_group: {
      const int64_t groups = p.k / p.group;
      for (int64_t x = 0; x < p.k; ++x) {
        const int64_t g = j * groups + x / p.group;
        const int q = (x % 2 == 0) ? (row[x / 2] & 15) : (row[x / 2] >> 4);
        const float s = scaleAt(p.scales, p.scaleType, g);
        w[x] = p.zeros ? s * (static_cast<float>(q) - scaleAt(p.zeros, p.scaleType, g))
                       : s * static_cast<float>(q - 8);
      }
      return;
    }
    default: dequantizeRow(p.type, row, p.k, w);
  }
}

}  // namespace

QPath runQuantX86_64(const QProblem& p, int64_t n0, int64_t n1) {
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<size_t>(p.k));
  float* w = buffer.data();
  for (int64_t j = n0; j < n1; ++j) {
    decodeRow(p, j, w);
    for (int64_t i = 0; i < p.m; ++i) {
      const float* a = p.a + i * p.sam;
      float acc = 0;
      for (int64_t x = 0; x < p.k; ++x) acc += a[x] * w[x];
      p.c[i * p.scm + j * p.scn] += acc;
    }
  }
  return QPath::scalar;
}

}  // namespace radix::kernels
