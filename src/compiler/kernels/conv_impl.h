#pragma once
// The ISA-independent half of the convolution kernels, included by each ISA TU after impl.h and
// its Cfg structs (same rules as impl.h: everything in that TU's anonymous namespace, no
// standard-library templates instantiated here). The plans come from conv_dispatch.cpp: the
// tabled GEMM packs X and Y into the GEMM's panels through offset tables (that is the im2col)
// and runs the GEMM's own micro-kernels; the direct kernel serves depthwise convolutions.
#include "compiler/kernels/conv.h"

namespace {

using radix::kernels::ConvDirectPlan;
using radix::kernels::ConvGemmPlan;
using radix::kernels::ConvRowsPlan;
using radix::kernels::kConvXPackBytes;
using radix::kernels::DirectOp;

inline uint16_t raw16(const void* base, int64_t i) { return static_cast<const uint16_t*>(base)[i]; }

// The constant step between n consecutive table entries, or false.
inline bool regularStep(const int64_t* t, int64_t n, int64_t& step) {
  step = n > 1 ? t[1] - t[0] : 0;
  for (int64_t i = 2; i < n; ++i)
    if (t[i] - t[i - 1] != step) return false;
  return true;
}

template <class Cfg, Elem EX>
void convPackX(const ConvGemmPlan& g, const void* x, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
               typename Cfg::PackT* __restrict dst) {
  constexpr int MR = Cfg::MR, P = Cfg::kPair;
  const int64_t kcp = (kc + P - 1) / P * P;
  const int64_t* xk = g.xK + k0;
  // X's k runs along its rows (OIHW weights of an NCHW convolution): copy rows without the table.
  int64_t kStep;
  const bool contiguousK = kc > 0 && regularStep(xk, kc, kStep) && (kc == 1 || kStep == 1);
  for (int64_t ip = 0; ip < mc; ip += MR, dst += kcp * MR) {
    const int mr = static_cast<int>(mc - ip < MR ? mc - ip : MR);
    if (contiguousK && mr == MR) {
      const void* rows[MR];
      for (int r = 0; r < MR; ++r) rows[r] = offsetPtr(x, EX, g.xRow[i0 + ip + r] + xk[0]);
      packRowPanel<Cfg, EX>(rows, kc, dst);
      continue;
    }
    for (int r = 0; r < MR; ++r) {
      if (r >= mr) {
        for (int64_t k = 0; k < kcp; ++k) dst[(k / P) * MR * P + r * P + (k % P)] = 0;
        continue;
      }
      const void* row = offsetPtr(x, EX, g.xRow[i0 + ip + r]);
      if constexpr (P == 1) {
        for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = loadScalar<EX>(row, xk[k]);
      } else {
        for (int64_t k = 0; k < kcp; ++k) dst[(k / 2) * MR * 2 + r * 2 + (k & 1)] = k < kc ? raw16(row, xk[k]) : uint16_t(0);
      }
    }
  }
}

// Row by row of Y (a k; bf16: a pair of k), across all its panels: the gathers read runs of
// consecutive elements.
template <class Cfg, Elem EY>
void convPackY(const ConvGemmPlan& g, const void* y, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
               typename Cfg::PackT* __restrict dst) {
  constexpr int NR = Cfg::NR, P = Cfg::kPair;
  const int64_t kcp = (kc + P - 1) / P * P;
  const int64_t* col = g.yCol + j0;
  const int32_t* run = g.yRun + j0;
  const int32_t* stepOf = g.yStep + j0;
  if constexpr (P == 2) {
    // bf16 pairs: rows k and k + 1 share the column offsets, so each run fills both halves of
    // its pairs at once (contiguous loads and pair stores that the compiler vectorizes).
    for (int64_t k = 0; k < kcp; k += 2) {
      const uint16_t* r0 = static_cast<const uint16_t*>(y) + g.yK[k0 + k];
      const uint16_t* r1 = k + 1 < kc ? static_cast<const uint16_t*>(y) + g.yK[k0 + k + 1] : nullptr;
      for (int64_t q = 0; q < nc; q += NR) {
        uint16_t* __restrict d = dst + q * kcp + k * NR;
        const int nr = static_cast<int>(nc - q < NR ? nc - q : NR);
        int j = 0;
        while (j < nr) {
          const int len = run[q + j] < nr - j ? run[q + j] : nr - j;
          const int64_t at = col[q + j], step = stepOf[q + j];
          const uint16_t* a = r0 + at;
          const uint16_t* b = r1 ? r1 + at : nullptr;
          uint16_t* o = d + 2 * j;
          int t0 = 0;
          if constexpr (requires(const uint16_t* s, uint16_t* o) { Cfg::interleaveEvenN(s, s, o, 1); })
            if (step == 2 && b) {
              for (; t0 + 16 <= len; t0 += 16) Cfg::interleaveEven(a + 2 * t0, b + 2 * t0, o + 2 * t0);
              if (t0 < len) Cfg::interleaveEvenN(a + 2 * t0, b + 2 * t0, o + 2 * t0, len - t0), t0 = len;
            }
          if (step == 1 && b) {
            if constexpr (requires(const uint16_t* s, uint16_t* o) { Cfg::interleaveN(s, s, o, 0); }) {
              Cfg::interleaveN(a, b, o, len);
            } else {
              for (int t = 0; t < len; ++t) {
                o[2 * t] = a[t];
                o[2 * t + 1] = b[t];
              }
            }
          } else {
            for (int t = t0; t < len; ++t) {
              o[2 * t] = a[t * step];
              o[2 * t + 1] = b ? b[t * step] : uint16_t(0);
            }
          }
          j += len;
        }
        for (; j < NR; ++j) d[2 * j] = d[2 * j + 1] = 0;
      }
    }
  } else {
    for (int64_t k = 0; k < kc; ++k) {
      const void* row = offsetPtr(y, EY, g.yK[k0 + k]);
      for (int64_t q = 0; q < nc; q += NR) {
        float* d = dst + q * kc + k * NR;
        const int nr = static_cast<int>(nc - q < NR ? nc - q : NR);
        int j = 0;
        while (j < nr) {
          const int len = run[q + j] < nr - j ? run[q + j] : nr - j;
          const int64_t at = col[q + j], step = stepOf[q + j];
          using V = typename Cfg::V;
          int t0 = 0;  // stride 2: the even elements of vector pairs first
          if constexpr (EY == Elem::f32 && requires(const float* s) { V::loadEvenN(s, 1); })
            if (step == 2) {
              const float* src = static_cast<const float*>(row) + at;
              for (; t0 + V::W <= len; t0 += V::W) V::store(d + j + t0, V::loadEven(src + 2 * t0));
              if (t0 < len) V::storeN(d + j + t0, V::loadEvenN(src + 2 * t0, len - t0), len - t0), t0 = len;
            }
          if (step != 1 || len < 4) {  // strided (a stride-s convolution) or short: element by element
            for (int t = t0; t < len; ++t) d[j + t] = loadScalar<EY>(row, at + t * step);
          } else {
            // Vector copies (widening f16/bf16). The empty asm hides o's progression: clang made
            // the f32 loop a memcpy call per run (a run is an output row: 56 elements at 56x56).
            float* o = d + j;
            int t = 0;
            for (; t + V::W <= len; t += V::W) {
              V::store(o + t, loadE<V, EY>(offsetPtr(row, EY, at + t)));
              asm("" : "+r"(o));
            }
            if (t < len) V::storeN(o + t, loadEN<V, EY>(offsetPtr(row, EY, at + t), len - t), len - t);
          }
          j += len;
        }
        for (; j < NR; ++j) d[j] = 0;
      }
    }
  }
}

// Columns of Y gathered per block, at most ncMax. Unlike the GEMM's B (read along its rows), Y
// is gathered: an L2-sized block of it keeps both the gather's reads and the packed panels in L2.
template <class Cfg>
int64_t convColumnBlock(int64_t kp, int64_t ncMax) {
  constexpr int64_t kYBlockElements = 64 * 1024;
  const int64_t kcMax = Cfg::KC < kp ? Cfg::KC : kp;
  const int64_t ncFit = kYBlockElements / kcMax / Cfg::NR * Cfg::NR;
  return ncFit < Cfg::NR ? Cfg::NR : ncFit > ncMax ? ncMax : ncFit;
}

// C[r * scm + q * scn] = 0 for r < mr, q < nr.
inline void zeroTile(float* c, int64_t scm, int64_t scn, int mr, int nr) {
  for (int r = 0; r < mr; ++r) {
    float* row = c + r * scm;
    if (scn == 1) {
      std::memset(row, 0, sizeof(float) * static_cast<size_t>(nr));
    } else {
      for (int q = 0; q < nr; ++q) row[q * scn] = 0;
    }
  }
}

// xPre: X of every group packed whole (convPrepackX's layout), or null to pack it per block.
template <class Cfg, Elem EX, Elem EY>
void convBlock(const ConvGemmPlan& g, int64_t gi, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
               const typename Cfg::PackT* xPre) {
  using PackT = typename Cfg::PackT;
  constexpr int MR = Cfg::MR, NR = Cfg::NR, P = Cfg::kPair;
  static thread_local GemmScratch<Cfg> scratch;
  const void* x = offsetPtr(g.x, EX, gi * g.gx);
  const void* y = offsetPtr(g.y, EY, gi * g.gy);
  float* c = g.c + gi * g.gc;
  const int64_t kp = (g.k + P - 1) / P * P, mp = (i1 - i0 + MR - 1) / MR * MR, np = (j1 - j0 + NR - 1) / NR * NR;
  const int64_t kcMax = Cfg::KC < kp ? Cfg::KC : kp, mcMax = Cfg::MC < mp ? Cfg::MC : mp, ncMax = Cfg::NC < np ? Cfg::NC : np;
  PackT* ap = xPre ? nullptr : static_cast<PackT*>(scratch.a.get(sizeof(PackT) * mcMax * kcMax));
  if (xPre) xPre += gi * ((g.m + MR - 1) / MR) * kp * MR;
  const int64_t ncBlock = convColumnBlock<Cfg>(kp, ncMax);
  const int64_t kcBlock = kBlockOf<Cfg>(g.k);
  PackT* bp = static_cast<PackT*>(scratch.b.get(sizeof(PackT) * ncBlock * kcMax));
  for (int64_t jc = j0; jc < j1; jc += ncBlock) {
    const int64_t nc = j1 - jc < ncBlock ? j1 - jc : ncBlock;
    for (int64_t pc = 0; pc < g.k; pc += kcBlock) {
      const int64_t kc = g.k - pc < kcBlock ? g.k - pc : kcBlock;
      const int64_t kcp = (kc + P - 1) / P * P;
      convPackY<Cfg, EY>(g, y, pc, kc, jc, nc, bp);
      for (int64_t ic = i0; ic < i1; ic += Cfg::MC) {
        const int64_t mc = i1 - ic < Cfg::MC ? i1 - ic : Cfg::MC;
        // Tile ir's panel: in the block packed here, or in X packed whole (panels kp deep).
        const PackT* xBlock = xPre ? xPre + (ic / MR) * kp * MR + pc * MR : ap;
        const int64_t xPanel = xPre ? kp * MR : kcp * MR;
        if (!xPre) convPackX<Cfg, EX>(g, x, ic, mc, pc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int nr = static_cast<int>(nc - jr < NR ? nc - jr : NR);
          const int64_t j = jc + jr;
          int64_t colStep;
          const bool colsRegular = regularStep(g.cCol + j, int64_t(nr), colStep);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int mr = static_cast<int>(mc - ir < MR ? mc - ir : MR);
            const int64_t i = ic + ir;
            int64_t rowStep;
            if (colsRegular && regularStep(g.cRow + i, int64_t(mr), rowStep)) {
              if (g.overwrite && pc == 0) zeroTile(c + g.cRow[i] + g.cCol[j], rowStep, colStep, mr, nr);
              Cfg::micro(kcp / P, xBlock + (ir / MR) * xPanel, bp + jr * kcp, c + g.cRow[i] + g.cCol[j], rowStep, colStep, mr,
                         nr);
              continue;
            }
            alignas(64) float tile[MR * NR] = {};
            Cfg::micro(kcp / P, xBlock + (ir / MR) * xPanel, bp + jr * kcp, tile, NR, 1, mr, nr);
            const bool set = g.overwrite && pc == 0;
            for (int r = 0; r < mr; ++r)
              for (int q = 0; q < nr; ++q) {
                float& to = c[g.cRow[i + r] + g.cCol[j + q]];
                to = set ? tile[r * NR + q] : to + tile[r * NR + q];
              }
          }
        }
      }
    }
  }
}

