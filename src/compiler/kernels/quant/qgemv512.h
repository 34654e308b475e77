// The decode GEMV (m = 1) on zmm registers for the formats of llama.cpp's common files (q8_0, q4_0,
// q4_k, q5_k, q6_k). Included by qimpl.h (no include guard) in the AVX-512 copies only, inside their
// namespace and target region, after the format structs and the activation quantizer.
//
// One integer dot covers 64 weights: two 32-blocks, or two sub-blocks of a super-block. Weights
// are coded unsigned (u = q + offset) against the signed int8 activations, and the offset's share,
// -offset * sum(a) per 4 activations, is the dot's starting accumulator: it depends on the
// activations only, so it is computed once per step for all R rows. The f16 block scales of a
// row come 16 at a time through one gather. Without VNNI, vpmaddubsw + vpmaddwd replace vpdpbusd;
// q8_0 then keeps the |w| / sign(a, w) coding, whose products cannot saturate vpmaddubsw.

template <class F>
struct Wide {
  static constexpr bool kHas = false;
};

// Software prefetch distance, in bytes along each row (into the next rows: the weight is one
// block of memory). Measured on Zen 5, q8_0 streaming from memory, 1 thread: 4 interleaved rows
// with prefetch 2 row-groups ahead reached 15 GB/s; one row at a time 24 GB/s without prefetch and
// 30-34 with it 12 KiB ahead. q4_0 is compute-bound and keeps 4 rows per activation load; q4_k
// is as fast with 1 or 2 rows (29-32 GB/s) and keeps 2; q6_k reads 1 (30-39 GB/s, 26-32 with 2).
constexpr int64_t kAheadBytes = 12288;

// acc + sum of 4 u8 x s8 products per int32 lane.
inline __m512i dotAcc(__m512i acc, __m512i u, __m512i s) {
#if RADIX_Q_VNNI == 2
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#endif
}
// -offset * (a[4l] + .. + a[4l+3]) in lane l.
inline __m512i offsetTerm(__m512i aq, int offset) {
  const __m512i o = _mm512_set1_epi8(static_cast<char>(offset));
  return _mm512_sub_epi32(_mm512_setzero_si512(), dotAcc(_mm512_setzero_si512(), o, aq));
}
// Lanes 0..7 <- s[i0], lanes 8..15 <- s[i1]. One permute: two broadcasting loads and a blend
// were 10-17% slower for q8_0 in cache on Zen 5.
inline __m512 subScale(__m512 s, int i0, int i1) {
  return _mm512_permutexvar_ps(_mm512_inserti64x4(_mm512_set1_epi32(i0), _mm256_set1_epi32(i1), 1), s);
}
inline __m512 pairScale(__m512 s, int i) { return subScale(s, i, i + 1); }
// Lanes 4i..4i+3 <- s[4q + i] (q6_k: a scale per 16 weights).
inline __m512 quadScale(__m512 s, int q) {
  const __m512i base = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  return _mm512_permutexvar_ps(_mm512_add_epi32(base, _mm512_set1_epi32(4 * q)), s);
}

template <>
struct Wide<Q8_0> {
  static constexpr bool kHas = true;
  static constexpr int kOffset = 128, kRows = 1;
  static __m512i pair(const uint8_t* b) {
    return _mm512_mask_broadcast_i64x4(_mm512_castsi256_si512(load32(b + 2)), 0xf0, load32(b + 2 + Q8_0::kBytes));
  }
  static __m512i single(const uint8_t* b) { return _mm512_zextsi256_si512(load32(b + 2)); }
};

template <>
struct Wide<Q4_0> {
  static constexpr bool kHas = true;
  static constexpr int kOffset = 8, kRows = 4;
  // d = [bytes of b, of b, of b+1, of b+1] (128-bit lanes) -> [lo(b), hi(b), lo(b+1), hi(b+1)].
  static __m512i expand(__m512i d) {
    return _mm512_and_si512(_mm512_mask_srli_epi16(d, 0xff00ff00u, d, 4), _mm512_set1_epi8(0x0f));
  }
  // Broadcasting loads and a blend.
  static __m512i pair(const uint8_t* b) {
    return expand(_mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(load16(b + 2)), 0xff00, load16(b + 2 + Q4_0::kBytes)));
  }
  static __m512i single(const uint8_t* b) { return expand(_mm512_maskz_broadcast_i32x4(0x00ff, load16(b + 2))); }
};

