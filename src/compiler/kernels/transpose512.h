// No include guard: included inside each AVX-512 TU's anonymous namespace and target pragma
// (avx512.cpp, amx_tiles.h), after <immintrin.h>. Register shuffles the kernels share.
// In-register 16x16 transpose: r[i] holds row i; afterwards r[c] holds column c.
inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  auto pd = [](__m512 x) { return _mm512_castps_pd(x); };
  auto ps = [](__m512d x) { return _mm512_castpd_ps(x); };
  for (int i = 0; i < 4; ++i) {  // r[4i+e]: lane L holds rows 4i..4i+3 of column 4L+e
    r[4 * i] = ps(_mm512_unpacklo_pd(pd(t[4 * i]), pd(t[4 * i + 2])));
    r[4 * i + 1] = ps(_mm512_unpackhi_pd(pd(t[4 * i]), pd(t[4 * i + 2])));
    r[4 * i + 2] = ps(_mm512_unpacklo_pd(pd(t[4 * i + 1]), pd(t[4 * i + 3])));
    r[4 * i + 3] = ps(_mm512_unpackhi_pd(pd(t[4 * i + 1]), pd(t[4 * i + 3])));
  }
  __m512 out[16];
  for (int e = 0; e < 4; ++e) {
    const __m512 lo01 = _mm512_shuffle_f32x4(r[e], r[4 + e], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 hi01 = _mm512_shuffle_f32x4(r[e], r[4 + e], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 lo23 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 hi23 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], _MM_SHUFFLE(3, 2, 3, 2));
    out[e] = _mm512_shuffle_f32x4(lo01, lo23, _MM_SHUFFLE(2, 0, 2, 0));
    out[4 + e] = _mm512_shuffle_f32x4(lo01, lo23, _MM_SHUFFLE(3, 1, 3, 1));
    out[8 + e] = _mm512_shuffle_f32x4(hi01, hi23, _MM_SHUFFLE(2, 0, 2, 0));
    out[12 + e] = _mm512_shuffle_f32x4(hi01, hi23, _MM_SHUFFLE(3, 1, 3, 1));
  }
  for (int i = 0; i < 16; ++i) r[i] = out[i];
}

// 16 pairs of even elements: d[2t] = r0[2t], d[2t+1] = r1[2t] for t < n <= 16 (a stride-2
// convolution's Y in the VNNI layout); nothing past the n pairs is written, r[2n - 1] is not read.
inline void interleaveEvenPairs(const uint16_t* r0, const uint16_t* r1, uint16_t* d, int n = 16) {
  alignas(64) static constexpr uint16_t kEvenPairs[32] = {0,  32, 2,  34, 4,  36, 6,  38, 8,  40, 10,
                                                          42, 12, 44, 14, 46, 16, 48, 18, 50, 20, 52,
                                                          22, 54, 24, 56, 26, 58, 28, 60, 30, 62};
  const __mmask32 read = static_cast<__mmask32>((uint64_t(1) << (2 * n - 1)) - 1);
  const __mmask32 write = static_cast<__mmask32>((uint64_t(1) << (2 * n)) - 1);
  _mm512_mask_storeu_epi16(d, write,
                           _mm512_permutex2var_epi16(_mm512_maskz_loadu_epi16(read, r0), _mm512_load_si512(kEvenPairs),
                                                     _mm512_maskz_loadu_epi16(read, r1)));
}

// Two rows of 32 16-bit values interleaved into pairs (VNNI layout): lo = a0 b0 a1 b1 ... a15 b15,
// hi = a16 b16 ... a31 b31.
inline void interleavePairs(__m512i a, __m512i b, __m512i& lo, __m512i& hi) {
  const __m512i l = _mm512_unpacklo_epi16(a, b), h = _mm512_unpackhi_epi16(a, b);
  lo = _mm512_permutex2var_epi64(l, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), h);
  hi = _mm512_permutex2var_epi64(l, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), h);
}