// X of every group into x in whole-K panels (convPackXWhole's layout), split among threads.
template <class Cfg, Elem EX>
void convPackXInto(const ConvGemmPlan& g, int threads, typename Cfg::PackT* x) {
  constexpr int MR = Cfg::MR, P = Cfg::kPair;
  const int64_t kp = (g.k + P - 1) / P * P, panels = (g.m + MR - 1) / MR;
  // Panels [u0, u1) of all groups in a row: one convPackX call per group they touch.
  auto pack = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1;) {
      const int64_t gi = u / panels, p = u % panels, end = panels < p + (u1 - u) ? panels : p + (u1 - u);
      const int64_t i = p * MR, rows = (g.m < end * MR ? g.m : end * MR) - i;
      convPackX<Cfg, EX>(g, offsetPtr(g.x, EX, gi * g.gx), i, rows, 0, g.k, x + u * kp * MR);
      u += end - p;
    }
  };
  packPanelsParallel(g.groups * panels, 1, threads, [&](int64_t u0, int64_t n) { pack(u0, u0 + n); });
}

// X of every group packed once into whole-K panels (panel p of group gi at (gi * panels + p) *
// kp * MR), split among threads: from the packed-weight cache where X is a pinned weight (keep
// holds it), else into storage.
template <class Cfg, Elem EX>
const typename Cfg::PackT* convPackXWhole(const ConvGemmPlan& g, int threads, Scratch& storage,
                                          std::shared_ptr<const void>& keep) {
  using PackT = typename Cfg::PackT;
  constexpr int MR = Cfg::MR, P = Cfg::kPair;
  const int64_t kp = (g.k + P - 1) / P * P, panels = (g.m + MR - 1) / MR;
  const size_t bytes = static_cast<size_t>(g.groups * panels * kp * MR) * sizeof(PackT);
  constexpr int32_t layout = 0x50000 | (MR << 8) | (P << 4) | static_cast<int32_t>(sizeof(PackT));
  if (const void* cached = xPackedCached(g, layout, bytes, [&](void* dst) { convPackXInto<Cfg, EX>(g, threads, static_cast<PackT*>(dst)); }, keep))
    return static_cast<const PackT*>(cached);
  PackT* x = static_cast<PackT*>(storage.get(bytes));
  convPackXInto<Cfg, EX>(g, threads, x);
  return x;
}

