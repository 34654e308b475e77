// AVX-512 (f, bw, vl, dq) kernels: 8x32 f32 FMA tiles; with avx512bf16, vdpbf16ps on bf16 pairs.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "compiler/kernels/kernels.h"

// Everything declared from here on is compiled for this ISA: only this file's own code (in an
// anonymous namespace, plus the run function), never a library template another TU could share.
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c,avx2"))), \
                             apply_to = function)

#include "compiler/kernels/impl.h"

namespace {

#include "compiler/kernels/vec512.h"

#include "compiler/kernels/transpose512.h"

struct CfgF32 {
  using V = V512;
  using PackT = float;
  static constexpr int MR = 8, NV = 2, NR = NV * V::W, kPair = 1;
  // convRows' tiles where the grid fills them: 8 x 48 (24 accumulators: 11 loads to 24 FMAs a
  // k, not 10 to 16): f32 3x3 at ResNet-18's 56x56, 28x28 and 14x14 layers, 1 thread, 5-18 % faster.
  static constexpr int kRowsNV = 3;
  // KC = 512 measured a little ahead of 256 and 384 at 1024^3 and 2048^3.
  static constexpr int64_t MC = 192, KC = 512, NC = 4096;
  // A panel of B whose k is contiguous (B = W^T, W [N,K]): 32 rows of W at `src` (row stride
  // ld), 16 k at a time through in-register transposes. Returns the k it packed.
  template <Elem E>
  static int64_t packBTransposed(const void* src, int64_t ld, float* dst, int64_t kc) {
    int64_t kb = 0;
    for (; kb + 16 <= kc; kb += 16)
      for (int h = 0; h < 2; ++h) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) r[i] = loadE<V, E>(offsetPtr(src, E, (h * 16 + i) * ld + kb));
        transpose16(r);
        for (int c = 0; c < 16; ++c) _mm512_storeu_ps(dst + (kb + c) * NR + h * 16, r[c]);
      }
    return kb;
  }
  static void micro(int64_t kc, const float* ap, const float* bp, float* c, int64_t scm, int64_t scn, int mr, int nr,
                    Ahead ahead = {}) {
    microF32<V, MR, NV>(kc, ap, bp, c, scm, scn, mr, nr, ahead);
  }
};

// bf16 x bf16 -> f32 with vdpbf16ps: A pairs broadcast as one 32-bit lane, B in VNNI panels
// [k/2][32 columns][2].
struct CfgBf16 {
  using V = V512;
  using PackT = uint16_t;
  static constexpr int MR = 8, NV = 2, NR = NV * V::W, kPair = 2;
  static constexpr int64_t MC = 192, KC = 512, NC = 4096;
  static __mmask32 lanes(int n) { return n >= 32 ? ~0u : (1u << n) - 1; }
  // The pairs (r0[t], r1[t]) for t < n <= 32 as 64 halves in lo, hi; zero past n, and in the
  // second halves without r1. Nothing past r0[n - 1], r1[n - 1] is read.
  static void loadPairs(const uint16_t* r0, const uint16_t* r1, int n, __m512i& lo, __m512i& hi) {
    interleavePairs(_mm512_maskz_loadu_epi16(lanes(n), r0),
                    r1 ? _mm512_maskz_loadu_epi16(lanes(n), r1) : _mm512_setzero_si512(), lo, hi);
  }
  // d[2j] = r0[j], d[2j+1] = r1[j] (0 without r1) for j < n, zero up to NR (a panel row of B).
  static void interleave(const uint16_t* r0, const uint16_t* r1, uint16_t* d, int n) {
    __m512i lo, hi;
    loadPairs(r0, r1, n, lo, hi);
    _mm512_storeu_si512(d, lo);
    _mm512_storeu_si512(d + 32, hi);
  }
  // The same for a run of a convolution's Y: nothing past the n pairs is written.
  static void interleaveN(const uint16_t* r0, const uint16_t* r1, uint16_t* d, int n) {
    __m512i lo, hi;
    loadPairs(r0, r1, n, lo, hi);
    _mm512_mask_storeu_epi16(d, lanes(2 * n), lo);
    if (n > 16) _mm512_mask_storeu_epi16(d + 32, lanes(2 * n - 32), hi);
  }
  // 16 pairs of even elements (a stride-2 convolution's Y), or the first n < 16 of them.
  static void interleaveEven(const uint16_t* r0, const uint16_t* r1, uint16_t* d) { interleaveEvenPairs(r0, r1, d); }
  static void interleaveEvenN(const uint16_t* r0, const uint16_t* r1, uint16_t* d, int n) {
    interleaveEvenPairs(r0, r1, d, n);
  }
  static void micro(int64_t steps, const uint16_t* __restrict ap, const uint16_t* __restrict bp, float* c,
                    int64_t scm, int64_t scn, int mr, int nr, Ahead ahead = {}) {
    __m512 acc[MR][NV];
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
    prefetchTile<MR, NR>(c, scm, scn);
    AheadFetcher fetch(ahead, steps);
    auto product = [&] {
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
    };
    dueSteps(steps, [&] { return fetch.lines.upcoming(); }, [&](int64_t s) { fetch.step(s); }, product);
    storeTile<V, MR, NV>(acc, c, scm, scn, mr, nr);
  }
};

