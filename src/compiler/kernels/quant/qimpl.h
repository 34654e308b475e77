// The ISA-independent half of the quantized kernels (no include guard: a TU includes it once per
// target, inside `#pragma clang attribute push(target(...))`, with these macros set):
//   RADIX_Q_NS    the namespace of this copy (e.g. qavx2, qavx2vnni)
//   RADIX_Q_VNNI  0: int8 dots by vpmaddubsw + vpmaddwd; 1: avx_vnni vpdpbusd; 2: avx512_vnni vpdpbusd
//   RADIX_Q_V     the f32 vector type of impl.h (V256 / V512) for the GEMM micro-kernel
//   RADIX_Q_MR, RADIX_Q_NV  its register tile
//   RADIX_Q_ZMM   1 in the AVX-512 copies: the one-row GEMV of qgemv512.h
// The TU includes <immintrin.h>, impl.h and qkernels.h first. Weights are decoded 32 elements at a
// time into a signed (or, for formats without offset, unsigned) int8 vector plus f32 scales.
namespace RADIX_Q_NS {

using radix::QuantType;
using radix::kernels::QPath;
using radix::kernels::QProblem;

inline float h2f(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}
inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
inline int32_t hsumI(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}
// 16 bytes -> 32 nibbles: elements 0..15 the low nibbles, 16..31 the high ones.
inline __m256i nibbles16(const uint8_t* p) {
  const __m128i x = load16(p);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(x, 4), x), _mm256_set1_epi8(0x0f));
}
// Bit i of `bits` -> byte i (0x00 or 0xff).
inline __m256i expandBits(uint32_t bits) {
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                        3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)), shuf);
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}
// Bit i of `bits` -> byte i: 0x10 or 0 (the fifth bit of q5_0 / q5_1 elements).
inline __m256i fifthBits(uint32_t bits) {
#if RADIX_Q_ZMM
  return _mm256_maskz_mov_epi8(bits, _mm256_set1_epi8(0x10));
#else
  return _mm256_and_si256(expandBits(bits), _mm256_set1_epi8(0x10));
#endif
}

// ---- Formats ----
// kSubs sub-blocks of 32 per block; kRows weight rows per GEMV step. header() decodes the
// scales of a block: s[] (one per sub, or two per sub when kTwoScales: elements 0..15 and
// 16..31) and, when kMins, mn[] (added as mn * sum(a) per sub). sub() returns the 32 quantized
// values of sub-block `j`, signed unless kUnsigned (then 0..63, so vpmaddubsw cannot saturate).
struct Hdr32 {
  float s[1], mn[1];
};
struct HdrK {
  alignas(32) float s[16];
  alignas(32) float mn[8];
};

