// AVX2 + FMA (x86-64-v3) kernels: 6x16 f32 FMA tiles.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "compiler/kernels/kernels.h"

// Everything declared from here on is compiled for this ISA: only this file's own code (in an
// anonymous namespace, plus the run function), never a library template another TU could share.
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
  static float sum(R v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static __m128i load8(const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static __m128i load8N(const uint16_t* p, int n) {
    alignas(16) uint16_t tmp[8] = {};
    std::memcpy(tmp, p, sizeof(uint16_t) * n);
    return _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
  }
  static R widenBf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static R loadBf16(const uint16_t* p) { return widenBf16(load8(p)); }
  static R loadBf16N(const uint16_t* p, int n) { return widenBf16(load8N(p, n)); }
  static R loadF16(const uint16_t* p) { return _mm256_cvtph_ps(load8(p)); }
  static R loadF16N(const uint16_t* p, int n) { return _mm256_cvtph_ps(load8N(p, n)); }
};

struct CfgF32 {
  using V = V256;
  using PackT = float;
  static constexpr int MR = 6, NV = 2, NR = NV * V::W, kPair = 1;
  static constexpr int64_t MC = 192, KC = 256, NC = 4096;
  static void micro(int64_t kc, const float* ap, const float* bp, float* c, int64_t scm, int64_t scn, int mr, int nr) {
    microF32<V, MR, NV>(kc, ap, bp, c, scm, scn, mr, nr);
  }
};

}  // namespace

namespace radix::kernels {
Path runAvx2(const Problem& p, int threads) { return runWith<V256, CfgF32>(p, threads); }
}  // namespace radix::kernels

#include "compiler/kernels/conv_impl.h"

namespace radix::kernels {
void runConvGemmAvx2(const ConvGemmPlan& p, int threads) { convGemm<CfgF32>(p, threads); }
void runConvDirectAvx2(const ConvDirectPlan& p, int threads) { convDirect(p, threads); }
}  // namespace radix::kernels

#pragma clang attribute pop
