// The attention kernel's body, included by each ISA TU inside its target pragma and an anonymous
// namespace, after the headers below: vectors are clang vector types of W floats, which each TU
// compiles for its ISA.
//   <omp.h> <algorithm> <cmath> <cstdint> <cstring> <limits> <vector> "compiler/kernels/attention.h"

// Keys [lo, hi) that the query at position i sees: the causal mask (j <= i + offset), the window
// and the key lengths (keyEnd); none: lo = hi = 0.
inline void keyRange(const radix::kernels::AttentionProblem& p, int64_t i, int64_t offset, int64_t keyEnd, int32_t& lo,
                     int32_t& hi) {
  int64_t l = 0, h = keyEnd;
  if (p.causal) {
    h = std::min(h, std::max<int64_t>(0, i + offset + 1));
    if (p.window > 0) l = std::max<int64_t>(0, i + offset - p.window + 1);
  }
  if (l >= h) l = h = 0;
  lo = static_cast<int32_t>(l), hi = static_cast<int32_t>(h);
}

// The attention kernels' tasks over OpenMP threads: about 64 rows (query x head of the group)
// a task, decode (one query) one task per key head; later query blocks see more keys under a
// causal mask, so they go first. Work is each thread's scratch.
template <class Work, class Task>
uint64_t runTasks(const radix::kernels::AttentionProblem& p, int threads, Task task) {
  const int64_t group = p.hq / p.hk;
  const int64_t bq = std::clamp<int64_t>(64 / group, 1, p.nq);
  const int64_t blocks = (p.nq + bq - 1) / bq;
  const int64_t tasks = p.batch[0] * p.batch[1] * p.hk * blocks;
  uint64_t keysRead = 0;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(+ : keysRead)
  {
    static thread_local Work w;  // its vectors keep their capacity from call to call (a decode step calls once a layer)
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t block = blocks - 1 - t % blocks, rest = t / blocks;
      const int64_t kh = rest % p.hk, b = rest / p.hk;
      const int64_t i0 = block * bq;
      keysRead += task(p, b / p.batch[1], b % p.batch[1], kh, i0, std::min(bq, p.nq - i0), w);
    }
  }
  return keysRead;
}

template <int W>
struct Attention {
  typedef float F __attribute__((vector_size(W * 4), aligned(4)));
  typedef int32_t I __attribute__((vector_size(W * 4), aligned(4)));
  typedef uint16_t H __attribute__((vector_size(W * 2), aligned(2)));
  static constexpr int64_t kKeys = 64;  // keys per block, a multiple of W
  static constexpr int64_t kAhead = 16;  // keys prefetched ahead
  static constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

  static F load(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, F v) { std::memcpy(p, &v, sizeof v); }
  static F splat(float x) { return F{} + x; }
  static float sum(F v) {
    float s = 0;
    for (int i = 0; i < W; ++i) s += v[i];
    return s;
  }
  static float max(F v) {
    float m = v[0];
    for (int i = 1; i < W; ++i) m = std::max(m, v[i]);
    return m;
  }
  // e^x for x <= 88 (Cephes' polynomial on x - n ln 2); x below -87 gives about 1e-38, not 0.
  static F exp(F x) {
    x = __builtin_elementwise_max(x, splat(-87.3f));
    const F n = __builtin_elementwise_roundeven(x * 1.44269504088896341f);
    F r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    F p = splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const I e = (__builtin_convertvector(n, I) + 127) << 23;
    return p * __builtin_bit_cast(F, e);
  }

  // dst[0..hd) = src[0..hd) * mul (f32, f16 or bf16), dst[hd..pad) = 0.
  static void loadRow(const void* base, radix::kernels::Elem e, int64_t at, float* dst, int64_t hd, int64_t pad,
                      float mul) {
    using radix::kernels::Elem;
    switch (e) {
      case Elem::bf16: widenRow<Elem::bf16>(base, at, dst, hd, mul); break;
      case Elem::f16: widenRow<Elem::f16>(base, at, dst, hd, mul); break;
      default: widenRow<Elem::f32>(base, at, dst, hd, mul); break;
    }
    for (int64_t d = hd; d < pad; ++d) dst[d] = 0;
  }