struct Q8_0 {
  // One row at a time: the weight streams as one sequential read (Zen 3, 1 thread, streaming
  // 768x768: 10.7 GB/s with 4 interleaved rows, 16.7 with 1; q8_0 is not compute-bound).
  static constexpr int kElems = 32, kBytes = 34, kSubs = 1, kRows = 1;
  static constexpr bool kUnsigned = false, kTwoScales = false, kMins = false;
  using Hdr = Hdr32;
  static void header(const uint8_t* b, Hdr& h) { h.s[0] = h2f(b); }
  static __m256i sub(const uint8_t* b, int) { return load32(b + 2); }
};
struct Q4_0 {
  static constexpr int kElems = 32, kBytes = 18, kSubs = 1, kRows = 4;
  static constexpr bool kUnsigned = false, kTwoScales = false, kMins = false;
  using Hdr = Hdr32;
  static void header(const uint8_t* b, Hdr& h) { h.s[0] = h2f(b); }
  static __m256i sub(const uint8_t* b, int) { return _mm256_sub_epi8(nibbles16(b + 2), _mm256_set1_epi8(8)); }
};
struct Q4_1 {
  static constexpr int kElems = 32, kBytes = 20, kSubs = 1, kRows = 4;
  static constexpr bool kUnsigned = true, kTwoScales = false, kMins = true;
  using Hdr = Hdr32;
  static void header(const uint8_t* b, Hdr& h) { h.s[0] = h2f(b), h.mn[0] = h2f(b + 2); }
  static __m256i sub(const uint8_t* b, int) { return nibbles16(b + 4); }
};
inline uint32_t load4(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
struct Q5_0 {
  static constexpr int kElems = 32, kBytes = 22, kSubs = 1, kRows = 4;
  static constexpr bool kUnsigned = false, kTwoScales = false, kMins = false;
  using Hdr = Hdr32;
  static void header(const uint8_t* b, Hdr& h) { h.s[0] = h2f(b); }
  static __m256i sub(const uint8_t* b, int) {
    return _mm256_sub_epi8(_mm256_or_si256(nibbles16(b + 6), fifthBits(load4(b + 2))), _mm256_set1_epi8(16));
  }
};
struct Q5_1 {
  static constexpr int kElems = 32, kBytes = 24, kSubs = 1, kRows = 4;
  static constexpr bool kUnsigned = true, kTwoScales = false, kMins = true;
  using Hdr = Hdr32;
  static void header(const uint8_t* b, Hdr& h) { h.s[0] = h2f(b), h.mn[0] = h2f(b + 2); }
  static __m256i sub(const uint8_t* b, int) {
    return _mm256_or_si256(nibbles16(b + 8), fifthBits(load4(b + 4)));
  }
};
// The 6-bit sub-scales and mins of q4_k / q5_k (12 bytes for 8 pairs), as 32-bit words:
// sc 0..3 = w0 & 63, mn 0..3 = w1 & 63; sc 4..7 = low nibbles of w2 | (w0 >> 6) << 4,
// mn 4..7 = high nibbles of w2 | (w1 >> 6) << 4 (bytewise).
inline void kScales(const uint8_t* b, HdrK& h) {
  const uint32_t w0 = load4(b + 4), w1 = load4(b + 8), w2 = load4(b + 12);
  const uint32_t six = 0x3f3f3f3fu, lo4 = 0x0f0f0f0fu, top2 = 0x03030303u;
  const uint32_t sc4 = (w2 & lo4) | (((w0 >> 6) & top2) << 4), mn4 = ((w2 >> 4) & lo4) | (((w1 >> 6) & top2) << 4);
  const __m128i sc = _mm_cvtsi64_si128(static_cast<int64_t>((w0 & six) | (uint64_t(sc4) << 32)));
  const __m128i mn = _mm_cvtsi64_si128(static_cast<int64_t>((w1 & six) | (uint64_t(mn4) << 32)));
  _mm256_store_ps(h.s, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc)), _mm256_set1_ps(h2f(b))));
  _mm256_store_ps(h.mn, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn)), _mm256_set1_ps(-h2f(b + 2))));
}
struct Q4_K {
  static constexpr int kElems = 256, kBytes = 144, kSubs = 8, kRows = 2;
  static constexpr bool kUnsigned = true, kTwoScales = false, kMins = true;
  using Hdr = HdrK;
  static void header(const uint8_t* b, Hdr& h) { kScales(b, h); }
  static __m256i sub(const uint8_t* b, int j) {
    const __m256i v = load32(b + 16 + 32 * (j >> 1));
    return _mm256_and_si256(j & 1 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
  }
};
struct Q5_K {
  static constexpr int kElems = 256, kBytes = 176, kSubs = 8, kRows = 2;
  static constexpr bool kUnsigned = true, kTwoScales = false, kMins = true;
  using Hdr = HdrK;
  static void header(const uint8_t* b, Hdr& h) { kScales(b, h); }
  static __m256i sub(const uint8_t* b, int j) {
    const __m256i v = load32(b + 48 + 32 * (j >> 1));
    const __m256i lo = _mm256_and_si256(j & 1 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
    const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << j));
    const __m256i hi = _mm256_cmpeq_epi8(_mm256_and_si256(load32(b + 16), bit), bit);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi8(0x10)));
  }
};
struct Q6_K {
  static constexpr int kElems = 256, kBytes = 210, kSubs = 8, kRows = 1;
  static constexpr bool kUnsigned = false, kTwoScales = true, kMins = false;
  using Hdr = HdrK;
  static void header(const uint8_t* b, Hdr& h) {
    const __m256 d = _mm256_set1_ps(h2f(b + 208));
    const __m128i sc = load16(b + 192);
    _mm256_store_ps(h.s, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), d));
    _mm256_store_ps(h.s + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), d));
  }
  // Sub j = 4*half + s: low (s < 2) or high nibbles of ql[64 half + 32 (s & 1)], qh bits 2s.
  static __m256i sub(const uint8_t* b, int j) {
    const int half = j >> 2, s = j & 3;
    const __m256i v = load32(b + 64 * half + 32 * (s & 1));
    const __m256i lo = _mm256_and_si256(s >= 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
    const __m256i qh = load32(b + 128 + 32 * half);
    const __m256i hi = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * s), 4), _mm256_set1_epi8(0x30));
    return _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(32));
  }
};

template <class F>
inline float scale0(const typename F::Hdr& h, int j) {
  if constexpr (F::kTwoScales) return h.s[2 * j];
  else return h.s[j];
}
template <class F>
inline float scale1(const typename F::Hdr& h, int j) {
  if constexpr (F::kTwoScales) return h.s[2 * j + 1];
  else return h.s[j];
}

// ---- Activations quantized to int8 per 32 (q8_0's scheme): q = round(x / d), d = max|x| / 127,
// and sd = d * sum(q) for the formats with mins; sd16 the same per 16 (two per block, for the
// int8 GEMM of q6_k, whose scales cover 16 weights). ----
struct Act {
  int8_t* q;
  float* d;
  float* sd;
  float* sd16;
  int64_t ldq, ldd;
};

