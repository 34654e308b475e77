// AVX-512 (f, bw, vl, dq) kernels: 8x32 f32 FMA tiles; with avx512bf16, vdpbf16ps on bf16 pairs.
#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c,avx2"))), \
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
  static float sum(R v) { return _mm512_reduce_add_ps(v); }
  static R widenBf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static R loadBf16(const uint16_t* p) { return widenBf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static R loadBf16N(const uint16_t* p, int n) { return widenBf16(_mm256_maskz_loadu_epi16(mask(n), p)); }
  static R loadF16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static R loadF16N(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p)); }
};

struct CfgF32 {
  using V = V512;
  using PackT = float;
  static constexpr int MR = 8, NV = 2, NR = NV * V::W, kPair = 1;
  static constexpr int64_t MC = 192, KC = 256, NC = 4096;
  static void micro(int64_t kc, const float* ap, const float* bp, float* c, int64_t scm, int64_t scn, int mr, int nr) {
    microF32<V, MR, NV>(kc, ap, bp, c, scm, scn, mr, nr);
  }
};

// bf16 x bf16 -> f32 with vdpbf16ps: A pairs broadcast as one 32-bit lane, B in VNNI panels
// [k/2][32 columns][2].
struct CfgBf16 {
  using V = V512;
  using PackT = uint16_t;
  static constexpr int MR = 8, NV = 2, NR = NV * V::W, kPair = 2;
  static constexpr int64_t MC = 192, KC = 512, NC = 4096;
  // d[2j] = r0[j], d[2j+1] = r1[j] (0 without r1) for j < n, zero up to NR.
  static void interleave(const uint16_t* r0, const uint16_t* r1, uint16_t* d, int n) {
    if (n == NR && r1) {
      const __m512i a = _mm512_loadu_si512(r0), b = _mm512_loadu_si512(r1);
      const __m512i lo = _mm512_unpacklo_epi16(a, b), hi = _mm512_unpackhi_epi16(a, b);
      _mm512_storeu_si512(d, _mm512_permutex2var_epi64(lo, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), hi));
      _mm512_storeu_si512(d + 32, _mm512_permutex2var_epi64(lo, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), hi));
      return;
    }
    for (int j = 0; j < NR; ++j) {
      d[2 * j] = j < n ? r0[j] : uint16_t(0);
      d[2 * j + 1] = j < n && r1 ? r1[j] : uint16_t(0);
    }
  }
  static void micro(int64_t steps, const uint16_t* __restrict ap, const uint16_t* __restrict bp, float* c,
                    int64_t scm, int64_t scn, int mr, int nr) {
    __m512 acc[MR][NV];
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
    for (int64_t s = 0; s < steps; ++s) {
      __m512bh b[NV];
      for (int v = 0; v < NV; ++v) b[v] = (__m512bh)_mm512_loadu_si512(bp + v * 32);
      for (int i = 0; i < MR; ++i) {
        int32_t pair;
        std::memcpy(&pair, ap + 2 * i, 4);
        const __m512bh a = (__m512bh)_mm512_set1_epi32(pair);
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], a, b[v]);
      }
      ap += 2 * MR;
      bp += 2 * NR;
    }
    storeTile<V, MR, NV>(acc, c, scm, scn, mr, nr);
  }
};

}  // namespace

namespace radix::kernels {
Path runAvx512(const Problem& p, int threads, bool bf16) {
  if (bf16 && p.aType == Elem::bf16 && p.bType == Elem::bf16 && p.m != 1 && p.n != 1) {
    gemmTyped<CfgBf16, Elem::bf16, Elem::bf16>(p, threads);
    return Path::gemm;
  }
  return runWith<V512, CfgF32>(p, threads);
}
}  // namespace radix::kernels

#pragma clang attribute pop