  struct Scratch {
    std::vector<float> q, qt, ot, s, kr, v, m, l, corr;
    std::vector<int32_t> lo, hi;
  };

  // W lanes of a key or value row at element `at`, widened to f32.
  template <radix::kernels::Elem E>
  static F loadKv(const void* base, int64_t at) {
    using radix::kernels::Elem;
    if constexpr (E == Elem::f32) {
      return load(static_cast<const float*>(base) + at);
    } else if constexpr (E == Elem::bf16) {
      H h;
      std::memcpy(&h, static_cast<const uint16_t*>(base) + at, sizeof h);
      return __builtin_bit_cast(F, __builtin_convertvector(h, I) << 16);
    } else {
#ifdef RADIX_ATTENTION_F16C
      typedef _Float16 Hf __attribute__((vector_size(W * 2), aligned(2)));
      Hf h;
      std::memcpy(&h, static_cast<const uint16_t*>(base) + at, sizeof h);
      return __builtin_convertvector(h, F);
#else
      F v;
      for (int i = 0; i < W; ++i) v[i] = f16ToF32(static_cast<const uint16_t*>(base)[at + i]);
      return v;
#endif
    }
  }
  template <radix::kernels::Elem E>
  static float loadKvOne(const void* base, int64_t at) {
    using radix::kernels::Elem;
    if constexpr (E == Elem::f32) return static_cast<const float*>(base)[at];
    if constexpr (E == Elem::bf16) return bf16ToF32(static_cast<const uint16_t*>(base)[at]);
    return f16ToF32(static_cast<const uint16_t*>(base)[at]);
  }

  // dst[0..hd) = the row at `at` widened, times mul.
  template <radix::kernels::Elem E>
  static void widenRow(const void* base, int64_t at, float* dst, int64_t hd, float mul) {
    int64_t d = 0;
    for (; d + W <= hd; d += W) store(dst + d, loadKv<E>(base, at + d) * mul);
    for (; d < hd; ++d) dst[d] = loadKvOne<E>(base, at + d) * mul;
  }

  // The transposing sum: merging adjacent vectors level by level, lane j of a[0] ends up holding
  // the sum of a[j]'s lanes (W dot products without W horizontal sums). At `Level`, each vector
  // holds 2^Level keys of W >> Level partial sums; lane i of the merged vector takes the first (or
  // second) half of its key's partials.
  template <int Level>
  static constexpr int mergeLane(int i, bool second) {
    const int s = W >> Level, half = s / 2, keys = 1 << Level, key = i / half, within = i % half + (second ? half : 0);
    return key < keys ? key * s + within : W + (key - keys) * s + within;
  }
  template <int Level, int... L>
  static F mergePair(F u, F v, std::integer_sequence<int, L...>) {
    return __builtin_shufflevector(u, v, mergeLane<Level>(L, false)...) + __builtin_shufflevector(u, v, mergeLane<Level>(L, true)...);
  }
  template <int Level = 0>
  static void sumEach(F* a) {
    if constexpr ((1 << Level) < W) {
      for (int i = 0; i < (W >> Level) / 2; ++i) a[i] = mergePair<Level>(a[2 * i], a[2 * i + 1], std::make_integer_sequence<int, W>{});
      sumEach<Level + 1>(a);
    }
  }