inline void quantizeBlock(const float* x, int8_t* q, float* d, float* sd, float* sd16) {
  const __m256 signBit = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  __m256 amax = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(signBit, v[0]), _mm256_andnot_ps(signBit, v[1])),
                              _mm256_max_ps(_mm256_andnot_ps(signBit, v[2]), _mm256_andnot_ps(signBit, v[3])));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  const float mx = _mm_cvtss_f32(m4);
  const float dd = mx / 127.0f, id = mx > 0 ? 127.0f / mx : 0.0f;
  const __m256 vid = _mm256_set1_ps(id);
  __m256i i[4];
  for (int j = 0; j < 4; ++j) i[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], vid));
  const int32_t lo = hsumI(_mm256_add_epi32(i[0], i[1])), hi = hsumI(_mm256_add_epi32(i[2], i[3]));
  const int32_t sum = lo + hi;
  __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
  p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), p);
  *d = dd;
  *sd = dd * static_cast<float>(sum);
  sd16[0] = dd * static_cast<float>(lo);
  sd16[1] = dd * static_cast<float>(hi);
}

inline Act quantizeActs(const QProblem& p, Scratch& s) {
  const int64_t nb = p.k / 32;
  Act a;
  a.ldq = (p.k + 63) / 64 * 64;
  a.ldd = (nb + 15) / 16 * 16;
  char* base = static_cast<char*>(s.get(static_cast<size_t>(p.m * (a.ldq + 16 * a.ldd) + 64)));
  a.q = reinterpret_cast<int8_t*>(base);
  a.d = reinterpret_cast<float*>(base + p.m * a.ldq);
  a.sd = a.d + p.m * a.ldd;
  a.sd16 = a.sd + p.m * a.ldd;  // [m][2 * ldd]
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t g = 0; g < nb; ++g)
      quantizeBlock(p.a + i * p.sam + 32 * g, a.q + i * a.ldq + 32 * g, a.d + i * a.ldd + g, a.sd + i * a.ldd + g,
                    a.sd16 + i * 2 * a.ldd + 2 * g);
  return a;
}