// The f16 scales of q4_0 blocks [0, nb) at `base` (18 nb bytes, nb <= 16) from 4 loads and 2
// word permutes: cheaper than the gather, which cost about a third of q4_0's in-cache time. The
// loads are masked to the nb blocks (lanes past them are 0).
inline __m512 q4_0Scales(const uint8_t* base, int nb) {
  alignas(64) static constexpr uint16_t kWords[32] = {0, 9, 18, 27, 36, 45, 54, 63};  // block i at byte 18 i
  const __m512i idx = _mm512_load_si512(kWords);
  const int64_t bytes = 18 * nb;
  const auto ld = [&](int64_t at) {
    if (nb == 16) return _mm512_loadu_si512(base + at);
    const int64_t n = std::clamp<int64_t>(bytes - at, 0, 64);
    return _mm512_maskz_loadu_epi8(n == 64 ? ~0ull : (1ull << n) - 1, base + at);
  };
  const __m512i lo = _mm512_permutex2var_epi16(ld(0), idx, ld(64));
  const __m512i hi = _mm512_permutex2var_epi16(ld(144), idx, ld(208));
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_castsi512_si128(lo)),
                                                 _mm512_castsi512_si128(hi), 1));
}

// q4_0 takes 4 blocks per step, their 16-byte quants side by side in one register: the low
// nibbles are elements 0..15 of each block, the high ones 16..31, so the activations of each 4
// blocks are stored in that order first (reorderActs) and one pair of dots covers 128 weights, with
// the 4 scales spread over their lanes by one permute. Two blocks per dot (pair) had cost 14
// vector ops per 128 weights and row against 11, and twice the loads.
// Each 128 activations (16 quadwords) in place: quadwords lo[0..7], then hi[0..7].
inline void reorderActs(const Act& act, int64_t k, __m512i lo, __m512i hi) {
  for (int64_t i = 0; i + 128 <= k; i += 128) {
    const __m512i a = _mm512_loadu_si512(act.q + i), b = _mm512_loadu_si512(act.q + i + 64);
    _mm512_storeu_si512(act.q + i, _mm512_permutex2var_epi64(a, lo, b));
    _mm512_storeu_si512(act.q + i + 64, _mm512_permutex2var_epi64(a, hi, b));
  }
}
inline __m512i q4_0Quad(const uint8_t* b) {
  __m512i x = _mm512_castsi128_si512(load16(b + 2));
  x = _mm512_inserti32x4(x, load16(b + 2 + Q4_0::kBytes), 1);
  x = _mm512_inserti32x4(x, load16(b + 2 + 2 * Q4_0::kBytes), 2);
  return _mm512_inserti32x4(x, load16(b + 2 + 3 * Q4_0::kBytes), 3);
}

