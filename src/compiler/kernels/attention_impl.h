// The attention kernel's body, included by each ISA TU inside its target pragma and an anonymous
// namespace, after the headers below: vectors are clang vector types of W floats, which each TU
// compiles for its ISA.
//   <omp.h> <algorithm> <cmath> <cstdint> <cstring> <limits> <vector> "compiler/kernels/attention.h"

template <int W>
struct Attention {
  typedef float F __attribute__((vector_size(W * 4), aligned(4)));
  typedef int32_t I __attribute__((vector_size(W * 4), aligned(4)));
  typedef uint16_t H __attribute__((vector_size(W * 2), aligned(2)));
  static constexpr int64_t kKeys = 64;  // keys per block, a multiple of W
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

  static float bf16ToF32(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  static uint16_t f32ToBf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
    bits += 0x7fffu + ((bits >> 16) & 1);
    return static_cast<uint16_t>(bits >> 16);
  }
  // dst[0..hd) = src[0..hd) * mul (f32 or bf16), dst[hd..pad) = 0.
  static void loadRow(const void* base, bool bf16, int64_t at, float* dst, int64_t hd, int64_t pad, float mul) {
    if (bf16) {
      const uint16_t* s = static_cast<const uint16_t*>(base) + at;
      int64_t d = 0;
      for (; d + W <= hd; d += W) {
        H h;
        std::memcpy(&h, s + d, sizeof h);
        const I bits = __builtin_convertvector(h, I) << 16;
        store(dst + d, __builtin_bit_cast(F, bits) * mul);
      }
      for (; d < hd; ++d) dst[d] = bf16ToF32(s[d]) * mul;
    } else {
      const float* s = static_cast<const float*>(base) + at;
      for (int64_t d = 0; d < hd; ++d) dst[d] = s[d] * mul;
    }
    for (int64_t d = hd; d < pad; ++d) dst[d] = 0;
  }

  struct Scratch {
    std::vector<float> q, o, s, kt, kr, v, m, l;
    std::vector<int64_t> lo, hi;
  };