// Integer dot of 32 u8 x 32 i8 -> 8 int32 lanes, lane l summing elements 4l..4l+3.
inline __m256i dotU8I8(__m256i u, __m256i s) {
#if RADIX_Q_VNNI == 1
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
#elif RADIX_Q_VNNI == 2
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// The mins' share: mn * sum(a) per sub-block (8 at once for the K-quants).
template <class F, int M, int R>
inline void addMins(const typename F::Hdr (&h)[R], const float* sd, int64_t ld, __m256 (&macc)[R][M],
                    float (&smacc)[R][M]) {
  for (int i = 0; i < M; ++i)
    for (int r = 0; r < R; ++r) {
      if constexpr (F::kSubs == 8)
        macc[r][i] = _mm256_fmadd_ps(_mm256_load_ps(h[r].mn), _mm256_loadu_ps(sd + i * ld), macc[r][i]);
      else
        smacc[r][i] += h[r].mn[0] * sd[i * ld];
    }
}

// ---- GEMV, int8 activations: R weight rows x M activation rows, one accumulator each. ----
template <class F, int M, int R>
void gemvInt8Rows(const QProblem& p, const Act& act, int64_t j0) {
  const int64_t nblk = p.k / F::kElems;
  __m256 acc[R][M], macc[R][M];
  float smacc[R][M] = {};
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i) acc[r][i] = macc[r][i] = _mm256_setzero_ps();
  const uint8_t* w[R];
  for (int r = 0; r < R; ++r) w[r] = p.w + (j0 + r) * p.wRowBytes;
  for (int64_t b = 0; b < nblk; ++b) {
    typename F::Hdr h[R];
    const uint8_t* blk[R];
    for (int r = 0; r < R; ++r) {
      blk[r] = w[r] + b * F::kBytes;
      F::header(blk[r], h[r]);
    }
    // Every line of the block is asked for (a K-quant block spans 3 or 4). Measured (ymm path,
    // streaming, 1 thread): q8_0 6 -> 26 GB/s with 12 KiB instead of 4 blocks ahead (Xeon); on
    // Zen 3, q4_k 6.7 -> 13 GB/s and q6_k 8 -> 11 with every line 4 KiB ahead (was: one line 2
    // blocks ahead), at their in-cache ceiling.
    constexpr int64_t ahead = F::kElems == 32 ? 12288 : 4096;
    for (int r = 0; r < R; ++r)
      for (int64_t o = 0; o < F::kBytes; o += 64)
        _mm_prefetch(reinterpret_cast<const char*>(blk[r] + ahead + o), _MM_HINT_T0);
    // K-quants: the 8 (16) scale x activation-step factors of a block, one vector multiply.
    constexpr int kFac = F::kSubs == 8 ? (F::kTwoScales ? 16 : 8) : 1;
    alignas(32) float fac[R][M][kFac];
    if constexpr (F::kSubs == 8) {
      for (int i = 0; i < M; ++i) {
        const __m256 da = _mm256_loadu_ps(act.d + i * act.ldd + b * 8);
        for (int r = 0; r < R; ++r) {
          if constexpr (F::kTwoScales) {
            const __m256 lo = _mm256_permutevar8x32_ps(da, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
            const __m256 hi = _mm256_permutevar8x32_ps(da, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
            _mm256_store_ps(fac[r][i], _mm256_mul_ps(_mm256_load_ps(h[r].s), lo));
            _mm256_store_ps(fac[r][i] + 8, _mm256_mul_ps(_mm256_load_ps(h[r].s + 8), hi));
          } else {
            _mm256_store_ps(fac[r][i], _mm256_mul_ps(_mm256_load_ps(h[r].s), da));
          }
        }
      }
    }
    for (int j = 0; j < F::kSubs; ++j) {
      const int64_t g = b * F::kSubs + j;
      __m256i u[R], q[R];
      for (int r = 0; r < R; ++r) {
        q[r] = F::sub(blk[r], j);
        u[r] = F::kUnsigned ? q[r] : _mm256_abs_epi8(q[r]);
      }
      for (int i = 0; i < M; ++i) {
        const __m256i aq = load32(reinterpret_cast<const uint8_t*>(act.q + i * act.ldq + 32 * g));
        for (int r = 0; r < R; ++r) {
          const __m256i dot = dotU8I8(u[r], F::kUnsigned ? aq : _mm256_sign_epi8(aq, q[r]));
          __m256 sv;
          if constexpr (F::kSubs == 1)
            sv = _mm256_set1_ps(h[r].s[0] * act.d[i * act.ldd + g]);
          else if constexpr (F::kTwoScales)  // lanes 0..3 elements 0..15, lanes 4..7 16..31
            sv = _mm256_permutevar8x32_ps(
                _mm256_castps128_ps256(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(fac[r][i] + 2 * j)))),
                _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
          else
            sv = _mm256_broadcast_ss(fac[r][i] + j);
          acc[r][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), sv, acc[r][i]);
        }
      }
    }
    if constexpr (F::kMins) addMins<F, M, R>(h, act.sd + b * F::kSubs, act.ldd, macc, smacc);
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i)
      p.c[i * p.scm + (j0 + r) * p.scn] += hsum(_mm256_add_ps(acc[r][i], macc[r][i])) + smacc[r][i];
}

// ---- GEMV, f32 activations: the decoded weights times A in f32 (exact up to f32 rounding). ----
inline void toF32(__m256i q, bool isUnsigned, __m256 (&w)[4]) {
  for (int c = 0; c < 4; ++c) {
    const __m128i x = c < 2 ? _mm256_castsi256_si128(q) : _mm256_extracti128_si256(q, 1);
    const __m128i y = c & 1 ? _mm_srli_si128(x, 8) : x;
    w[c] = _mm256_cvtepi32_ps(isUnsigned ? _mm256_cvtepu8_epi32(y) : _mm256_cvtepi8_epi32(y));
  }
}

// Per-32 sums of A (for the mins).
inline float* blockSums(const QProblem& p, Scratch& s, int64_t& ld) {
  const int64_t nb = p.k / 32;
  ld = (nb + 15) / 16 * 16;
  float* out = static_cast<float*>(s.get(sizeof(float) * static_cast<size_t>(p.m * ld + 16)));
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t g = 0; g < nb; ++g) {
      const float* x = p.a + i * p.sam + 32 * g;
      __m256 v = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)),
                               _mm256_add_ps(_mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)));
      out[i * ld + g] = hsum(v);
    }
  return out;
}

