// AVX2 + FMA quantized kernels (qimpl.h), twice: plain AVX2 (vpmaddubsw) and AVX2 + avx_vnni
// (vpdpbusd on ymm), each compiled under its own target so the plain path never executes VNNI.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "compiler/kernels/quant/qkernels.h"
#include "radix/error.h"

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)

#include "compiler/kernels/impl.h"

namespace {

struct V256 {
  using R = __m256;
  static constexpr int W = 8;
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R zero() { return _mm256_setzero_ps(); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static R loadN(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static void storeN(float* p, R v, int n) { _mm256_maskstore_ps(p, mask(n), v); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
};

#define RADIX_Q_NS qavx2
#define RADIX_Q_VNNI 0
#define RADIX_Q_V V256
#define RADIX_Q_MR 6
#define RADIX_Q_NV 2
#include "compiler/kernels/quant/qimpl.h"
#undef RADIX_Q_NS
#undef RADIX_Q_VNNI

}  // namespace

#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), apply_to = function)

namespace {
#define RADIX_Q_NS qavx2vnni
#define RADIX_Q_VNNI 1
#include "compiler/kernels/quant/qimpl.h"
}  // namespace

#pragma clang attribute pop

namespace radix::kernels {

QPath runQuantAvx2(const QProblem& p, int64_t n0, int64_t n1, bool vnni) {
  QPath path = QPath::scalar;
  if (vnni ? qavx2vnni::run(p, n0, n1, path) : qavx2::run(p, n0, n1, path)) return path;
  // i8_channel / i4_group: the dispatcher runs the scalar path (runQuantX86_64) for them.
  throw Error("[qcontract] no avx2 kernel for " + std::to_string(static_cast<int>(p.type)));
}

}  // namespace radix::kernels