// convPackXWhole where it pays: null when it would exceed kConvXPackBytes or X is used by one
// column block only (then packing per block reads it once anyway).
template <class Cfg, Elem EX>
const typename Cfg::PackT* convPrepackX(const ConvGemmPlan& g, int threads, Scratch& storage,
                                        std::shared_ptr<const void>& keep) {
  constexpr int MR = Cfg::MR, P = Cfg::kPair;
  const int64_t kp = (g.k + P - 1) / P * P, panels = (g.m + MR - 1) / MR;
  const int64_t bytes = g.groups * panels * kp * MR * static_cast<int64_t>(sizeof(typename Cfg::PackT));
  if (bytes > kConvXPackBytes || g.n <= convColumnBlock<Cfg>(kp, g.n)) return nullptr;
  return convPackXWhole<Cfg, EX>(g, threads, storage, keep);
}

template <class Cfg, Elem EX, Elem EY>
void convGemmTyped(const ConvGemmPlan& g, int threads) {
  Scratch storage;
  std::shared_ptr<const void> keep;
  const typename Cfg::PackT* xPre = convPrepackX<Cfg, EX>(g, threads, storage, keep);
  Problem shape;
  shape.batch = g.groups, shape.m = g.m, shape.n = g.n;
  splitWork(shape, threads, Cfg::MR, Cfg::NR, [&](int64_t gi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    convBlock<Cfg, EX, EY>(g, gi, i0, i1, j0, j1, xPre);
  });
}