  // Decode: the R <= 4 rows (one query of each head of a group) of the key heads [kh0, kh1)
  // against the keys they see. Keys go in blocks, each block head by head:
  // scores, softmax and values, while the next head's keys are asked for. Keys and values are
  // widened in registers, and the scores of W keys come from one transposing sum.
  template <int R, radix::kernels::Elem E>
  static uint64_t narrowTask(const radix::kernels::AttentionProblem& p, int64_t b0, int64_t b1, int64_t kh0,
                             int64_t kh1, Scratch& w) {
    const int64_t group = p.hq / p.hk, hd = p.hd, vec = hd / W * W, heads = kh1 - kh0, nq = p.nq;
    // Per head of the range: q and o {R, hd}, S {R, kKeys}, m, l, corr {R}.
    w.q.resize(heads * R * hd);
    w.ot.assign(heads * R * hd, 0.0f);
    w.s.resize(heads * R * kKeys);
    w.m.assign(heads * R, kMinusInf);
    w.l.assign(heads * R, 0.0f);
    w.corr.resize(heads * R);
    int32_t lo[R], hi[R];
    const int64_t offset = p.offset ? *p.offset : p.nk - p.nq;
    int64_t keyEnd = p.nk;
    if (p.lengths)
      keyEnd = std::min<int64_t>(keyEnd, std::max<int64_t>(0, p.lengths[b0 * p.lengthStride[0] + b1 * p.lengthStride[1]]));
    int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
    for (int r = 0; r < R; ++r) {
      keyRange(p, r % nq, offset, keyEnd, lo[r], hi[r]);
      if (lo[r] < hi[r]) first = std::min<int64_t>(first, lo[r]), last = std::max<int64_t>(last, hi[r]);
      for (int64_t kh = kh0; kh < kh1; ++kh) {
        const int64_t h = kh * group + r / nq, i = r % nq;
        loadRow(p.q, p.bf16 ? radix::kernels::Elem::bf16 : radix::kernels::Elem::f32,
                b0 * p.qStride[0] + b1 * p.qStride[1] + h * p.qStride[2] + i * p.qStride[3], &w.q[((kh - kh0) * R + r) * hd],
                hd, hd, p.softcap > 0 ? 1.0f : p.scale);
      }
    }
    const int64_t kBase = b0 * p.kStride[0] + b1 * p.kStride[1];
    const int64_t vBase = b0 * p.vStride[0] + b1 * p.vStride[1];
    const int64_t es = radix::kernels::elemBytes(E), rowBytes = hd * es;
    const char* kBytes = static_cast<const char*>(p.k);
    const char* vBytes = static_cast<const char*>(p.v);
    uint64_t keysRead = 0;
    for (int64_t j0 = first; j0 < last; j0 += kKeys) {
      const int64_t n = std::min(kKeys, last - j0);
      keysRead += static_cast<uint64_t>(n * heads);
      for (int64_t kh = kh0; kh < kh1; ++kh) {
        const int64_t hk = kBase + kh * p.kStride[2], hv = vBase + kh * p.vStride[2], at = (kh - kh0) * R;
        // Asked for early, a group of W keys at a time: the next head's keys (the next block's
        // first head after the last), and this head's values (read once its scores are done).
        const int64_t nextHead = kh + 1 < kh1 ? kh + 1 : kh0, nextJ0 = kh + 1 < kh1 ? j0 : j0 + kKeys;
        for (int64_t jj = 0; jj < n; jj += W) {
          for (int64_t x = 0; x < W; ++x) {
            if (const int64_t j = nextJ0 + jj + x; j < std::min(nextJ0 + kKeys, last))
              for (int64_t b = 0; b < rowBytes; b += 64)
                __builtin_prefetch(kBytes + (kBase + nextHead * p.kStride[2] + j * p.kStride[3]) * es + b);
            if (jj + x < n)
              for (int64_t b = 0; b < rowBytes; b += 64) __builtin_prefetch(vBytes + (hv + (j0 + jj + x) * p.vStride[3]) * es + b);
          }
          for (int r = 0; r < R; ++r) {
            const float* q = &w.q[(at + r) * hd];
            F acc[W];
            for (int x = 0; x < W; ++x) {
              const int64_t k = hk + (j0 + jj + std::min<int64_t>(x, n - 1 - jj)) * p.kStride[3];
              F a = F{};
              for (int64_t d = 0; d < vec; d += W) a += load(q + d) * loadKv<E>(p.k, k + d);
              for (int64_t d = vec; d < hd; ++d) a[0] += q[d] * loadKvOne<E>(p.k, k + d);
              acc[x] = a;
            }
            sumEach(acc);
            store(&w.s[(at + r) * kKeys + jj], acc[0]);
          }
        }
        float* s = &w.s[at * kKeys];
        if (p.softcap > 0)
          for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < n; ++j) s[r * kKeys + j] = p.softcap * std::tanh(s[r * kKeys + j] * p.scale / p.softcap);
        softmaxRows(s, lo, hi, &w.m[at], &w.l[at], &w.corr[at], j0, n, R);
        float* o = &w.ot[at * hd];
        for (int r = 0; r < R; ++r)
          if (const float c = w.corr[at + r]; c != 1.0f)
            for (int64_t d = 0; d < hd; ++d) o[r * hd + d] *= c;
        const int64_t v0 = hv + j0 * p.vStride[3];
        int64_t d = 0;
        for (; d + 4 * W <= vec; d += 4 * W) accumulate<R, 4, E>(o + d, s, hd, p, v0 + d, n);
        for (; d < vec; d += W) accumulate<R, 1, E>(o + d, s, hd, p, v0 + d, n);
        for (; d < hd; ++d)
          for (int64_t j = 0; j < n; ++j) {
            const float x = loadKvOne<E>(p.v, v0 + j * p.vStride[3] + d);
            for (int r = 0; r < R; ++r) o[r * hd + d] += s[r * kKeys + j] * x;
          }
      }
    }
    for (int64_t kh = kh0; kh < kh1; ++kh)
      for (int r = 0; r < R; ++r) {
        const int64_t h = kh * group + r / nq, i = r % nq, at = (kh - kh0) * R + r;
        writeRow(p, b0 * p.oStride[0] + b1 * p.oStride[1] + h * p.oStride[2] + i * p.oStride[3], w.l[at], &w.ot[at * hd], 1);
      }
    return keysRead;
  }

  // o[r][d, d + C W) += sum_j S[r][j] * v[j][d, ..) over nj keys: o {R, hd}, S {R, kKeys}, v[j] at
  // vAt + j * (position stride); the C W columns of the R rows stay in registers.
  template <int R, int C, radix::kernels::Elem E>
  static void accumulate(float* o, const float* s, int64_t hd, const radix::kernels::AttentionProblem& p, int64_t vAt,
                         int64_t nj) {
    F a[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) a[r][c] = load(o + r * hd + c * W);
    for (int64_t j = 0; j < nj; ++j) {
      F x[C];
      for (int c = 0; c < C; ++c) x[c] = loadKv<E>(p.v, vAt + j * p.vStride[3] + c * W);
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) a[r][c] += s[r * kKeys + j] * x[c];
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) store(o + r * hd + c * W, a[r][c]);
  }

  // The output row at `at` from its unnormalized sum o (elements `step` apart) and its total l.
  static void writeRow(const radix::kernels::AttentionProblem& p, int64_t at, float l, const float* o, int64_t step) {
    // A query that sees no key divides 0 by 0: NaN, as PyTorch gives.
    const float inv = l > 0 ? 1.0f / l : std::numeric_limits<float>::quiet_NaN();
    if (p.bf16) {
      uint16_t* dst = static_cast<uint16_t*>(p.out) + at;
      for (int64_t d = 0; d < p.hd; ++d) dst[d] = f32ToBf16(o[d * step] * inv);
    } else {
      float* dst = static_cast<float*>(p.out) + at;
      for (int64_t d = 0; d < p.hd; ++d) dst[d] = o[d * step] * inv;
    }
  }


  // One task: the queries [i0, i0 + bq) of every head of key head `kh` in batch (b0, b1): `rows`
  // (query, head) rows, padded to `rp` (a multiple of W) for the layouts that vectorize over rows
  // (qt = Qᵀ {pad, rp}, s = Sᵀ {kKeys, rp}, so that the softmax runs down columns).
  static uint64_t task(const radix::kernels::AttentionProblem& p, int64_t b0, int64_t b1, int64_t kh, int64_t i0,
                       int64_t bq, Scratch& w) {
    const int64_t group = p.hq / p.hk, rows = group * bq, rp = (rows + W - 1) / W * W, hd = p.hd,
                  pad = (hd + W - 1) / W * W;
    w.q.assign(rows * pad, 0.0f);
    w.qt.assign(pad * rp, 0.0f);
    w.ot.assign(pad * rp, 0.0f);
    w.s.assign(kKeys * rp, 0.0f);
    w.m.assign(rp, kMinusInf);
    w.l.assign(rp, 0.0f);
    w.corr.assign(rp, 0.0f);
    w.lo.assign(rp, 0);
    w.hi.assign(rp, 0);
    w.kr.resize(kKeys * pad);
    w.v.resize(kKeys * pad);
    const int64_t offset = p.offset ? *p.offset : p.nk - p.nq;
    int64_t keyEnd = p.nk;
    if (p.lengths)
      keyEnd = std::min<int64_t>(keyEnd, std::max<int64_t>(0, p.lengths[b0 * p.lengthStride[0] + b1 * p.lengthStride[1]]));
    const float qMul = p.softcap > 0 ? 1.0f : p.scale;
    int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t g = r / bq, i = i0 + r % bq, h = kh * group + g;
      float* qr = &w.q[r * pad];
      loadRow(p.q, p.bf16 ? radix::kernels::Elem::bf16 : radix::kernels::Elem::f32, b0 * p.qStride[0] + b1 * p.qStride[1] + h * p.qStride[2] + i * p.qStride[3], qr, hd, pad, qMul);
      for (int64_t d = 0; d < hd; ++d) w.qt[d * rp + r] = qr[d];
      keyRange(p, i, offset, keyEnd, w.lo[r], w.hi[r]);
      if (w.lo[r] < w.hi[r]) first = std::min<int64_t>(first, w.lo[r]), last = std::max<int64_t>(last, w.hi[r]);
    }
    const int64_t kBase = b0 * p.kStride[0] + b1 * p.kStride[1] + kh * p.kStride[2];
    const int64_t vBase = b0 * p.vStride[0] + b1 * p.vStride[1] + kh * p.vStride[2];
    // f32 rows are read in place (V's when no padding is needed); f16 and bf16 ones are widened first.
    const bool kInPlace = p.kv == radix::kernels::Elem::f32, vInPlace = kInPlace && pad == hd;
    const int64_t es = kInPlace ? 4 : 2, rowBytes = hd * es;
    uint64_t keysRead = 0;
    for (int64_t j0 = first; j0 < last; j0 += kKeys) {
      const int64_t n = std::min(kKeys, last - j0);
      keysRead += static_cast<uint64_t>(n);
      const float* krow[kKeys];
      const float* vrow[kKeys];
      for (int64_t j = 0; j < n; ++j) {
        if (const int64_t next = j0 + j + kAhead; next < last) {
          const int64_t kAt = kBase + next * p.kStride[3], vAt = vBase + next * p.vStride[3];
          for (int64_t o = 0; o < rowBytes; o += 64) {
            __builtin_prefetch(static_cast<const char*>(p.k) + kAt * es + o);
            __builtin_prefetch(static_cast<const char*>(p.v) + vAt * es + o);
          }
        }
        if (kInPlace) {
          krow[j] = static_cast<const float*>(p.k) + kBase + (j0 + j) * p.kStride[3];
        } else {
          loadRow(p.k, p.kv, kBase + (j0 + j) * p.kStride[3], &w.kr[j * pad], hd, pad, 1.0f);
          krow[j] = &w.kr[j * pad];
        }
        if (vInPlace) {
          vrow[j] = static_cast<const float*>(p.v) + vBase + (j0 + j) * p.vStride[3];
        } else {
          loadRow(p.v, p.kv, vBase + (j0 + j) * p.vStride[3], &w.v[j * pad], hd, pad, 1.0f);
          vrow[j] = &w.v[j * pad];
        }
      }
      scoresWide(w, krow, n, hd, rp);
      if (p.softcap > 0)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t r = 0; r < rows; ++r) {
            float& x = w.s[j * rp + r];
            x = p.softcap * std::tanh(x * p.scale / p.softcap);
          }
      softmaxColumns(w, j0, n, rp);
      for (int64_t r = 0; r < rp; r += W) {
        const F c = load(&w.corr[r]);
        for (int64_t d = 0; d < hd; ++d) store(&w.ot[d * rp + r], load(&w.ot[d * rp + r]) * c);
      }
      accumulateWide(w, vrow, n, hd, rp);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t g = r / bq, i = i0 + r % bq, h = kh * group + g;
      writeRow(p, b0 * p.oStride[0] + b1 * p.oStride[1] + h * p.oStride[2] + i * p.oStride[3], w.l[r], &w.ot[r], rp);
    }
    return keysRead;
  }

  // Sᵀ[j][r] = K[j] · Q[r] for the n keys: four keys (broadcast) × two vectors of rows at a time.
  static void scoresWide(Scratch& w, const float* const* krow, int64_t n, int64_t hd, int64_t rp) {
    const float* qt = w.qt.data();
    for (int64_t j = 0; j < n; j += 4) {
      const int64_t nj = std::min<int64_t>(4, n - j);
      const float* k0 = krow[j];
      const float* k1 = krow[j + std::min<int64_t>(1, nj - 1)];
      const float* k2 = krow[j + std::min<int64_t>(2, nj - 1)];
      const float* k3 = krow[j + std::min<int64_t>(3, nj - 1)];
      int64_t r = 0;
      for (; r + 2 * W <= rp; r += 2 * W) {
        F a00 = F{}, a01 = F{}, a10 = F{}, a11 = F{}, a20 = F{}, a21 = F{}, a30 = F{}, a31 = F{};
        for (int64_t d = 0; d < hd; ++d) {
          const F q0 = load(qt + d * rp + r), q1 = load(qt + d * rp + r + W);
          const float x0 = k0[d], x1 = k1[d], x2 = k2[d], x3 = k3[d];
          a00 += x0 * q0, a01 += x0 * q1, a10 += x1 * q0, a11 += x1 * q1;
          a20 += x2 * q0, a21 += x2 * q1, a30 += x3 * q0, a31 += x3 * q1;
        }
        const F acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
        for (int64_t x = 0; x < nj; ++x) {
          store(&w.s[(j + x) * rp + r], acc[x][0]);
          store(&w.s[(j + x) * rp + r + W], acc[x][1]);
        }
      }
      for (; r < rp; r += W) {
        F a0 = F{}, a1 = F{}, a2 = F{}, a3 = F{};
        for (int64_t d = 0; d < hd; ++d) {
          const F q0 = load(qt + d * rp + r);
          a0 += k0[d] * q0, a1 += k1[d] * q0, a2 += k2[d] * q0, a3 += k3[d] * q0;
        }
        const F acc[4] = {a0, a1, a2, a3};
        for (int64_t x = 0; x < nj; ++x) store(&w.s[(j + x) * rp + r], acc[x]);
      }
    }
  }

  // The online softmax over keys [j0, j0 + n), W rows at a time down the columns of Sᵀ: masked
  // scores become 0 probabilities, m and l move on, corr says how much earlier sums shrink.
  static void softmaxColumns(Scratch& w, int64_t j0, int64_t n, int64_t rp) {
    for (int64_t r = 0; r < rp; r += W) {
      I lo, hi;
      std::memcpy(&lo, &w.lo[r], sizeof lo);
      std::memcpy(&hi, &w.hi[r], sizeof hi);
      F mx = splat(kMinusInf);
      for (int64_t j = 0; j < n; ++j) {
        const int32_t at = static_cast<int32_t>(j0 + j);
        const I valid = (lo <= at) & (hi > at);
        mx = __builtin_elementwise_max(mx, valid ? load(&w.s[j * rp + r]) : splat(kMinusInf));
      }
      const F m = load(&w.m[r]);
      const F mNew = __builtin_elementwise_max(m, mx);
      const I none = m == splat(kMinusInf);
      const F corr = none ? F{} : exp(m - mNew);
      F total = F{};
      for (int64_t j = 0; j < n; ++j) {
        const int32_t at = static_cast<int32_t>(j0 + j);
        const I valid = (lo <= at) & (hi > at);
        float* s = &w.s[j * rp + r];
        const F e = valid ? exp(load(s) - mNew) : F{};
        store(s, e);
        total += e;
      }
      store(&w.m[r], mNew);
      store(&w.l[r], load(&w.l[r]) * corr + total);
      store(&w.corr[r], corr);
    }
  }

  // Oᵀ[d][r] += sum_j v[j][d] * Sᵀ[j][r]: four dims (broadcast) × two vectors of rows at a time.
  static void accumulateWide(Scratch& w, const float* const* v, int64_t n, int64_t hd, int64_t rp) {
    const float* s = w.s.data();
    float* ot = w.ot.data();
    for (int64_t d = 0; d < hd; d += 4) {
      const int64_t nd = std::min<int64_t>(4, hd - d);
      const int64_t d1 = d + std::min<int64_t>(1, nd - 1), d2 = d + std::min<int64_t>(2, nd - 1),
                    d3 = d + std::min<int64_t>(3, nd - 1);
      int64_t r = 0;
      for (; r + 2 * W <= rp; r += 2 * W) {
        F a00 = load(ot + d * rp + r), a01 = load(ot + d * rp + r + W), a10 = load(ot + d1 * rp + r),
          a11 = load(ot + d1 * rp + r + W), a20 = load(ot + d2 * rp + r), a21 = load(ot + d2 * rp + r + W),
          a30 = load(ot + d3 * rp + r), a31 = load(ot + d3 * rp + r + W);
        for (int64_t j = 0; j < n; ++j) {
          const F p0 = load(s + j * rp + r), p1 = load(s + j * rp + r + W);
          const float* vj = v[j];
          const float x0 = vj[d], x1 = vj[d1], x2 = vj[d2], x3 = vj[d3];
          a00 += x0 * p0, a01 += x0 * p1, a10 += x1 * p0, a11 += x1 * p1;
          a20 += x2 * p0, a21 += x2 * p1, a30 += x3 * p0, a31 += x3 * p1;
        }
        const F acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
        for (int64_t x = nd - 1; x >= 0; --x) store(ot + (d + x) * rp + r, acc[x][0]), store(ot + (d + x) * rp + r + W, acc[x][1]);
      }
      for (; r < rp; r += W) {
        F a[4] = {load(ot + d * rp + r), load(ot + d1 * rp + r), load(ot + d2 * rp + r), load(ot + d3 * rp + r)};
        for (int64_t j = 0; j < n; ++j) {
          const F pj = load(s + j * rp + r);
          a[0] += v[j][d] * pj, a[1] += v[j][d1] * pj, a[2] += v[j][d2] * pj, a[3] += v[j][d3] * pj;
        }
        for (int64_t x = nd - 1; x >= 0; --x) store(ot + (d + x) * rp + r, a[x]);
      }
    }
  }

  // Decode (S row-major {rows, kKeys}): the online softmax along each row, W keys at a time over
  // the keys the row sees in this block ([a, b): the mask is a range); the others get probability 0.
  static void softmaxRows(float* scores, const int32_t* lo, const int32_t* hi, float* ms, float* ls, float* corrs,
                          int64_t j0, int64_t n, int64_t rows) {
    for (int64_t r = 0; r < rows; ++r) {
      float* s = scores + r * kKeys;
      const int64_t a = std::clamp<int64_t>(lo[r] - j0, 0, n), b = std::clamp<int64_t>(hi[r] - j0, 0, n);
      if (a >= b) {
        std::fill(s, s + n, 0.0f);
        corrs[r] = 1.0f;
        continue;
      }
      F vmax = splat(kMinusInf);
      int64_t j = a;
      for (; j + W <= b; j += W) vmax = __builtin_elementwise_max(vmax, load(s + j));
      float mx = max(vmax);
      for (; j < b; ++j) mx = std::max(mx, s[j]);
      const float m = ms[r], mNew = std::max(m, mx);
      const float corr = m == kMinusInf ? 0.0f : exp(splat(m - mNew))[0];
      F vsum = F{};
      for (j = a; j + W <= b; j += W) {
        const F e = exp(load(s + j) - mNew);
        store(s + j, e);
        vsum += e;
      }
      float total = sum(vsum);
      for (; j < b; ++j) total += (s[j] = exp(splat(s[j] - mNew))[0]);
      std::fill(s, s + a, 0.0f);
      std::fill(s + b, s + n, 0.0f);
      ms[r] = mNew;
      ls[r] = ls[r] * corr + total;
      corrs[r] = corr;
    }
  }

  // Decode (group * nq <= 4 rows a key head) takes the narrow path: per batch, the key heads in as
  // many ranges as there are threads; else the tasks of runTasks.
  static uint64_t run(const radix::kernels::AttentionProblem& p, int threads) {
    const int64_t rows = p.hq / p.hk * p.nq;
    if (rows > 4) return runTasks<Scratch>(p, threads, &Attention::task);
    const int64_t batches = p.batch[0] * p.batch[1];
    const int64_t ranges = std::min<int64_t>(p.hk, (threads + batches - 1) / batches), tasks = batches * ranges;
    uint64_t keysRead = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static) reduction(+ : keysRead)
    for (int64_t t = 0; t < tasks; ++t) {
      static thread_local Scratch w;
      const int64_t b = t / ranges, range = t % ranges, b0 = b / p.batch[1], b1 = b % p.batch[1];
      const int64_t kh0 = range * p.hk / ranges, kh1 = (range + 1) * p.hk / ranges;
      keysRead += narrowRows(p, rows, b0, b1, kh0, kh1, w);
    }
    return keysRead;
  }
  static uint64_t narrowRows(const radix::kernels::AttentionProblem& p, int64_t rows, int64_t b0, int64_t b1,
                             int64_t kh0, int64_t kh1, Scratch& w) {
    switch (rows) {
      case 1: return narrowKv<1>(p, b0, b1, kh0, kh1, w);
      case 2: return narrowKv<2>(p, b0, b1, kh0, kh1, w);
      case 3: return narrowKv<3>(p, b0, b1, kh0, kh1, w);
      default: return narrowKv<4>(p, b0, b1, kh0, kh1, w);
    }
  }
  template <int R>
  static uint64_t narrowKv(const radix::kernels::AttentionProblem& p, int64_t b0, int64_t b1, int64_t kh0, int64_t kh1,
                           Scratch& w) {
    using radix::kernels::Elem;
    switch (p.kv) {
      case Elem::bf16: return narrowTask<R, Elem::bf16>(p, b0, b1, kh0, kh1, w);
      case Elem::f16: return narrowTask<R, Elem::f16>(p, b0, b1, kh0, kh1, w);
      default: return narrowTask<R, Elem::f32>(p, b0, b1, kh0, kh1, w);
    }
  }
};