template <class F, int M, int R>
void gemvF32Rows(const QProblem& p, const float* asum, int64_t lds, int64_t j0) {
  const int64_t nblk = p.k / F::kElems;
  __m256 acc[R][M], macc[R][M];
  float smacc[R][M] = {};
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i) acc[r][i] = macc[r][i] = _mm256_setzero_ps();
  const uint8_t* w[R];
  for (int r = 0; r < R; ++r) w[r] = p.w + (j0 + r) * p.wRowBytes;
  for (int64_t b = 0; b < nblk; ++b) {
    typename F::Hdr h[R];
    const uint8_t* blk[R];
    for (int r = 0; r < R; ++r) {
      blk[r] = w[r] + b * F::kBytes;
      F::header(blk[r], h[r]);
    }
    for (int j = 0; j < F::kSubs; ++j) {
      const int64_t g = b * F::kSubs + j;
      __m256 wf[R][4];
      for (int r = 0; r < R; ++r) toF32(F::sub(blk[r], j), F::kUnsigned, wf[r]);
      for (int i = 0; i < M; ++i) {
        const float* a = p.a + i * p.sam + 32 * g;
        const __m256 a0 = _mm256_loadu_ps(a), a1 = _mm256_loadu_ps(a + 8), a2 = _mm256_loadu_ps(a + 16),
                     a3 = _mm256_loadu_ps(a + 24);
        for (int r = 0; r < R; ++r) {
          const __m256 t0 = _mm256_fmadd_ps(wf[r][1], a1, _mm256_mul_ps(wf[r][0], a0));
          const __m256 t1 = _mm256_fmadd_ps(wf[r][3], a3, _mm256_mul_ps(wf[r][2], a2));
          if constexpr (F::kTwoScales) {
            acc[r][i] = _mm256_fmadd_ps(t0, _mm256_set1_ps(scale0<F>(h[r], j)), acc[r][i]);
            acc[r][i] = _mm256_fmadd_ps(t1, _mm256_set1_ps(scale1<F>(h[r], j)), acc[r][i]);
          } else {
            acc[r][i] = _mm256_fmadd_ps(_mm256_add_ps(t0, t1), _mm256_set1_ps(scale0<F>(h[r], j)), acc[r][i]);
          }
        }
      }
    }
    if constexpr (F::kMins) addMins<F, M, R>(h, asum + b * F::kSubs, lds, macc, smacc);
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i)
      p.c[i * p.scm + (j0 + r) * p.scn] += hsum(_mm256_add_ps(acc[r][i], macc[r][i])) + smacc[r][i];
}

// R weight rows at a time share each activation load: F::kRows for one activation row (measured:
// 4 for the 32-blocks, fewer for the K-quants, whose decode holds more registers).
template <class F, int M, bool Int8, int R = M == 1 ? F::kRows : M == 2 ? std::min(2, F::kRows) : 1>
void gemvM(const QProblem& p, int64_t n0, int64_t n1, const Act& act, const float* asum, int64_t lds) {
  int64_t j = n0;
  for (; j + R <= n1; j += R) {
    if constexpr (Int8)
      gemvInt8Rows<F, M, R>(p, act, j);
    else
      gemvF32Rows<F, M, R>(p, asum, lds, j);
  }
  for (; j < n1; ++j) {
    if constexpr (Int8)
      gemvInt8Rows<F, M, 1>(p, act, j);
    else
      gemvF32Rows<F, M, 1>(p, asum, lds, j);
  }
}

constexpr int64_t kGemvMaxM = 4;

#if RADIX_Q_ZMM
#include "compiler/kernels/quant/qgemv512.h"
#endif

// The nibble formats with 32-blocks (q4_0, q4_1, q5_0, q5_1), one activation row, on ymm: two
// blocks per step, their 16-byte quants side by side, so the low nibbles are elements 0..15 of
// both blocks and the high ones 16..31 (q5: bit j of qh the fifth bit of element j). The
// activations of each block pair are stored in that order first, and one pair of dots covers 64
// weights (the generic path decodes and dots 32 at a time). Signed formats are coded unsigned
// with -offset * sum(a) as the dots' start, computed once per step for all R rows; the mins'
// share, m * d_a * sum(q_a), is one multiply-add per 8 blocks. The f16 scales (and mins) of 8
// blocks are read per row and group. The AVX-512 copies use it for the formats qgemv512.h lacks.
template <class F>
struct Pair {
  static constexpr bool kHas = false;
};
template <>
struct Pair<Q4_0> {
  static constexpr bool kHas = true;
  static constexpr int kQs = 2, kQh = -1, kMin = -1, kOffset = 8;
};
template <>
struct Pair<Q4_1> {
  static constexpr bool kHas = true;
  static constexpr int kQs = 4, kQh = -1, kMin = 2, kOffset = 0;
};
template <>
struct Pair<Q5_0> {
  static constexpr bool kHas = true;
  static constexpr int kQs = 6, kQh = 2, kMin = -1, kOffset = 16;
};
template <>
struct Pair<Q5_1> {
  static constexpr bool kHas = true;
  static constexpr int kQs = 8, kQh = 4, kMin = 2, kOffset = 0;
};

inline __m256i dot2(__m256i u0, __m256i s0, __m256i u1, __m256i s1) {
#if RADIX_Q_VNNI == 1
  return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u0, s0), u1, s1);
#elif RADIX_Q_VNNI == 2
  return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u0, s0), u1, s1);
#else
  // 31 * 127 * 4 fits int16: the two products are summed before widening.
  return _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1)),
                           _mm256_set1_epi16(1));
#endif
}