// q8_0 / q4_0: R rows from j0, 16 blocks of scales per gather, 2 blocks per dot (4 for q4_0).
template <class F, int R>
void wide32Rows(const QProblem& p, const Act& act, int64_t j0) {
  using W = Wide<F>;
  constexpr bool kSignCoded = std::is_same_v<F, Q8_0> && RADIX_Q_VNNI != 2;
  constexpr bool kQuad = std::is_same_v<F, Q4_0>;
  const int64_t nblk = p.k / 32;
  const __m512i gidx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(F::kBytes));
  __m512 acc[R];
  const uint8_t* w[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps(), w[r] = p.w + (j0 + r) * p.wRowBytes;
  constexpr int64_t ahead = kAheadBytes;
  const auto step = [&](const float (&s16)[R][16], int64_t g, int q, bool one) {
    const int8_t* ap = act.q + 32 * (g + q);
    const __m512i aq = one ? _mm512_maskz_loadu_epi8(0xffffffffull, ap) : _mm512_loadu_si512(ap);
    __m512i off = _mm512_setzero_si512();
    if constexpr (!kSignCoded) off = offsetTerm(aq, W::kOffset);
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = w[r] + (g + q) * F::kBytes;
      // Both lines of the step's blocks (2 x 34 bytes for q8_0 span a second line every step):
      // q8_0 decode on an AMX Xeon (KVM guest, 1 thread), Llama-110M tg128 80-85 -> 85-91 t/s.
      _mm_prefetch(reinterpret_cast<const char*>(blk + ahead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(blk + ahead + 2 * F::kBytes - 1), _MM_HINT_T0);
      const __m512i wq = one ? W::single(blk) : W::pair(blk);
      __m512i dot;
      if constexpr (kSignCoded)
        dot = dotAcc(off, _mm512_abs_epi8(wq),
                     _mm512_mask_sub_epi8(aq, _mm512_movepi8_mask(wq), _mm512_setzero_si512(), aq));
      else if constexpr (std::is_same_v<F, Q8_0>)
        dot = dotAcc(off, _mm512_xor_si512(wq, _mm512_set1_epi8(static_cast<char>(0x80))), aq);
      else
        dot = dotAcc(off, wq, aq);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), pairScale(_mm512_load_ps(s16[r]), q), acc[r]);
    }
  };
  const auto quad = [&](const float (&s16)[R][16], int64_t g, int q) {
    const int8_t* ap = act.q + 32 * (g + q);
    const __m512i alo = _mm512_loadu_si512(ap), ahi = _mm512_loadu_si512(ap + 64);
    const __m512i o = _mm512_set1_epi8(static_cast<char>(W::kOffset));
    const __m512i off = _mm512_sub_epi32(_mm512_setzero_si512(), dotAcc(dotAcc(_mm512_setzero_si512(), o, alo), o, ahi));
    const __m512i m = _mm512_set1_epi8(0x0f);
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = w[r] + (g + q) * F::kBytes;
      _mm_prefetch(reinterpret_cast<const char*>(blk + ahead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(blk + ahead + 64), _MM_HINT_T0);
      const __m512i x = q4_0Quad(blk);
      const __m512i dot = dotAcc(dotAcc(off, _mm512_and_si512(x, m), alo), _mm512_and_si512(_mm512_srli_epi16(x, 4), m), ahi);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), quadScale(_mm512_load_ps(s16[r]), q / 4), acc[r]);
    }
  };
  // The scales of group g + 16 are gathered before group g's dots, off their critical path.
  const auto scales = [&](int64_t g, float (&s16)[R][16]) {
    const int nb = static_cast<int>(std::min<int64_t>(16, nblk - g));
    const __mmask16 bm = static_cast<__mmask16>(nb == 16 ? 0xffffu : (1u << nb) - 1);
    const __m512 da = _mm512_maskz_loadu_ps(bm, act.d + g);
    for (int r = 0; r < R; ++r) {
      __m512 dw;
      if (std::is_same_v<F, Q4_0>) {
        dw = q4_0Scales(w[r] + g * F::kBytes, nb);
      } else {
        const __m512i raw = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), bm, gidx, w[r] + g * F::kBytes, 1);
        dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(raw));
      }
      _mm512_store_ps(s16[r], _mm512_mul_ps(dw, da));
    }
  };
  alignas(64) float cur[R][16], next[R][16];
  scales(0, cur);
  for (int64_t g = 0; g < nblk; g += 16) {
    const int nb = static_cast<int>(std::min<int64_t>(16, nblk - g));
    if (g + 16 < nblk) scales(g + 16, next);
    int q = 0;
    if constexpr (kQuad)
      for (; q + 4 <= nb; q += 4) quad(cur, g, q);
    for (; q + 1 < nb; q += 2) step(cur, g, q, false);
    if (q < nb) step(cur, g, q, true);
    if (g + 16 < nblk) std::memcpy(cur, next, sizeof cur);
  }
  for (int r = 0; r < R; ++r) p.c[(j0 + r) * p.scn] += _mm512_reduce_add_ps(acc[r]);
}

template <>
struct Wide<Q4_K> {
  static constexpr bool kHas = true;
  static constexpr int kRows = 2;
};
template <>
struct Wide<Q5_K> {
  static constexpr bool kHas = true;
  static constexpr int kRows = 2;
};

// q4_k / q5_k: per half super-block, the 64 bytes of quants in one register: the low nibbles are
// sub-blocks 4h and 4h+2, the high ones 4h+1 and 4h+3, so the activations of each 128 are stored
// in that order first (reorderActs) and two dots cover 128 weights. q5_k adds bit s of qh[32] as
// the fifth bit of sub-block s. Broadcasting 32 bytes per 64 weights had been 10-20% slower.
// Lanes 0..7 <- bit s0 of each qh byte (in bit 4), lanes 8..15 <- bit s1.
inline __m512i fifthBit(__m512i qh, int s0, int s1) {
  const __m512i shift = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(s0)), _mm256_set1_epi16(static_cast<short>(s1)), 1);
  return _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift), _mm512_set1_epi8(0x01)), 4);
}

