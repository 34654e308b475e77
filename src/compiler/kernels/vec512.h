#pragma once
// The 16-lane f32 register type of impl.h's templates (AVX-512 F/BW/VL/DQ). Included inside an
// anonymous namespace under `#pragma clang attribute push(target("avx512f,avx512bw,avx512vl,..."))`
// by each TU that compiles kernels for that ISA (kernels/avx512.cpp, quant/avx512.cpp).

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
  // p[0], p[2], .., p[2W - 2]: never reads p[2W - 1].
  static R loadEven(const float* p) {
    const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(_mm512_loadu_ps(p), idx, _mm512_maskz_loadu_ps(0x7fff, p + W));
  }
  // p[0], p[2], .., p[2n - 2] for 0 < n <= W (zeros past them): never reads p[2n - 1].
  static R loadEvenN(const float* p, int n) {
    const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const int m = 2 * n - 1;
    return _mm512_permutex2var_ps(loadN(p, m < W ? m : W), idx, loadN(p + W, m > W ? m - W : 0));
  }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static float sum(R v) { return _mm512_reduce_add_ps(v); }
  static R widenBf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static R loadBf16(const uint16_t* p) { return widenBf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static R loadBf16N(const uint16_t* p, int n) { return widenBf16(_mm256_maskz_loadu_epi16(mask(n), p)); }
  static R loadF16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static R loadF16N(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p)); }
};