  // One task: the queries [i0, i0 + bq) of every head of key head `kh` in batch (b0, b1).
  static uint64_t task(const radix::kernels::AttentionProblem& p, int64_t b0, int64_t b1, int64_t kh, int64_t i0,
                       int64_t bq, Scratch& w) {
    const int64_t group = p.hq / p.hk, rows = group * bq, hd = p.hd, pad = (hd + W - 1) / W * W;
    w.q.resize(rows * pad);
    w.o.assign(rows * pad, 0.0f);
    w.s.resize(rows * kKeys);
    w.m.assign(rows, kMinusInf);
    w.l.assign(rows, 0.0f);
    w.lo.resize(rows);
    w.hi.resize(rows);
    w.kt.resize(pad * kKeys);
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
      loadRow(p.q, p.bf16, b0 * p.qStride[0] + b1 * p.qStride[1] + h * p.qStride[2] + i * p.qStride[3],
              &w.q[r * pad], hd, pad, qMul);
      int64_t lo = 0, hi = keyEnd;
      if (p.causal) {
        hi = std::min(hi, std::max<int64_t>(0, i + offset + 1));
        if (p.window > 0) lo = std::max<int64_t>(0, i + offset - p.window + 1);
      }
      if (lo >= hi) lo = hi = 0;
      w.lo[r] = lo, w.hi[r] = hi;
      if (lo < hi) first = std::min(first, lo), last = std::max(last, hi);
    }
    const int64_t kBase = b0 * p.kStride[0] + b1 * p.kStride[1] + kh * p.kStride[2];
    const int64_t vBase = b0 * p.vStride[0] + b1 * p.vStride[1] + kh * p.vStride[2];
    const bool transposed = rows > 4;  // few rows (decode): dot products on the key rows as they are
    uint64_t keysRead = 0;
    for (int64_t j0 = first; j0 < last; j0 += kKeys) {
      const int64_t n = std::min(kKeys, last - j0);
      keysRead += static_cast<uint64_t>(n);
      for (int64_t j = 0; j < n; ++j) {
        loadRow(p.k, p.bf16, kBase + (j0 + j) * p.kStride[3], &w.kr[j * pad], hd, pad, 1.0f);
        loadRow(p.v, p.bf16, vBase + (j0 + j) * p.vStride[3], &w.v[j * pad], hd, pad, 1.0f);
      }
      if (transposed) {
        for (int64_t d = 0; d < pad; ++d)
          for (int64_t j = 0; j < kKeys; ++j) w.kt[d * kKeys + j] = j < n ? w.kr[j * pad + d] : 0.0f;
        scoresTransposed(w, rows, pad);
      } else {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < n; ++j) {
            F acc = F{};
            for (int64_t d = 0; d < pad; d += W) acc += load(&w.q[r * pad + d]) * load(&w.kr[j * pad + d]);
            w.s[r * kKeys + j] = sum(acc);
          }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t lo = std::max(w.lo[r] - j0, int64_t{0}), hi = std::min(w.hi[r] - j0, n);
        float* s = &w.s[r * kKeys];
        if (lo >= hi) {  // this row sees none of these keys: it adds nothing
          for (int64_t j = 0; j < kKeys; j += W) store(s + j, F{});
          continue;
        }
        if (p.softcap > 0)
          for (int64_t j = lo; j < hi; ++j) s[j] = p.softcap * std::tanh(s[j] * p.scale / p.softcap);
        const I iota = iotaI();
        F blockMax = splat(kMinusInf);
        for (int64_t j = 0; j < kKeys; j += W) {
          const I at = iota + static_cast<int32_t>(j);
          const I valid = (at >= static_cast<int32_t>(lo)) & (at < static_cast<int32_t>(hi));
          blockMax = __builtin_elementwise_max(blockMax, valid ? load(s + j) : splat(kMinusInf));
        }
        const float mNew = std::max(w.m[r], max(blockMax));
        const float correction = w.m[r] == kMinusInf ? 0.0f : std::exp(w.m[r] - mNew);
        w.m[r] = mNew;
        F total = F{};
        for (int64_t j = 0; j < kKeys; j += W) {
          const I at = iota + static_cast<int32_t>(j);
          const I valid = (at >= static_cast<int32_t>(lo)) & (at < static_cast<int32_t>(hi));
          const F e = exp(load(s + j) - mNew);
          const F pj = valid ? e : F{};
          store(s + j, pj);
          total += pj;
        }
        w.l[r] = w.l[r] * correction + sum(total);
        float* o = &w.o[r * pad];
        if (correction != 1.0f)
          for (int64_t d = 0; d < pad; d += W) store(o + d, load(o + d) * correction);
      }
      accumulate(w, rows, n, pad);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t g = r / bq, i = i0 + r % bq, h = kh * group + g;
      const int64_t at = b0 * p.oStride[0] + b1 * p.oStride[1] + h * p.oStride[2] + i * p.oStride[3];
      // A query that sees no key divides 0 by 0: NaN, as the composition's softmax gives.
      const float inv = w.l[r] > 0 ? 1.0f / w.l[r] : std::numeric_limits<float>::quiet_NaN();
      const float* o = &w.o[r * pad];
      if (p.bf16) {
        uint16_t* dst = static_cast<uint16_t*>(p.out) + at;
        for (int64_t d = 0; d < hd; ++d) dst[d] = f32ToBf16(o[d] * inv);
      } else {
        float* dst = static_cast<float*>(p.out) + at;
        for (int64_t d = 0; d < hd; ++d) dst[d] = o[d] * inv;
      }
    }
    return keysRead;
  }

  static I iotaI() {
    I v;
    for (int i = 0; i < W; ++i) v[i] = i;
    return v;
  }

  // s[r][0..kKeys) = q[r] · kt[:, j], four rows × two vectors of keys at a time.
  static void scoresTransposed(Scratch& w, int64_t rows, int64_t pad) {
    const float* kt = w.kt.data();
    for (int64_t r0 = 0; r0 < rows; r0 += 4) {
      const int64_t nr = std::min<int64_t>(4, rows - r0);
      const float* q[4];
      for (int x = 0; x < 4; ++x) q[x] = &w.q[(r0 + std::min<int64_t>(x, nr - 1)) * pad];
      for (int64_t j = 0; j < kKeys; j += 2 * W) {
        F a00 = F{}, a01 = F{}, a10 = F{}, a11 = F{}, a20 = F{}, a21 = F{}, a30 = F{}, a31 = F{};
        for (int64_t d = 0; d < pad; ++d) {
          const F k0 = load(kt + d * kKeys + j), k1 = load(kt + d * kKeys + j + W);
          const float x0 = q[0][d], x1 = q[1][d], x2 = q[2][d], x3 = q[3][d];
          a00 += x0 * k0, a01 += x0 * k1, a10 += x1 * k0, a11 += x1 * k1;
          a20 += x2 * k0, a21 += x2 * k1, a30 += x3 * k0, a31 += x3 * k1;
        }
        const F acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
        for (int64_t x = 0; x < nr; ++x) {
          store(&w.s[(r0 + x) * kKeys + j], acc[x][0]);
          store(&w.s[(r0 + x) * kKeys + j + W], acc[x][1]);
        }
      }
    }
  }

  // o[r] += sum_j s[r][j] * v[j] for every row, four rows × two vectors of o at a time.
  static void accumulate(Scratch& w, int64_t rows, int64_t n, int64_t pad) {
    const float* v = w.v.data();
    for (int64_t r0 = 0; r0 < rows; r0 += 4) {
      const int64_t nr = std::min<int64_t>(4, rows - r0);
      const float* pj[4];
      float* o[4];
      for (int x = 0; x < 4; ++x) {
        const int64_t r = r0 + std::min<int64_t>(x, nr - 1);
        pj[x] = &w.s[r * kKeys], o[x] = &w.o[r * pad];
      }
      int64_t d = 0;
      for (; d + 2 * W <= pad; d += 2 * W) {
        F a00 = load(o[0] + d), a01 = load(o[0] + d + W), a10 = load(o[1] + d), a11 = load(o[1] + d + W);
        F a20 = load(o[2] + d), a21 = load(o[2] + d + W), a30 = load(o[3] + d), a31 = load(o[3] + d + W);
        for (int64_t j = 0; j < n; ++j) {
          const F v0 = load(v + j * pad + d), v1 = load(v + j * pad + d + W);
          const float x0 = pj[0][j], x1 = pj[1][j], x2 = pj[2][j], x3 = pj[3][j];
          a00 += x0 * v0, a01 += x0 * v1, a10 += x1 * v0, a11 += x1 * v1;
          a20 += x2 * v0, a21 += x2 * v1, a30 += x3 * v0, a31 += x3 * v1;
        }
        const F acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
        for (int64_t x = nr - 1; x >= 0; --x) store(o[x] + d, acc[x][0]), store(o[x] + d + W, acc[x][1]);
      }
      for (; d < pad; d += W) {
        F a[4] = {load(o[0] + d), load(o[1] + d), load(o[2] + d), load(o[3] + d)};
        for (int64_t j = 0; j < n; ++j)
          for (int x = 0; x < 4; ++x) a[x] += pj[x][j] * load(v + j * pad + d);
        for (int64_t x = nr - 1; x >= 0; --x) store(o[x] + d, a[x]);
      }
    }
  }

  static uint64_t run(const radix::kernels::AttentionProblem& p, int threads) {
    const int64_t group = p.hq / p.hk;
    // About 64 rows (query × head of the group) a task; decode (one query) is one task per key head.
    const int64_t bq = std::clamp<int64_t>(64 / group, 1, p.nq);
    const int64_t blocks = (p.nq + bq - 1) / bq;
    const int64_t tasks = p.batch[0] * p.batch[1] * p.hk * blocks;
    uint64_t keysRead = 0;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(+ : keysRead)
    {
      Scratch w;
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < tasks; ++t) {
        // Later query blocks see more keys under a causal mask: they go first.
        const int64_t block = blocks - 1 - t % blocks, rest = t / blocks;
        const int64_t kh = rest % p.hk, b = rest / p.hk;
        const int64_t i0 = block * bq;
        keysRead += task(p, b / p.batch[1], b % p.batch[1], kh, i0, std::min(bq, p.nq - i0), w);
      }
    }
    return keysRead;
  }
};