// A q4_k / q5_k super-block's 6-bit scales and mins times d and dmin, in SIMD (kScales is
// scalar): lanes 0..3 scales 0..3, 4..7 mins 0..3, 8..11 scales 4..7, 12..15 mins 4..7. With
// w0, w1, w2 the scale field's words: [w0 & 63s, w1 & 63s, (w2 & 0x0f) | (w0 >> 6) << 4,
// (w2 >> 4) | (w1 >> 6) << 4] per byte.
inline __m512 kScales16(const uint8_t* b) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 4));  // w0 w1 w2, then quants
  const __m128i p = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 1, 0));
  const __m128i q = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 0, 0));
  const __m128i lo = _mm_srlv_epi32(_mm_and_si128(p, _mm_setr_epi32(0x3f3f3f3f, 0x3f3f3f3f, 0x0f0f0f0f, static_cast<int>(0xf0f0f0f0u))),
                                    _mm_setr_epi32(0, 0, 0, 4));
  const __m128i hi = _mm_and_si128(_mm_srli_epi32(q, 2), _mm_setr_epi32(0, 0, 0x30303030, 0x30303030));
  const __m512 six = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_or_si128(lo, hi)));
  const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load4(b))));  // d, dmin
  return _mm512_mul_ps(six, _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1),
                                                  _mm512_castps128_ps512(dd)));
}

template <class F, int R>
void wideQ4KRows(const QProblem& p, const Act& act, int64_t j0) {
  constexpr bool kFive = std::is_same_v<F, Q5_K>;
  constexpr int kQs = kFive ? 48 : 16;  // the nibbles' offset in the block
  const int64_t nblk = p.k / 256;
  const __m512i m = _mm512_set1_epi8(0x0f);
  // kScales16's lanes of sub-block s's scale: s, or s + 4 from 4 on.
  const auto lane = [](int s) { return s < 4 ? s : s + 4; };
  __m512 acc[R], macc[R];
  const uint8_t* w[R];
  for (int r = 0; r < R; ++r)
    acc[r] = _mm512_setzero_ps(), macc[r] = _mm512_setzero_ps(), w[r] = p.w + (j0 + r) * p.wRowBytes;
  for (int64_t b = 0; b < nblk; ++b) {
    // [da 0..3, sd 0..3, da 4..7, sd 4..7]: the activations' factors for kScales16's lanes.
    const __m512 daSd = _mm512_permutex2var_ps(_mm512_castps256_ps512(_mm256_loadu_ps(act.d + 8 * b)),
                                               _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23),
                                               _mm512_castps256_ps512(_mm256_loadu_ps(act.sd + 8 * b)));
    __m512 fac[R];
    const uint8_t* blk[R];
    for (int r = 0; r < R; ++r) {
      blk[r] = w[r] + b * F::kBytes;
      for (int at = 0; at < F::kBytes; at += 64)  // every line the block touches
        _mm_prefetch(reinterpret_cast<const char*>(blk[r] + at + kAheadBytes), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(blk[r] + F::kBytes - 1 + kAheadBytes), _MM_HINT_T0);
      fac[r] = _mm512_mul_ps(kScales16(blk[r]), daSd);
      macc[r] = _mm512_mask_sub_ps(macc[r], 0xf0f0, macc[r], fac[r]);  // - dmin * min * sum(a)
    }
    for (int half = 0; half < 2; ++half) {
      const __m512i alo = _mm512_loadu_si512(act.q + 256 * b + 128 * half);
      const __m512i ahi = _mm512_loadu_si512(act.q + 256 * b + 128 * half + 64);
      for (int r = 0; r < R; ++r) {
        const __m512i x = _mm512_loadu_si512(blk[r] + kQs + 64 * half);
        __m512i lo = _mm512_and_si512(x, m), hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), m);
        if constexpr (kFive) {
          const __m512i qh = _mm512_broadcast_i64x4(load32(blk[r] + 16));
          lo = _mm512_or_si512(lo, fifthBit(qh, 4 * half, 4 * half + 2));
          hi = _mm512_or_si512(hi, fifthBit(qh, 4 * half + 1, 4 * half + 3));
        }
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dotAcc(_mm512_setzero_si512(), lo, alo)),
                                 subScale(fac[r], lane(4 * half), lane(4 * half + 2)), acc[r]);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dotAcc(_mm512_setzero_si512(), hi, ahi)),
                                 subScale(fac[r], lane(4 * half + 1), lane(4 * half + 3)), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) p.c[(j0 + r) * p.scn] += _mm512_reduce_add_ps(_mm512_add_ps(acc[r], macc[r]));
}

