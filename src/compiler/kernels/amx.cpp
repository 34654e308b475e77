// AMX kernels: bf16 contractions on tdpbf16ps tiles, int8 on tdpbusd (drivers in amx_impl.h).
// Only called after hostIsa() (or amxInt8Available()) saw the CPU features and the OS granted
// the tile state; everything else (permission, checks, emulation) lives in amx_portable.cpp,
// which is not compiled for AMX.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/kernels.h"

#pragma clang attribute push(                                                                                   \
    __attribute__((target("amx-tile,amx-bf16,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c,avx2"))), \
    apply_to = function)

#include "compiler/kernels/impl.h"
#include "compiler/kernels/amx_impl.h"
#include "compiler/kernels/amx_tiles.h"
#include "compiler/kernels/conv_impl.h"

namespace {

#include "compiler/kernels/vec512.h"

// One 32-column panel of Y (conv_impl.h's gather) in the tiles' pair layout: two k rows at a time,
// each run of equally spaced unit-step columns interleaved with AVX-512 (a run is one masked load
// per row), step-2 runs by even-element permutes, other runs element by element. Rows past kc
// and columns past nr are zero.
void convPackYPairs(const ConvGemmPlan& g, const uint16_t* y, int64_t k0, int64_t kc, int64_t j0, int nr,
                    uint16_t* panel) {
  const int64_t* col = g.yCol + j0;
  const int32_t* run = g.yRun + j0;
  const int32_t* stepOf = g.yStep + j0;
  for (int64_t k = 0; k < kc; k += 2) {
    const uint16_t* r0 = y + g.yK[k0 + k];
    const uint16_t* r1 = k + 1 < kc ? y + g.yK[k0 + k + 1] : nullptr;
    uint16_t* d = panel + (k / 2) * 64;
    int j = 0;
    while (j < nr) {
      const int len = std::min<int>(run[j], nr - j);
      const int64_t at = col[j], step = stepOf[j];
      if (step == 2 && r1 && len >= 4) {  // a stride-2 convolution (1x1 s2: every run)
        for (int t = 0; t < len; t += 16)
          interleaveEvenPairs(r0 + at + 2 * t, r1 + at + 2 * t, d + 2 * (j + t), std::min(16, len - t));
      } else if (step == 1 && len >= 4) {
        const __mmask32 m = len >= 32 ? ~__mmask32(0) : (__mmask32(1) << len) - 1;
        const __m512i a = _mm512_maskz_loadu_epi16(m, r0 + at);
        const __m512i b = r1 ? _mm512_maskz_loadu_epi16(m, r1 + at) : _mm512_setzero_si512();
        __m512i lo, hi;
        interleavePairs(a, b, lo, hi);
        const int n2 = 2 * len;
        const __mmask32 m0 = n2 >= 32 ? ~__mmask32(0) : (__mmask32(1) << n2) - 1;
        const __mmask32 m1 = n2 <= 32 ? 0 : n2 >= 64 ? ~__mmask32(0) : (__mmask32(1) << (n2 - 32)) - 1;
        _mm512_mask_storeu_epi16(d + 2 * j, m0, lo);
        if (m1) _mm512_mask_storeu_epi16(d + 2 * j + 32, m1, hi);
      } else {
        for (int t = 0; t < len; ++t) {
          d[2 * (j + t)] = r0[at + t * step];
          d[2 * (j + t) + 1] = r1 ? r1[at + t * step] : uint16_t(0);
        }
      }
      j += len;
    }
    for (; j < 32; ++j) d[2 * j] = d[2 * j + 1] = 0;
  }
}

// Rows [i0, i0 + mc) of X, k [k0, k0 + kc), gathered into rows ld apart (zero-padded to ld and
// to whole 32-row tiles).
void packXRows(const ConvGemmPlan& g, const uint16_t* x, int64_t i0, int64_t mc, int64_t k0, int64_t kc, int64_t ld,
               uint16_t* dst) {
  const int64_t* xk = g.xK + k0;
  for (int64_t r = 0; r < roundUp(mc, 32); ++r) {
    uint16_t* d = dst + r * ld;
    if (r >= mc) {
      std::memset(d, 0, sizeof(uint16_t) * static_cast<size_t>(ld));
      continue;
    }
    const uint16_t* row = x + g.xRow[i0 + r];
    for (int64_t k = 0; k < kc; ++k) d[k] = row[xk[k]];
    for (int64_t k = kc; k < ld; ++k) d[k] = 0;
  }
}

// The tabled convolution GEMM (conv_impl.h's plan) on bf16 tiles: X gathered into row-major
// 32-row blocks (the tiles' A), Y into 32-column VNNI panels (convPackYPairs), K padded
// to 32 with zero rows; C blocks with unit-stride, equally spaced rows are loaded and stored by
// the tiles, the others go through a 32 x 32 scratch and the tables.
void convBlockAmx(const ConvGemmPlan& g, int64_t gi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  constexpr int64_t MC = 256, KC = 1024, kYBlockElements = 64 * 1024;
  static thread_local Scratch sa, sb;
  const uint16_t* x = static_cast<const uint16_t*>(g.x) + gi * g.gx;
  const uint16_t* y = static_cast<const uint16_t*>(g.y) + gi * g.gy;
  float* c = g.c + gi * g.gc;
  const int64_t kcMax = std::min(KC, roundUp(g.k, 32)), mcMax = std::min(MC, roundUp(i1 - i0, 32));
  const int64_t ncBlock = std::clamp<int64_t>(kYBlockElements / kcMax / 32 * 32, 32, roundUp(j1 - j0, 32));
  uint16_t* bp = static_cast<uint16_t*>(sb.get(sizeof(uint16_t) * static_cast<size_t>(ncBlock * kcMax)));
  alignas(64) float edge[32 * 32];
  // X is gathered once when it fits in 4 MB (the weights of an NCHW convolution, read by every
  // block of Y), rows kp apart, each KC block of k a multiple of 32 but the last, zero-padded;
  // else per block into ap.
  const int64_t kp = roundUp(g.k, 32), rowsP = roundUp(i1 - i0, 32);
  const bool whole = rowsP * kp * 2 <= (int64_t(4) << 20);
  uint16_t* xWhole = nullptr;
  uint16_t* ap = nullptr;
  if (whole) {
    xWhole = static_cast<uint16_t*>(sa.get(sizeof(uint16_t) * static_cast<size_t>(rowsP * kp)));
    packXRows(g, x, i0, i1 - i0, 0, g.k, kp, xWhole);
  } else {
    ap = static_cast<uint16_t*>(sa.get(sizeof(uint16_t) * static_cast<size_t>(mcMax * kcMax)));
  }
  HardwareTiles::config(fullTileConfig());
  for (int64_t jc = j0; jc < j1; jc += ncBlock) {
    const int64_t nc = std::min(ncBlock, j1 - jc);
    for (int64_t pc = 0; pc < g.k; pc += KC) {
      const int64_t kc = std::min(KC, g.k - pc), kc2 = roundUp(kc, 2), kcp = roundUp(kc, 32);
      for (int64_t q = 0; q * 32 < nc; ++q) {
        uint16_t* panel = bp + q * kcp * 32;
        convPackYPairs(g, y, pc, kc, jc + q * 32, static_cast<int>(std::min<int64_t>(32, nc - q * 32)), panel);
        if (kcp > kc2) std::memset(panel + kc2 * 32, 0, sizeof(uint16_t) * static_cast<size_t>((kcp - kc2) * 32));
      }
      const bool fresh = g.overwrite && pc == 0;  // C holds no values yet: tiles start from zero
      for (int64_t ic = i0; ic < i1; ic += MC) {
        const int64_t mc = std::min(MC, i1 - ic);
        // X's block: from the whole packed X (gathered once per call) or gathered here.
        const uint16_t* xa = whole ? xWhole + (ic - i0) * kp + pc : ap;
        const int64_t lda = whole ? kp : kcp;
        if (!whole) packXRows(g, x, ic, mc, pc, kc, kcp, ap);
        for (int64_t jr = 0; jr < nc; jr += 32) {
          const int nr = static_cast<int>(std::min<int64_t>(32, nc - jr));
          const int64_t j = jc + jr;
          int64_t colStep;
          const bool colsUnit = regularStep(g.cCol + j, nr, colStep) && (nr == 1 || colStep == 1);
          const char* bpanel = reinterpret_cast<const char*>(bp + (jr / 32) * kcp * 32);
          for (int64_t ir = 0; ir < mc; ir += 32) {
            const int mr = static_cast<int>(std::min<int64_t>(32, mc - ir));
            const int64_t i = ic + ir;
            const char* apc = reinterpret_cast<const char*>(xa + ir * lda);
            int64_t rowStep;
            if (mr == 32 && nr == 32 && colsUnit && regularStep(g.cRow + i, 32, rowStep)) {
              tileMicro<HardwareTiles, false>(kcp / 32, apc, lda * 2, bpanel,
                                              reinterpret_cast<char*>(c + g.cRow[i] + g.cCol[j]), rowStep * 4, fresh);
              continue;
            }
            tileMicro<HardwareTiles, false>(kcp / 32, apc, lda * 2, bpanel, reinterpret_cast<char*>(edge), 128, true);
            for (int r = 0; r < mr; ++r) {
              float* row = c + g.cRow[i + r];
              if (fresh)
                for (int q = 0; q < nr; ++q) row[g.cCol[j + q]] = edge[r * 32 + q];
              else
                for (int q = 0; q < nr; ++q) row[g.cCol[j + q]] += edge[r * 32 + q];
            }
          }
        }
      }
    }
  }
  HardwareTiles::release();
}

// out[32 x 32] = two 16-row tiles of packed weights (rows kk apart, tap-major, csteps 32-channel
// steps a tap) . the channel-pair planes (pitch pairs apart) at each tap's offset plus column j0.
void gridMicro(const uint16_t* a, int64_t kk, const uint16_t* planes, int64_t pitch, const int64_t* tapOff,
               int64_t taps, int64_t csteps, int64_t j0, float* out) {
  const int64_t sa = kk * 2, sb = pitch * 4, stepB = 16 * pitch * 2;
  const uint16_t* a1 = a + 16 * kk;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t t = 0; t < taps; ++t) {
    const uint16_t* b = planes + (tapOff[t] + j0) * 2;
    const uint16_t* at0 = a + t * csteps * 32;
    const uint16_t* at1 = a1 + t * csteps * 32;
    for (int64_t s = 0; s < csteps; ++s) {
      _tile_loadd(4, at0 + s * 32, sa);
      _tile_loadd(6, b + s * stepB, sb);
      _tile_loadd(7, b + s * stepB + 32, sb);
      _tile_loadd(5, at1 + s * 32, sa);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, out, 128);
  _tile_stored(1, out + 16, 128);
  _tile_stored(2, out + 16 * 32, 128);
  _tile_stored(3, out + 16 * 32 + 16, 128);
}

// Channel pairs [q0, q1) of the input at base (channels cs apart, `span` elements read) into
// planes of `pitch` pairs: pair q, element e at planes[(q * pitch + e) * 2 + c % 2] for c = 2q + (0 or 1);
// zeros past the channels and past span.
void interleaveChannels(const uint16_t* base, int64_t cin, int64_t cs, int64_t span, int64_t pitch, int64_t q0,
                        int64_t q1, uint16_t* planes) {
  for (int64_t q = q0; q < q1; ++q) {
    const uint16_t* r0 = 2 * q < cin ? base + 2 * q * cs : nullptr;
    const uint16_t* r1 = 2 * q + 1 < cin ? base + (2 * q + 1) * cs : nullptr;
    uint16_t* d = planes + q * pitch * 2;
    for (int64_t e = 0; e < span; e += 32) {
      const int n = static_cast<int>(std::min<int64_t>(32, span - e));
      const __mmask32 m = n == 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1;
      const __m512i a = r0 ? _mm512_maskz_loadu_epi16(m, r0 + e) : _mm512_setzero_si512();
      const __m512i b = r1 ? _mm512_maskz_loadu_epi16(m, r1 + e) : _mm512_setzero_si512();
      __m512i lo, hi;
      interleavePairs(a, b, lo, hi);
      _mm512_storeu_si512(d + 2 * e, lo);
      _mm512_storeu_si512(d + 2 * e + 32, hi);  // pairs past span are zero (masked loads)
    }
    const int64_t written = (span + 31) / 32 * 32;
    if (pitch > written) std::memset(d + 2 * written, 0, sizeof(uint16_t) * static_cast<size_t>(2 * (pitch - written)));
  }
}

// The same for a stride-2 grid (conv.h's ConvPhases): each channel pair's four phase planes
// of `sub` pairs (rows2 rows of pitch2), element (row, col) of the channel going to phase
// (row % 2, col % 2) at (row / 2, col / 2); nothing at or past `extent` elements from y is read.
void interleavePhases(const uint16_t* y, int64_t base, int64_t extent, int64_t cin, int64_t cs, const radix::kernels::ConvPhases& ph,
                      int64_t stride, int64_t q0, int64_t q1, uint16_t* planes) {
  alignas(64) static const uint16_t kZeros[32] = {};
  const int64_t rows2 = (ph.rows + 1) / 2, pitch2 = (ph.pitch + 1) / 2, sub = rows2 * pitch2;
  for (int64_t q = q0; q < q1; ++q) {
    for (int phase = 0; phase < 4; ++phase) {
      const int64_t a = phase / 2, b = phase % 2;
      for (int64_t r2 = 0; r2 < rows2; ++r2) {
        uint16_t* d = planes + (q * stride + phase * sub + r2 * pitch2) * 2;
        const int64_t row = 2 * r2 + a;
        int64_t n = row < ph.rows ? (ph.pitch - b + 1) / 2 : 0;
        const int64_t at0 = base + 2 * q * cs + row * ph.pitch + b, at1 = at0 + cs;
        const bool has1 = 2 * q + 1 < cin;
        // Only elements below extent: one past the last element any position reads.
        for (int64_t at : {at0, has1 ? at1 : at0}) n = std::min(n, at < extent ? (extent - at + 1) / 2 : 0);
        for (int64_t t = 0; t < n; t += 16)
          interleaveEvenPairs(y + at0 + 2 * t, has1 ? y + at1 + 2 * t : kZeros, d + 2 * t,
                              static_cast<int>(std::min<int64_t>(16, n - t)));
        if (n < pitch2) std::memset(d + 2 * n, 0, sizeof(uint16_t) * static_cast<size_t>(2 * (pitch2 - n)));
      }
    }
  }
}

}  // namespace