template <class Cfg>
void convGemm(const ConvGemmPlan& g, int threads) {
  auto withY = [&]<Elem EX>() {
    switch (g.yType) {
      case Elem::f32: return convGemmTyped<Cfg, EX, Elem::f32>(g, threads);
      case Elem::f16: return convGemmTyped<Cfg, EX, Elem::f16>(g, threads);
      case Elem::bf16: return convGemmTyped<Cfg, EX, Elem::bf16>(g, threads);
      default: break;  // float convolutions only
    }
  };
  switch (g.xType) {
    case Elem::f32: return withY.template operator()<Elem::f32>();
    case Elem::f16: return withY.template operator()<Elem::f16>();
    case Elem::bf16: return withY.template operator()<Elem::bf16>();
    default: break;  // float convolutions only
  }
}

// One tile of convRows: C[i, j] = sum_k X[i, k] y[yK[k] + j] for MR rows of packed X and the
// first `live` of NR consecutive columns, into out (MR x NR, row-major).
template <class V, int MR, int NV, bool Full>
void microRows(int64_t kc, const float* __restrict ap, const float* y, const int64_t* __restrict yK, int live,
               float* __restrict out) {
  typename V::R acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  int lanes[NV];
  for (int v = 0; v < NV; ++v) lanes[v] = live - v * V::W < 0 ? 0 : live - v * V::W > V::W ? V::W : live - v * V::W;
  for (int64_t k = 0; k < kc; ++k) {
    const float* b = y + yK[k];
    typename V::R bv[NV];
    for (int v = 0; v < NV; ++v)
      bv[v] = Full ? V::load(b + v * V::W) : lanes[v] > 0 ? V::loadN(b + v * V::W, lanes[v]) : V::zero();
    for (int i = 0; i < MR; ++i) {
      const typename V::R a = V::set1(ap[i]);
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fma(a, bv[v], acc[i][v]);
    }
    ap += MR;
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) V::store(out + i * NV * V::W + v * V::W, acc[i][v]);
}