// The f16 values at byte `at` of blocks [0, nb) from `base` (nb <= 8; lanes past nb are 0).
template <class F>
inline __m256 blockHalves(const uint8_t* base, int at, int nb) {
  const auto word = [&](int i) {
    uint16_t v;
    std::memcpy(&v, base + i * F::kBytes + at, 2);
    return static_cast<short>(v);
  };
  __m128i h;
  if (nb == 8) {  // word inserts: 16-bit stores read back as one vector stall store forwarding
    h = _mm_setr_epi16(word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7));
  } else {
    alignas(16) short t[8] = {};
    for (int i = 0; i < nb; ++i) t[i] = word(i);
    h = _mm_load_si128(reinterpret_cast<const __m128i*>(t));
  }
  return _mm256_cvtph_ps(h);
}

template <class F, int R>
void pair32Rows(const QProblem& p, const Act& act, int64_t j0) {
  using P = Pair<F>;
  const int64_t nblk = p.k / 32;
  const __m256i m = _mm256_set1_epi8(0x0f), o = _mm256_set1_epi8(P::kOffset);
  __m256 acc[R], macc[R];
  const uint8_t* w[R];
  for (int r = 0; r < R; ++r) acc[r] = macc[r] = _mm256_setzero_ps(), w[r] = p.w + (j0 + r) * p.wRowBytes;
  for (int64_t g = 0; g < nblk; g += 8) {
    const int nb = static_cast<int>(std::min<int64_t>(8, nblk - g));
    alignas(32) float da[8] = {}, sd[8] = {};
    std::memcpy(da, act.d + g, sizeof(float) * static_cast<size_t>(nb));
    if constexpr (P::kMin >= 0) std::memcpy(sd, act.sd + g, sizeof(float) * static_cast<size_t>(nb));
    __m256 s8[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* base = w[r] + g * F::kBytes;
      s8[r] = _mm256_mul_ps(blockHalves<F>(base, 0, nb), _mm256_load_ps(da));
      if constexpr (P::kMin >= 0) macc[r] = _mm256_fmadd_ps(blockHalves<F>(base, P::kMin, nb), _mm256_load_ps(sd), macc[r]);
    }
    int q = 0;
    for (; q + 2 <= nb; q += 2) {
      const int8_t* ap = act.q + 32 * (g + q);
      const __m256i alo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ap));
      const __m256i ahi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ap + 32));
      __m256i off = _mm256_setzero_si256();
      if constexpr (P::kOffset != 0) off = _mm256_sub_epi32(off, dot2(o, alo, o, ahi));
      const __m256i idx = _mm256_setr_epi32(q, q, q, q, q + 1, q + 1, q + 1, q + 1);
      for (int r = 0; r < R; ++r) {
        const uint8_t* blk = w[r] + (g + q) * F::kBytes;
        _mm_prefetch(reinterpret_cast<const char*>(blk + 12288), _MM_HINT_T0);
        const __m256i x = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(blk + F::kBytes + P::kQs),
                                              reinterpret_cast<const __m128i*>(blk + P::kQs));
        __m256i lo = _mm256_and_si256(x, m), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m);
        if constexpr (P::kQh >= 0) {
          const uint32_t h0 = load4(blk + P::kQh), h1 = load4(blk + F::kBytes + P::kQh);
          lo = _mm256_or_si256(lo, fifthBits((h0 & 0xffffu) | (h1 << 16)));
          hi = _mm256_or_si256(hi, fifthBits((h0 >> 16) | (h1 & 0xffff0000u)));
        }
        const __m256i dot = _mm256_add_epi32(off, dot2(lo, alo, hi, ahi));
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_permutevar8x32_ps(s8[r], idx), acc[r]);
      }
    }
    if (q < nb) {  // the row's last block, when nblk is odd (its activations are in plain order)
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act.q + 32 * (g + q)));
      __m256i off = _mm256_setzero_si256();
      if constexpr (P::kOffset != 0) off = _mm256_sub_epi32(off, dotU8I8(o, a));
      for (int r = 0; r < R; ++r) {
        const uint8_t* blk = w[r] + (g + q) * F::kBytes;
        __m256i u = nibbles16(blk + P::kQs);
        if constexpr (P::kQh >= 0) u = _mm256_or_si256(u, fifthBits(load4(blk + P::kQh)));
        const __m256i dot = _mm256_add_epi32(off, dotU8I8(u, a));
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_permutevar8x32_ps(s8[r], _mm256_set1_epi32(q)), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) p.c[(j0 + r) * p.scn] += hsum(_mm256_add_ps(acc[r], macc[r]));
}

template <class F>
void pair32Gemv(const QProblem& p, int64_t n0, int64_t n1, const Act& act) {
  // [b0 0..15, b1 0..15], [b0 16..31, b1 16..31] for each pair of blocks, in place (this
  // thread's own copy, quantizeActs).
  for (int64_t i = 0; i + 64 <= p.k; i += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act.q + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act.q + i + 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(act.q + i), _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(act.q + i + 32), _mm256_permute2x128_si256(a, b, 0x31));
  }
  int64_t j = n0;
  for (; j + 4 <= n1; j += 4) pair32Rows<F, 4>(p, act, j);
  for (; j < n1; ++j) pair32Rows<F, 1>(p, act, j);
}

