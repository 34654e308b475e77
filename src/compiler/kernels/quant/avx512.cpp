// AVX-512 quantized kernels (qimpl.h): the int8 dots on ymm (vpdpbusd with avx512_vnni, else
// vpmaddubsw), the decoded GEMM on 8x32 zmm tiles. Two copies, with and without avx512vnni.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "compiler/kernels/quant/qkernels.h"
#include "radix/error.h"

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c,avx2"))), \
                             apply_to = function)

#include "compiler/kernels/impl.h"

namespace {

struct V512 {
  using R = __m512;
  static constexpr int W = 16;
  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1); }
  static R zero() { return _mm512_setzero_ps(); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static R loadN(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static void storeN(float* p, R v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
};

#define RADIX_Q_NS qavx512
#define RADIX_Q_VNNI 0
#define RADIX_Q_V V512
#define RADIX_Q_MR 8
#define RADIX_Q_NV 2
#include "compiler/kernels/quant/qimpl.h"
#undef RADIX_Q_NS
#undef RADIX_Q_VNNI

}  // namespace

#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c,avx2"))), \
                             apply_to = function)

namespace {
#define RADIX_Q_NS qavx512vnni
#define RADIX_Q_VNNI 2
#include "compiler/kernels/quant/qimpl.h"
}  // namespace

#pragma clang attribute pop

namespace radix::kernels {

QPath runQuantAvx512(const QProblem& p, int64_t n0, int64_t n1, bool vnni) {
  QPath path = QPath::scalar;
  if (vnni ? qavx512vnni::run(p, n0, n1, path) : qavx512::run(p, n0, n1, path)) return path;
  // i8_channel / i4_group: the dispatcher runs the scalar path (runQuantX86_64) for them.
  throw Error("[qcontract] no avx512 kernel for " + std::to_string(static_cast<int>(p.type)));
}

}  // namespace radix::kernels