// dst[t] (+)= src[t] for t < n.
template <class V, bool Add>
inline void writeRun(float* dst, const float* src, int n) {
  int t = 0;
  for (; t + V::W <= n; t += V::W) V::store(dst + t, Add ? V::add(V::load(dst + t), V::load(src + t)) : V::load(src + t));
  if (t < n) {
    const typename V::R v = V::loadN(src + t, n - t);
    V::storeN(dst + t, Add ? V::add(V::loadN(dst + t, n - t), v) : v, n - t);
  }
}

// A tile's B panel of bf16 pairs for convRows: pair q holds y[yK[2q] + j] and y[yK[2q + 1] + j]
// for the first `live` of NR columns (zeros past them, and in the second halves past K).
template <class Cfg>
void packRowsPairs(const uint16_t* y, const int64_t* yK, int64_t k, int live, uint16_t* __restrict dst) {
  constexpr int NR = Cfg::NR;
  for (int64_t q = 0; q < k; q += 2, dst += 2 * NR)
    Cfg::interleave(y + yK[q], q + 1 < k ? y + yK[q + 1] : nullptr, dst, live);
}

// even[t] = src[2t], odd[t] = src[2t + 1] for the n elements of src; zeros up to `width` in both.
template <class V>
void splitEvenOdd(const float* __restrict src, int64_t n, int64_t width, float* __restrict even, float* __restrict odd) {
  int64_t t = 0;
  if constexpr (requires(const float* s) { V::loadEvenN(s, 1); }) {
    for (; 2 * t + 2 * V::W <= n; t += V::W) {
      V::store(even + t, V::loadEven(src + 2 * t));
      V::store(odd + t, V::loadEven(src + 2 * t + 1));
    }
    if (2 * t < n) {  // 1 to 2W - 1 elements left: masked, zeros past them up to `width`
      const int ne = static_cast<int>(n - 2 * t + 1) / 2, no = static_cast<int>(n - 2 * t) / 2;
      const int lanes = static_cast<int>(width - t < V::W ? width - t : V::W);
      V::storeN(even + t, V::loadEvenN(src + 2 * t, ne), lanes);
      V::storeN(odd + t, no > 0 ? V::loadEvenN(src + 2 * t + 1, no) : V::zero(), lanes);
      t += lanes;
    }
  }
  for (; 2 * t + 1 < n; ++t) even[t] = src[2 * t], odd[t] = src[2 * t + 1];
  if (2 * t < n) even[t] = src[2 * t], odd[t] = 0, ++t;
  for (; t < width; ++t) even[t] = odd[t] = 0;
}

