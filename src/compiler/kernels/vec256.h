#pragma once
// The 8-lane f32 register type of impl.h's templates (AVX2 + FMA + F16C). Included inside an
// anonymous namespace under `#pragma clang attribute push(target("avx2,fma,f16c"...))` by each TU
// that compiles kernels for that ISA (kernels/avx2.cpp, quant/avx2.cpp).

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
  // p[0], p[2], .., p[2W - 2]: never reads p[2W - 1].
  static R loadEven(const float* p) {
    const __m256 lo = _mm256_loadu_ps(p), hi = _mm256_maskload_ps(p + W, mask(W - 1));
    const __m256 even = _mm256_shuffle_ps(lo, hi, 0x88);  // lanes: lo 0 2 hi 0 2 | lo 4 6 hi 4 6
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xd8));
  }
  // p[0], p[2], .., p[2n - 2] for 0 < n <= W (zeros past them): never reads p[2n - 1].
  static R loadEvenN(const float* p, int n) {
    const int m = 2 * n - 1;
    const __m256 lo = _mm256_maskload_ps(p, mask(m < W ? m : W)), hi = _mm256_maskload_ps(p + W, mask(m > W ? m - W : 0));
    const __m256 even = _mm256_shuffle_ps(lo, hi, 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xd8));
  }
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
