// Baseline x86-64 (SSE2) kernels: 4x8 f32 tiles of multiply-adds (no FMA in the baseline).
#include <emmintrin.h>

#include "compiler/kernels/impl.h"

namespace {

struct V128 {
  using R = __m128;
  static constexpr int W = 4;
  static R zero() { return _mm_setzero_ps(); }
  static R load(const float* p) { return _mm_loadu_ps(p); }
  static R loadN(const float* p, int n) {
    alignas(16) float tmp[4] = {};
    for (int i = 0; i < n; ++i) tmp[i] = p[i];
    return _mm_load_ps(tmp);
  }
  static void store(float* p, R v) { _mm_storeu_ps(p, v); }
  static void storeN(float* p, R v, int n) {
    alignas(16) float tmp[4];
    _mm_store_ps(tmp, v);
    for (int i = 0; i < n; ++i) p[i] = tmp[i];
  }
  static R set1(float x) { return _mm_set1_ps(x); }
  static R fma(R a, R b, R c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static R add(R a, R b) { return _mm_add_ps(a, b); }
  static float sum(R v) {
    alignas(16) float t[4];
    _mm_store_ps(t, v);
    return (t[0] + t[1]) + (t[2] + t[3]);
  }
  static R widenBf16(__m128i h) { return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h)); }
  static R loadBf16(const uint16_t* p) { return widenBf16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static R loadBf16N(const uint16_t* p, int n) {
    alignas(16) uint16_t tmp[8] = {};
    for (int i = 0; i < n; ++i) tmp[i] = p[i];
    return loadBf16(tmp);
  }
  static R loadF16(const uint16_t* p) { return _mm_setr_ps(f16ToF32(p[0]), f16ToF32(p[1]), f16ToF32(p[2]), f16ToF32(p[3])); }
  static R loadF16N(const uint16_t* p, int n) {
    alignas(16) float tmp[4] = {};
    for (int i = 0; i < n; ++i) tmp[i] = f16ToF32(p[i]);
    return _mm_load_ps(tmp);
  }
};

struct CfgF32 {
  using V = V128;
  using PackT = float;
  static constexpr int MR = 4, NV = 2, NR = NV * V::W, kPair = 1;
  static constexpr int64_t MC = 128, KC = 256, NC = 4096;
  static void micro(int64_t kc, const float* ap, const float* bp, float* c, int64_t scm, int64_t scn, int mr, int nr,
                    Ahead ahead = {}) {
    microF32<V, MR, NV>(kc, ap, bp, c, scm, scn, mr, nr, ahead);
  }
};

}  // namespace

#include "compiler/kernels/bytes_impl.h"

namespace radix::kernels {
Path runX86_64(const Problem& p, int threads) { return runWith<V128, CfgF32>(p, threads); }
void bytesGemmX86_64(const Problem& p, int threads) { bytesGemm(p, threads); }
}  // namespace radix::kernels

#include "compiler/kernels/conv_impl.h"

namespace radix::kernels {
void runConvGemmX86_64(const ConvGemmPlan& p, int threads) { convGemm<CfgF32>(p, threads); }
void runConvRowsX86_64(const ConvRowsPlan& p, int threads) { convRows<CfgF32>(p, threads); }
void runConvDirectX86_64(const ConvDirectPlan& p, int threads) { convDirect(p, threads); }
}  // namespace radix::kernels