// ConvRowsPlan::phases (f32): input row pairs [u0, u1) (pair u: rows 2 (u % rows2) and the next
// of plane u / rows2) into their phase planes at dst, within the first `extent` elements of y.
template <class V>
void convPhaseCopy(const radix::kernels::ConvPhases& ph, const float* y, float* dst, int64_t u0, int64_t u1) {
  const int64_t pitch2 = (ph.pitch + 1) / 2, rows2 = (ph.rows + 1) / 2, sub = rows2 * pitch2;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t i = u / rows2, yr = u % rows2 * 2;
    for (int q = 0; q < 2; ++q) {
      float* even = dst + i * 4 * sub + q * 2 * sub + yr / 2 * pitch2;
      const int64_t at = i * ph.plane + (yr + q) * ph.pitch;
      const int64_t n = yr + q >= ph.rows || at >= ph.extent ? 0 : ph.extent - at < ph.pitch ? ph.extent - at : ph.pitch;
      splitEvenOdd<V>(y + at, n, pitch2, even, even + sub);
    }
  }
}

// A tile's columns that are output positions: a run per grid row, from column l0 of the tile,
// len long, at `at` in C (past the outer index's offset).
struct GridRun {
  int l0, len;
  int64_t at;
};

// The runs of the `live` grid columns from j0 (at most one per row they cross); returns their count.
inline int gridRuns(const radix::kernels::ConvRowsPlan& p, int64_t j0, int live, GridRun* runs) {
  int n = 0;
  for (int64_t r = j0 / p.ext; r < p.h && r * p.ext < j0 + live; ++r) {
    const int64_t s = j0 > r * p.ext ? j0 : r * p.ext, e = j0 + live < r * p.ext + p.w ? j0 + live : r * p.ext + p.w;
    if (s < e) runs[n++] = {static_cast<int>(s - j0), static_cast<int>(e - s), r * p.w + s - r * p.ext};
  }
  return n;
}