namespace radix::kernels {

void runConvRowsAmx(const ConvRowsAmxPlan& p, int threads) {
  const ConvRowsPlan& r = *p.rows;
  const ConvGemmPlan& g = r.g;
  const int64_t cinP = roundUp(p.cin, 32), csteps = cinP / 32, kk = p.taps * cinP, mP = roundUp(g.m, 32);
  const int64_t cols = (r.h - 1) * r.ext + r.w, tiles = (cols + 31) / 32, pairs = cinP / 2;
  int64_t maxTap = 0;
  for (int64_t t = 0; t < p.taps; ++t) maxTap = std::max(maxTap, p.tapOff[t]);
  // A unit (one outer index of one group) reads span elements of each channel, and its tiles up
  // to 32 columns past the last position: each pair's plane is `pitch` pairs. At stride 2 a pair's
  // plane is its four phase planes, and a zero tail past the last one takes the overrun.
  const ConvPhases& ph = r.phases;
  const int64_t sub = ph.planes > 0 ? (ph.rows + 1) / 2 * ((ph.pitch + 1) / 2) : 0;
  const int64_t span = maxTap + cols, pitch = sub > 0 ? 4 * sub : roundUp(maxTap + tiles * 32, 32);
  const int64_t tail = sub > 0 ? roundUp(tiles * 32, 32) : 0, planeElems = (pairs * pitch + tail) * 2;
  // A copy-space offset (ConvRowsPlan's for phases) as an input offset.
  auto inputOffset = [&](int64_t at) { return sub > 0 ? at / (4 * sub) * ph.plane : at; };
  const uint16_t* x = static_cast<const uint16_t*>(g.x);
  const uint16_t* y = static_cast<const uint16_t*>(g.y);
  Scratch weights, sharedPlanes;
  const int64_t units = g.groups * r.outer;
  const bool own = units >= threads;  // whole units per thread, else every thread shares each unit's planes
  uint16_t* shared = own ? nullptr : static_cast<uint16_t*>(sharedPlanes.get(sizeof(uint16_t) * static_cast<size_t>(planeElems)));
  auto packWeights = [&](uint16_t* wp, int64_t row0, int64_t row1) {
    for (int64_t row = row0; row < row1; ++row) {
      const int64_t gi = row / mP, i = row % mP;
      uint16_t* d = wp + row * kk;
      if (i >= g.m) {
        std::memset(d, 0, sizeof(uint16_t) * static_cast<size_t>(kk));
        continue;
      }
      const uint16_t* xr = x + gi * g.gx + g.xRow[i];
      for (int64_t t = 0; t < p.taps; ++t) {
        uint16_t* dt = d + t * cinP;
        for (int64_t c = 0; c < p.cin; ++c) dt[c] = xr[g.xK[c * p.taps + t]];
        for (int64_t c = p.cin; c < cinP; ++c) dt[c] = 0;
      }
    }
  };
  // The weights tap-major, rows of kk: from the packed-weight cache where they are a pinned weight.
  const int64_t rowsAll = g.groups * mP;
  auto packAll = [&](uint16_t* dst) {
    packPanelsParallel(rowsAll, 32, rowsAll < 64 ? 1 : threads,
                       [&](int64_t row0, int64_t n) { packWeights(dst, row0, row0 + n); });
  };
  const size_t wBytes = sizeof(uint16_t) * static_cast<size_t>(rowsAll * kk);
  std::shared_ptr<const void> keep;
  const uint16_t* wp = static_cast<const uint16_t*>(
      xPackedCached(g, 0x60000 | static_cast<int32_t>(p.taps), wBytes, [&](void* dst) { packAll(static_cast<uint16_t*>(dst)); }, keep));
  if (!wp) {
    uint16_t* w = static_cast<uint16_t*>(weights.get(wBytes));
    packAll(w);
    wp = w;
  }
  auto planesOf = [&](int64_t u, int64_t q0, int64_t q1, uint16_t* planes) {
    const int64_t gi = u / r.outer, o = u % r.outer;
    if (sub == 0) {
      interleaveChannels(y + gi * g.gy + r.oy[o], p.cin, p.cs, span, pitch, q0, q1, planes);
      return;
    }
    interleavePhases(y, inputOffset(gi * g.gy) + inputOffset(r.oy[o]), ph.extent, p.cin, p.cs, ph, pitch, q0, q1, planes);
    if (q1 == pairs) std::memset(planes + pairs * pitch * 2, 0, sizeof(uint16_t) * static_cast<size_t>(tail * 2));
  };
  auto tilesOf = [&](int64_t u, int64_t t0, int64_t t1, const uint16_t* planes) {
    const int64_t gi = u / r.outer, o = u % r.outer, cAt = gi * g.gc + r.oc[o];
    float* c = g.c + cAt;
    uint16_t* cb = p.cBf16 ? p.cBf16 + cAt : nullptr;
    alignas(64) float out[32 * 32];
    for (int64_t jt = t0; jt < t1; ++jt) {
      const int64_t j0 = jt * 32;
      GridRun runs[32];
      const int nRuns = gridRuns(r, j0, static_cast<int>(std::min<int64_t>(32, cols - j0)), runs);
      if (nRuns == 0) continue;
      for (int64_t q = 0; q < mP / 32; ++q) {
        gridMicro(wp + (gi * mP + q * 32) * kk, kk, planes, pitch, p.tapOff, p.taps, csteps, j0, out);
        const int mr = static_cast<int>(std::min<int64_t>(32, g.m - q * 32));
        for (int i = 0; i < mr; ++i) {
          if (cb) {
            for (int k = 0; k < nRuns; ++k)
              amxRoundBf16(out + i * 32 + runs[k].l0, runs[k].len, cb + g.cRow[q * 32 + i] + runs[k].at);
            continue;
          }
          float* rowC = c + g.cRow[q * 32 + i];
          for (int k = 0; k < nRuns; ++k) {
            if (r.overwrite)
              writeRun<V512, false>(rowC + runs[k].at, out + i * 32 + runs[k].l0, runs[k].len);
            else
              writeRun<V512, true>(rowC + runs[k].at, out + i * 32 + runs[k].l0, runs[k].len);
          }
        }
      }
    }
  };
  auto work = [&](int64_t t, int64_t nt) {
    HardwareTiles::config(fullTileConfig());
    if (own) {
      static thread_local Scratch mine;
      uint16_t* planes = static_cast<uint16_t*>(mine.get(sizeof(uint16_t) * static_cast<size_t>(planeElems)));
      for (int64_t u = units * t / nt; u < units * (t + 1) / nt; ++u) {
        planesOf(u, 0, pairs, planes);
        tilesOf(u, 0, tiles, planes);
      }
    } else {
      for (int64_t u = 0; u < units; ++u) {
        planesOf(u, pairs * t / nt, pairs * (t + 1) / nt, shared);
#pragma omp barrier
        tilesOf(u, tiles * t / nt, tiles * (t + 1) / nt, shared);
#pragma omp barrier
      }
    }
    HardwareTiles::release();
  };
  if (threads <= 1) {
    work(0, 1);
  } else {
#pragma omp parallel num_threads(threads)
    work(omp_get_thread_num(), omp_get_num_threads());
  }
}

Path runAmx(const Problem& p, int threads) {
  if (amxTilesTake(p)) {
    tileGemmBf16<HardwareTiles>(p, threads, true);
    return Path::gemm;
  }
  return runAvx512(p, threads, true);  // GEMV (bandwidth-bound) and f32/f16 operands
}

void amxRoundBf16(const float* x, int64_t n, uint16_t* out) {
  int64_t j = 0;
  for (; j + 32 <= n; j += 32)
    _mm512_storeu_si512(out + j, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + j + 16), _mm512_loadu_ps(x + j)));
  for (; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm256_mask_storeu_epi16(out + j, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + j)));
  }
}