template <class F>
QPath gemv(const QProblem& p, int64_t n0, int64_t n1, bool exact) {
  static thread_local Scratch scratch;
  Act act{};
  const float* asum = nullptr;
  int64_t lds = 0;
#if RADIX_Q_ZMM
  constexpr bool kWide = Wide<F>::kHas;
  if constexpr (kWide)
    if (!exact && p.m == 1) {
      act = quantizeActs(p, scratch);
      wideGemv<F>(p, n0, n1, act);
      return QPath::gemvInt8;
    }
#else
  constexpr bool kWide = false;
#endif
  if constexpr (Pair<F>::kHas && !kWide)
    if (!exact && p.m == 1) {
      act = quantizeActs(p, scratch);
      pair32Gemv<F>(p, n0, n1, act);
      return QPath::gemvInt8;
    }
  if (exact) {
    if constexpr (F::kMins) asum = blockSums(p, scratch, lds);
  } else {
    act = quantizeActs(p, scratch);
  }
  auto go = [&]<bool Int8>() {
    switch (p.m) {
      case 1: return gemvM<F, 1, Int8>(p, n0, n1, act, asum, lds);
      case 2: return gemvM<F, 2, Int8>(p, n0, n1, act, asum, lds);
      case 3: return gemvM<F, 3, Int8>(p, n0, n1, act, asum, lds);
      default: return gemvM<F, 4, Int8>(p, n0, n1, act, asum, lds);
    }
  };
  if (exact) {
    go.template operator()<false>();
    return QPath::gemvF32;
  }
  go.template operator()<true>();
  return QPath::gemvInt8;
}

// ---- GEMM: NC rows of W decoded once per KC slice into f32 panels, reused by every m tile. ----
template <class F>
void decodeRow(const uint8_t* w, int64_t nblk, float* out) {
  for (int64_t b = 0; b < nblk; ++b) {
    const uint8_t* blk = w + b * F::kBytes;
    typename F::Hdr h;
    F::header(blk, h);
    for (int j = 0; j < F::kSubs; ++j) {
      __m256 wf[4];
      toF32(F::sub(blk, j), F::kUnsigned, wf);
      const __m256 s0 = _mm256_set1_ps(scale0<F>(h, j)), s1 = _mm256_set1_ps(scale1<F>(h, j));
      __m256 mn = _mm256_setzero_ps();
      if constexpr (F::kMins) mn = _mm256_set1_ps(h.mn[j]);
      float* o = out + (b * F::kSubs + j) * 32;
      for (int c = 0; c < 4; ++c) {
        const __m256 x = _mm256_mul_ps(wf[c], c < 2 ? s0 : s1);
        _mm256_storeu_ps(o + 8 * c, F::kMins ? _mm256_add_ps(x, mn) : x);
      }
    }
  }
}

struct QCfg {
  using V = RADIX_Q_V;
  using PackT = float;
  static constexpr int MR = RADIX_Q_MR, NV = RADIX_Q_NV, NR = NV * V::W, kPair = 1;
  static constexpr int64_t MC = 192, KC = 256, NC = 192;
};

template <class F>
QPath gemm(const QProblem& p, int64_t n0, int64_t n1) {
  constexpr int MR = QCfg::MR, NR = QCfg::NR, NV = QCfg::NV;
  constexpr int64_t KC = std::max<int64_t>(QCfg::KC, F::kElems), NC = QCfg::NC, MC = QCfg::MC;
  static thread_local Scratch sa, sb, sr;
  const int64_t kcMax = std::min<int64_t>(KC, p.k);
  const int64_t mcMax = std::min<int64_t>(MC, (p.m + MR - 1) / MR * MR);
  const int64_t ncMax = std::min<int64_t>(NC, (n1 - n0 + NR - 1) / NR * NR);
  float* ap = static_cast<float*>(sa.get(sizeof(float) * mcMax * kcMax));
  float* bp = static_cast<float*>(sb.get(sizeof(float) * ncMax * kcMax));
  float* row = static_cast<float*>(sr.get(sizeof(float) * kcMax));
  for (int64_t jc = n0; jc < n1; jc += NC) {
    const int64_t nc = std::min<int64_t>(NC, n1 - jc);
    for (int64_t pc = 0; pc < p.k; pc += KC) {
      const int64_t kc = std::min<int64_t>(KC, p.k - pc);
      // Decode rows into NR-wide panels: panel q holds kc x NR (row j at column j % NR).
      for (int64_t jr = 0; jr < (nc + NR - 1) / NR * NR; ++jr) {
        float* panel = bp + (jr / NR) * kc * NR + (jr % NR);
        if (jr < nc) {
          decodeRow<F>(p.w + (jc + jr) * p.wRowBytes + (pc / F::kElems) * F::kBytes, kc / F::kElems, row);
          for (int64_t k = 0; k < kc; ++k) panel[k * NR] = row[k];
        } else {
          for (int64_t k = 0; k < kc; ++k) panel[k * NR] = 0;
        }
      }
      for (int64_t ic = 0; ic < p.m; ic += MC) {
        const int64_t mc = std::min<int64_t>(MC, p.m - ic);
        packA<QCfg, Elem::f32>(p.a, p.sam, 1, ic, mc, pc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int nr = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int mr = static_cast<int>(std::min<int64_t>(MR, mc - ir));
            microF32<QCfg::V, MR, NV>(kc, ap + ir * kc, bp + jr * kc, p.c + (ic + ir) * p.scm + (jc + jr) * p.scn,
                                      p.scm, p.scn, mr, nr);
          }
        }
      }
    }
  }
  return QPath::gemmDecoded;
}