template <>
struct Wide<Q6_K> {
  static constexpr bool kHas = true;
  static constexpr int kRows = 1;
};

// q6_k: per half super-block (128 weights), two dots: elements 0..63 from the low nibbles of
// ql[0..63] with qh bits 0-1 / 2-3, elements 64..127 from the high nibbles with bits 4-5 / 6-7.
template <class F, int R>
void wideQ6KRows(const QProblem& p, const Act& act, int64_t j0) {
  const int64_t nblk = p.k / 256;
  const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
  const __m512i shiftLo = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
  const __m512i shiftHi = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
  const __m512i daIdx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  __m512 acc[R];
  const uint8_t* w[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps(), w[r] = p.w + (j0 + r) * p.wRowBytes;
  for (int64_t b = 0; b < nblk; ++b) {
    const __m512 da16 = _mm512_permutexvar_ps(daIdx, _mm512_castps256_ps512(_mm256_loadu_ps(act.d + 8 * b)));
    __m512 fac[R];
    const uint8_t* blk[R];
    for (int r = 0; r < R; ++r) {
      blk[r] = w[r] + b * Q6_K::kBytes;
      const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load16(blk[r] + 192)));
      fac[r] = _mm512_mul_ps(_mm512_mul_ps(sc, _mm512_set1_ps(h2f(blk[r] + 208))), da16);
    }
    for (int half = 0; half < 2; ++half) {
      const __m512i a0 = _mm512_loadu_si512(act.q + 256 * b + 128 * half);
      const __m512i a1 = _mm512_loadu_si512(act.q + 256 * b + 128 * half + 64);
      const __m512i off0 = offsetTerm(a0, 32), off1 = offsetTerm(a1, 32);
      for (int r = 0; r < R; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(blk[r] + 64 * half + kAheadBytes), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk[r] + 128 + 32 * half + kAheadBytes), _MM_HINT_T0);
        const __m512i ql = _mm512_loadu_si512(blk[r] + 64 * half);
        const __m512i qh = _mm512_broadcast_i64x4(load32(blk[r] + 128 + 32 * half));
        const __m512i h0 = _mm512_and_si512(_mm512_slli_epi16(_mm512_srlv_epi16(qh, shiftLo), 4), m30);
        const __m512i h1 = _mm512_and_si512(_mm512_slli_epi16(_mm512_srlv_epi16(qh, shiftHi), 4), m30);
        const __m512i u0 = _mm512_ternarylogic_epi32(ql, m0f, h0, 0xea);  // (ql & 0x0f) | h0
        const __m512i u1 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), m0f, h1, 0xea);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dotAcc(off0, u0, a0)), quadScale(fac[r], 2 * half), acc[r]);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dotAcc(off1, u1, a1)), quadScale(fac[r], 2 * half + 1), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) p.c[(j0 + r) * p.scn] += _mm512_reduce_add_ps(acc[r]);
}

template <class F, int R>
void wideRows(const QProblem& p, const Act& act, int64_t j0) {
  if constexpr (std::is_same_v<F, Q4_K> || std::is_same_v<F, Q5_K>)
    wideQ4KRows<F, R>(p, act, j0);
  else if constexpr (std::is_same_v<F, Q6_K>)
    wideQ6KRows<F, R>(p, act, j0);
  else
    wide32Rows<F, R>(p, act, j0);
}

// Rows [n0, n1) of a one-row problem; the caller has quantized the activations.
template <class F>
void wideGemv(const QProblem& p, int64_t n0, int64_t n1, const Act& act) {
  constexpr int R = Wide<F>::kRows;
  // The activations are this thread's own copy (quantizeActs), reordered in place for the
  // formats that read 128 weights per load.
  if constexpr (std::is_same_v<F, Q4_0>)  // [b0 lo, b1 lo, b2 lo, b3 lo], [b0 hi, ..]: 16 bytes each
    reorderActs(act, p.k, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15));
  if constexpr (std::is_same_v<F, Q4_K> || std::is_same_v<F, Q5_K>)  // 32-byte quarters 0, 2, then 1, 3
    reorderActs(act, p.k, _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11), _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15));
  int64_t j = n0;
  for (; j + R <= n1; j += R) wideRows<F, R>(p, act, j);
  for (; j < n1; ++j) wideRows<F, 1>(p, act, j);
}