void amxPackRowsBf16(int64_t rows, int64_t k, const float* x, int64_t lda, void* packed) {
  const int64_t kp = roundUp(k, 32);
  static thread_local Scratch scratch;
  uint16_t* tmp = static_cast<uint16_t*>(scratch.get(sizeof(uint16_t) * static_cast<size_t>(32 * kp)));
  for (int64_t q = 0; q * 32 < rows; ++q) {
    const int nr = static_cast<int>(std::min<int64_t>(32, rows - q * 32));
    for (int r = 0; r < 32; ++r) {
      uint16_t* d = tmp + r * kp;
      if (r >= nr) {
        std::memset(d, 0, sizeof(uint16_t) * static_cast<size_t>(kp));
        continue;
      }
      amxRoundBf16(x + (q * 32 + r) * lda, k, d);
      for (int64_t j = k; j < kp; ++j) d[j] = 0;
    }
    HardwareTiles::columnWords(reinterpret_cast<const char*>(tmp), kp * 2, 32, kp / 2,
                               reinterpret_cast<uint32_t*>(static_cast<uint16_t*>(packed) + q * kp * 32));
  }
}

void amxBf16RowsGemm(int64_t xRows, int64_t wRows, int64_t k, const void* xPacked, const uint16_t* w, int64_t ldw,
                     float* c, int64_t sci, int64_t scj) {
  TileGemm g;
  g.a = w, g.sam = ldw, g.sak = 1;
  g.bPacked = xPacked;
  g.c = c, g.scm = scj, g.scn = sci;
  g.m = wRows, g.n = xRows, g.k = k;
  tileBlock<HardwareTiles, false>(g, 0, wRows, 0, xRows);
}

void runConvGemmAmx(const ConvGemmPlan& p, int threads) {
  Problem shape;
  shape.batch = p.groups, shape.m = p.m, shape.n = p.n;
  splitWork(shape, threads, 32, 32, [&](int64_t gi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    convBlockAmx(p, gi, i0, i1, j0, j1);
  });
}

void amxBytesRun(const Problem& p, int threads) { tileGemmBytes<HardwareTiles>(p, threads, true); }

void amxInt8Run(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                const void* packedB, int32_t* c, int64_t ldc, bool accumulate, int threads) {
  tileGemmInt8<HardwareTiles>(m, n, k, a, lda, b, ldb, packedB, c, ldc, accumulate, threads);
}

}  // namespace radix::kernels

#pragma clang attribute pop