// The extended-grid convolution (conv.h's ConvRowsPlan): X packed once; f32 inputs read in
// place, bf16 ones interleaved into pairs per tile (contiguous runs: no gather). A unit is NR
// columns of one outer index in one group, against every row panel of X: its input lines stay
// in L1/L2 across the panels.
template <class Cfg, int NV = Cfg::NV>
void convRowsTiled(const ConvRowsPlan& p, int threads) {
  using V = typename Cfg::V;
  using PackT = typename Cfg::PackT;
  constexpr int MR = Cfg::MR, P = Cfg::kPair, NR = NV * V::W;
  constexpr Elem E = P == 2 ? Elem::bf16 : Elem::f32;
  ConvGemmPlan g = p.g;
  Scratch storage, phased;
  std::shared_ptr<const void> keep;
  const PackT* xPre = convPackXWhole<Cfg, E>(g, threads, storage, keep);
  const radix::kernels::ConvPhases& ph = p.phases;
  const int64_t rows2 = (ph.rows + 1) / 2, sub = rows2 * ((ph.pitch + 1) / 2);
  float* copyTo = ph.planes > 0 ? static_cast<float*>(phased.get(sizeof(float) * static_cast<size_t>(ph.planes * 4 * sub))) : nullptr;
  if (copyTo) g.y = copyTo;
  const int64_t kp = (g.k + P - 1) / P * P;
  const int64_t cols = (p.h - 1) * p.ext + p.w, tiles = (cols + NR - 1) / NR, panels = (g.m + MR - 1) / MR;
  auto unit = [&](int64_t u) {
    const int64_t gi = u / (p.outer * tiles), o = u / tiles % p.outer, j0 = u % tiles * NR;
    const int live = static_cast<int>(cols - j0 < NR ? cols - j0 : NR);
    const PackT* y = static_cast<const PackT*>(g.y) + gi * g.gy + p.oy[o] + j0;
    float* c = g.c + gi * g.gc + p.oc[o];
    GridRun runs[NR];
    const int nRuns = gridRuns(p, j0, live, runs);
    const PackT* xg = xPre + gi * panels * kp * MR;
    PackT* bp = nullptr;
    if constexpr (P == 2) {
      static thread_local Scratch panel;
      bp = static_cast<PackT*>(panel.get(sizeof(PackT) * kp * NR));
      packRowsPairs<Cfg>(y, g.yK, g.k, live, bp);
    }
    alignas(64) float out[MR * NR];
    for (int64_t q = 0; q < panels; ++q) {
      if constexpr (P == 2) {
        for (int i = 0; i < MR * NR; i += V::W) V::store(out + i, V::zero());
        Cfg::micro(kp / P, xg + q * kp * MR, bp, out, NR, 1, MR, NR);
      } else if (live == NR) {
        microRows<V, MR, NV, true>(g.k, xg + q * g.k * MR, y, g.yK, live, out);
      } else {
        microRows<V, MR, NV, false>(g.k, xg + q * g.k * MR, y, g.yK, live, out);
      }
      const int mr = static_cast<int>(g.m - q * MR < MR ? g.m - q * MR : MR);
      for (int i = 0; i < mr; ++i) {
        float* row = c + g.cRow[q * MR + i];
        for (int r = 0; r < nRuns; ++r) {
          if (p.overwrite)
            writeRun<V, false>(row + runs[r].at, out + i * NR + runs[r].l0, runs[r].len);
          else
            writeRun<V, true>(row + runs[r].at, out + i * NR + runs[r].l0, runs[r].len);
        }
      }
    }
  };
  // Thread t of nt: its share of the phase copy (all of it first, or each outer index's just
  // before that index's tiles), then of the tiles.
  const int64_t units = g.groups * p.outer * tiles;
  auto work = [&](int64_t t, int64_t nt) {
    const auto copy = [&](int64_t u0, int64_t u1) {
      if constexpr (P == 1) {
        const int64_t n = u1 - u0;
        convPhaseCopy<V>(ph, static_cast<const float*>(p.g.y), copyTo, u0 + n * t / nt, u0 + n * (t + 1) / nt);
      }
#pragma omp barrier
    };
    if (ph.planes > 0 && ph.outerPlanes > 0) {
      for (int64_t o = 0; o < p.outer; ++o) {
        const int64_t i0 = p.oy[o] / (4 * sub), i1 = i0 + ph.outerPlanes < ph.planes ? i0 + ph.outerPlanes : ph.planes;
        copy(i0 * rows2, i1 * rows2);
        const int64_t n = g.groups * tiles;
        for (int64_t v = n * t / nt; v < n * (t + 1) / nt; ++v) unit((v / tiles * p.outer + o) * tiles + v % tiles);
      }
      return;
    }
    if (ph.planes > 0) copy(0, ph.planes * rows2);
    for (int64_t u = units * t / nt; u < units * (t + 1) / nt; ++u) unit(u);
  };
  if (threads <= 1 || units < 2) {
    work(0, 1);
  } else {
#pragma omp parallel num_threads(threads)
    work(omp_get_thread_num(), omp_get_num_threads());
  }
}

// convRowsTiled with Cfg::kRowsNV vectors of columns where the Cfg sets it (f32 on AVX-512: 8 x 48
// tiles, 24 accumulators) and the grid's rows fill them, else its GEMM's (a 7 x 7 output's 61
// grid columns fill 64 in 32-column tiles, 96 in 48-column ones: 2.2-2.5 against 2.9-3.0 ms).
template <class Cfg>
void convRows(const ConvRowsPlan& p, int threads) {
  if constexpr (requires { Cfg::kRowsNV; }) {
    const int64_t cols = (p.h - 1) * p.ext + p.w, wide = Cfg::kRowsNV * Cfg::V::W, narrow = Cfg::NR;
    // The wider tile runs ~1/8 faster a column.
    if (8 * ((cols + wide - 1) / wide * wide) < 9 * ((cols + narrow - 1) / narrow * narrow))
      return convRowsTiled<Cfg, Cfg::kRowsNV>(p, threads);
  }
  convRowsTiled<Cfg>(p, threads);
}

