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

namespace {

// 16 x 16 f32 transpose in registers.
inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
  }
}

struct HardwareTiles {
  // dst[w * 32 + j] = word w of column j: 16 x 16 word blocks transposed in registers.
  static void columnWords(const char* src, int64_t stride, int cols, int64_t words, uint32_t* dst) {
    const int64_t wFull = words / 16 * 16;
    int j0 = 0;
    for (; j0 + 16 <= cols; j0 += 16) {
      for (int64_t w0 = 0; w0 < wFull; w0 += 16) {
        __m512 r[16];
        for (int t = 0; t < 16; ++t) r[t] = _mm512_loadu_ps(src + (j0 + t) * stride + 4 * w0);
        transpose16(r);
        for (int t = 0; t < 16; ++t) _mm512_storeu_ps(dst + (w0 + t) * 32 + j0, r[t]);
      }
      ScalarWords::columnWords(src + j0 * stride + 4 * wFull, stride, 16, words - wFull, dst + wFull * 32 + j0);
    }
    if (j0 < cols) ScalarWords::columnWords(src + j0 * stride, stride, cols - j0, words, dst + j0);
  }
  // c[j * ldc + i] += edge[i * 32 + j], i < mr, j < nr: 16 x 16 quadrants transposed in registers.
  static void addTransposed(const float* edge, float* c, int64_t ldc, int mr, int nr) {
    for (int ib = 0; ib < 2; ++ib) {
      const int ni = std::clamp(mr - 16 * ib, 0, 16);
      if (ni == 0) break;
      const __mmask16 mask = static_cast<__mmask16>((1u << ni) - 1);
      for (int jb = 0; jb < 2; ++jb) {
        const int nj = std::clamp(nr - 16 * jb, 0, 16);
        if (nj == 0) break;
        __m512 r[16];
        for (int t = 0; t < 16; ++t) r[t] = _mm512_load_ps(edge + (16 * ib + t) * 32 + 16 * jb);
        transpose16(r);
        for (int t = 0; t < nj; ++t) {
          float* dst = c + (16 * jb + t) * ldc + 16 * ib;
          _mm512_mask_storeu_ps(dst, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst), r[t]));
        }
      }
    }
  }
  static void addTransposed(const int32_t* edge, int32_t* c, int64_t ldc, int mr, int nr) {
    addTransposedScalar(edge, c, ldc, mr, nr);
  }
  static void config(const TileConfig& cfg) { _tile_loadconfig(&cfg); }
  static void release() { _tile_release(); }
  template <int t>
  static void load(const void* p, int64_t stride) {
    _tile_loadd(t, p, stride);
  }
  template <int t>
  static void store(void* p, int64_t stride) {
    _tile_stored(t, p, stride);
  }
  template <bool Int8, int c, int a, int b>
  static void dot() {
    if constexpr (Int8)
      _tile_dpbusd(c, a, b);
    else
      _tile_dpbf16ps(c, a, b);
  }
};

}  // namespace

namespace radix::kernels {

Path runAmx(const Problem& p, int threads) {
  if (p.aType == Elem::bf16 && p.bType == Elem::bf16 && p.m != 1 && p.n != 1) {
    tileGemmBf16<HardwareTiles>(p, threads, true);
    return Path::gemm;
  }
  return runAvx512(p, threads, true);  // GEMV (bandwidth-bound) and f32/f16 operands
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
      const float* s = x + (q * 32 + r) * lda;
      int64_t j = 0;
      for (; j + 32 <= k; j += 32)
        _mm512_storeu_si512(d + j, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + j + 16), _mm512_loadu_ps(s + j)));
      for (; j < k; ++j) {
        uint32_t u;
        std::memcpy(&u, s + j, 4);
        d[j] = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);  // round to nearest even
      }
      for (; j < kp; ++j) d[j] = 0;
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

void amxInt8Run(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                const void* packedB, int32_t* c, int64_t ldc, bool accumulate, int threads) {
  tileGemmInt8<HardwareTiles>(m, n, k, a, lda, b, ldb, packedB, c, ldc, accumulate, threads);
}

}  // namespace radix::kernels

#pragma clang attribute pop