// GEMV rows of bf16 W against bf16 x with vdpbf16ps: 32 pairs of products per instruction, no
// widening (the f32 path widens each W element and multiplies-adds 16 at a time: 29 against
// 38 GB/s for f32 W on Zen 5, 1 thread). x is zero-padded to a multiple of 32. One row at a
// time, as gemvRows: W is then one stream.
struct Bf16Rows {
  static constexpr bool kHas = true;
  static void row(const uint16_t* w, int64_t ldw, int64_t K, const uint16_t* x, float* y) {
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    const int64_t ahead = gemvRowsAhead(ldw, 2) * ldw;  // as gemvRow fetches
    int64_t k = 0;
    for (; k + 64 <= K; k += 64) {
      const __m512bh x0 = (__m512bh)_mm512_loadu_si512(x + k), x1 = (__m512bh)_mm512_loadu_si512(x + k + 32);
      const uint16_t* at = w + k;
      __builtin_prefetch(at + ahead);
      __builtin_prefetch(at + ahead + 32);
      acc[0] = _mm512_dpbf16_ps(acc[0], (__m512bh)_mm512_loadu_si512(at), x0);
      acc[1] = _mm512_dpbf16_ps(acc[1], (__m512bh)_mm512_loadu_si512(at + 32), x1);
    }
    for (; k < K; k += 32) {
      const __mmask32 m = K - k >= 32 ? ~0u : (1u << (K - k)) - 1;
      const __m512bh x0 = (__m512bh)_mm512_loadu_si512(x + k);
      acc[0] = _mm512_dpbf16_ps(acc[0], (__m512bh)_mm512_maskz_loadu_epi16(m, w + k), x0);
    }
    *y += _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
  }
  static void rows(const void* w, int64_t ldw, int64_t r0, int64_t r1, int64_t K, const uint16_t* x, float* y, int64_t sy) {
    const uint16_t* base = static_cast<const uint16_t*>(w);
    for (int64_t r = r0; r < r1; ++r) row(base + r * ldw, ldw, K, x, y + r * sy);
  }
};

}  // namespace

namespace radix::kernels {
Path runAvx512(const Problem& p, int threads, bool bf16) {
  if (bf16 && p.aType == Elem::bf16 && p.bType == Elem::bf16 && p.m != 1 && p.n != 1) {
    gemmTyped<CfgBf16, Elem::bf16, Elem::bf16>(p, threads);
    return Path::gemm;
  }
  return bf16 ? runWith<V512, CfgF32, Bf16Rows>(p, threads) : runWith<V512, CfgF32>(p, threads);
}
}  // namespace radix::kernels

#include "compiler/kernels/bytes_impl.h"

namespace radix::kernels {
void bytesGemmAvx512(const Problem& p, int threads) { bytesGemm(p, threads); }
}  // namespace radix::kernels

#include "compiler/kernels/conv_impl.h"

namespace radix::kernels {
void runConvGemmAvx512(const ConvGemmPlan& p, int threads, bool bf16) {
  if (bf16 && p.xType == Elem::bf16 && p.yType == Elem::bf16)
    convGemm<CfgBf16>(p, threads);
  else
    convGemm<CfgF32>(p, threads);
}
void runConvRowsAvx512(const ConvRowsPlan& p, int threads, bool bf16) {
  if (bf16 && p.g.xType == Elem::bf16 && p.g.yType == Elem::bf16)
    convRows<CfgBf16>(p, threads);
  else
    convRows<CfgF32>(p, threads);
}
void runConvDirectAvx512(const ConvDirectPlan& p, int threads) { convDirect(p, threads); }
}  // namespace radix::kernels

#pragma clang attribute pop