// One output row of the direct kernel, in chunks of kChunk along the vector dim.
template <Elem EA, Elem EB>
void convDirectRow(const ConvDirectPlan& p, int64_t o) {
  constexpr int64_t kChunk = 256;
  alignas(64) float acc[kChunk];
  for (int64_t t0 = 0; t0 < p.vn; t0 += kChunk) {
    const int64_t len = p.vn - t0 < kChunk ? p.vn - t0 : kChunk;
    float* out = p.c + p.oc[o] + t0 * p.vsc;
    if (p.op == DirectOp::mulAdd) {
      for (int64_t t = 0; t < len; ++t) acc[t] = 0;
    } else {
      for (int64_t t = 0; t < len; ++t) acc[t] = out[t * p.vsc];
    }
    for (int64_t k = 0; k < p.kn; ++k) {
      const int64_t a0 = p.oa[o] + p.ka[k] + t0 * p.vsa;
      if (p.op == DirectOp::max) {
        // NaN propagates, as arith.maximumf.
        if (p.vsa == 1) {
          for (int64_t t = 0; t < len; ++t) {
            const float v = loadScalar<EA>(p.a, a0 + t);
            acc[t] = (acc[t] > v || acc[t] != acc[t]) ? acc[t] : v;
          }
        } else {
          for (int64_t t = 0; t < len; ++t) {
            const float v = loadScalar<EA>(p.a, a0 + t * p.vsa);
            acc[t] = (acc[t] > v || acc[t] != acc[t]) ? acc[t] : v;
          }
        }
        continue;
      }
      if (p.op == DirectOp::sum) {
        if (p.vsa == 1) {
          for (int64_t t = 0; t < len; ++t) acc[t] += loadScalar<EA>(p.a, a0 + t);
        } else {
          for (int64_t t = 0; t < len; ++t) acc[t] += loadScalar<EA>(p.a, a0 + t * p.vsa);
        }
        continue;
      }
      const int64_t b0 = p.ob[o] + p.kb[k] + t0 * p.vsb;
      if (p.vsb == 0) {
        const float w = loadScalar<EB>(p.b, b0);
        if (p.vsa == 1) {
          for (int64_t t = 0; t < len; ++t) acc[t] += loadScalar<EA>(p.a, a0 + t) * w;
        } else {
          for (int64_t t = 0; t < len; ++t) acc[t] += loadScalar<EA>(p.a, a0 + t * p.vsa) * w;
        }
      } else if (p.vsa == 1 && p.vsb == 1) {
        for (int64_t t = 0; t < len; ++t) acc[t] += loadScalar<EA>(p.a, a0 + t) * loadScalar<EB>(p.b, b0 + t);
      } else {
        for (int64_t t = 0; t < len; ++t) acc[t] += loadScalar<EA>(p.a, a0 + t * p.vsa) * loadScalar<EB>(p.b, b0 + t * p.vsb);
      }
    }
    if (p.op != DirectOp::mulAdd) {
      for (int64_t t = 0; t < len; ++t) out[t * p.vsc] = acc[t];
    } else if (p.vsc == 1) {
      for (int64_t t = 0; t < len; ++t) out[t] += acc[t];
    } else {
      for (int64_t t = 0; t < len; ++t) out[t * p.vsc] += acc[t];
    }
  }
}

template <Elem EA, Elem EB>
void convDirectTyped(const ConvDirectPlan& p, int threads) {
  if (threads <= 1 || p.outer < 2) {
    for (int64_t o = 0; o < p.outer; ++o) convDirectRow<EA, EB>(p, o);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t o = 0; o < p.outer; ++o) convDirectRow<EA, EB>(p, o);
}

inline void convDirect(const ConvDirectPlan& p, int threads) {
  auto withB = [&]<Elem EA>() {
    switch (p.bType) {
      case Elem::f32: return convDirectTyped<EA, Elem::f32>(p, threads);
      case Elem::f16: return convDirectTyped<EA, Elem::f16>(p, threads);
      case Elem::bf16: return convDirectTyped<EA, Elem::bf16>(p, threads);
      default: break;  // float convolutions only
    }
  };
  switch (p.aType) {
    case Elem::f32: return withB.template operator()<Elem::f32>();
    case Elem::f16: return withB.template operator()<Elem::f16>();
    case Elem::bf16: return withB.template operator()<Elem::bf16>();
    default: break;  // float convolutions only
  }
}

}  // namespace