#if RADIX_Q_ZMM && RADIX_Q_VNNI == 2
#include "compiler/kernels/quant/qgemm_vnni.h"

// Decoded weights on bf16 tiles (AMX hosts): rows of W decoded to f32 and rounded to bf16, about
// 256 KB of them at a time (L2), times the activations packed once per call as the tiles' B.
template <class F>
QPath gemmAmx(const QProblem& p, int64_t n0, int64_t n1) {
  static thread_local Scratch sx, sw, sr;
  void* xp = sx.get(radix::kernels::amxBf16PanelBytes(p.m, p.k));
  radix::kernels::amxPackRowsBf16(p.m, p.k, p.a, p.sam, xp);
  const int64_t nb = std::clamp<int64_t>((int64_t(256) << 10) / (2 * p.k) / 32 * 32, 32, 256);
  uint16_t* wd = static_cast<uint16_t*>(sw.get(sizeof(uint16_t) * static_cast<size_t>(nb * p.k)));
  float* row = static_cast<float*>(sr.get(sizeof(float) * static_cast<size_t>(p.k)));
  for (int64_t j0 = n0; j0 < n1; j0 += nb) {
    const int64_t rows = std::min(nb, n1 - j0);
    for (int64_t r = 0; r < rows; ++r) {
      decodeRow<F>(p.w + (j0 + r) * p.wRowBytes, p.k / F::kElems, row);
      radix::kernels::amxRoundBf16(row, p.k, wd + r * p.k);
    }
    radix::kernels::amxBf16RowsGemm(p.m, rows, p.k, xp, wd, p.k, p.c + j0 * p.scn, p.scm, p.scn);
  }
  return QPath::gemmAmx;
}
#endif

// RADIX_QUANT_EXACT=1 selects the f32-activation GEMV and GEMM (read per call, so tests can switch it).
inline bool exactRequested() {
  const char* e = std::getenv("RADIX_QUANT_EXACT");
  return e && e[0] == '1';
}

template <class F>
QPath runFormat(const QProblem& p, int64_t n0, int64_t n1) {
  if (p.k % F::kElems != 0)
    throw radix::Error("[qcontract] k=" + std::to_string(p.k) + " is not a whole number of blocks of " +
                       std::to_string(F::kElems));
  if (n0 >= n1 || p.m <= 0) return QPath::scalar;
  const bool exact = exactRequested();
  if (p.m <= kGemvMaxM) return gemv<F>(p, n0, n1, exact);
#if RADIX_Q_ZMM && RADIX_Q_VNNI == 2
  if (!exact && p.amx && p.m >= radix::kernels::kAmxMinM) return gemmAmx<F>(p, n0, n1);
  if (!exact) return gemmInt8<F>(p, n0, n1);
#endif
  return gemm<F>(p, n0, n1);
}

// Returns false for the formats this file has no kernel for (the caller falls back).
inline bool run(const QProblem& p, int64_t n0, int64_t n1, QPath& path) {
  switch (p.type) {
    case QuantType::q8_0: path = runFormat<Q8_0>(p, n0, n1); return true;
    case QuantType::q4_0: path = runFormat<Q4_0>(p, n0, n1); return true;
    case QuantType::q4_1: path = runFormat<Q4_1>(p, n0, n1); return true;
    case QuantType::q5_0: path = runFormat<Q5_0>(p, n0, n1); return true;
    case QuantType::q5_1: path = runFormat<Q5_1>(p, n0, n1); return true;
    case QuantType::q4_k: path = runFormat<Q4_K>(p, n0, n1); return true;
    case QuantType::q5_k: path = runFormat<Q5_K>(p, n0, n1); return true;
    case QuantType::q6_k: path = runFormat<Q6_K>(p, n0, n1); return true;
    default: return false;
  }
}

}  // namespace RADIX_Q_NS
