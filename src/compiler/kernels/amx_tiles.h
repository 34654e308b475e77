#pragma once
// The hardware tile backend of amx_impl.h's drivers (tileloadd, tdpbf16ps, tdpbusd) and the
// AVX-512 transposes it uses. Included after amx_impl.h by TUs compiled for AMX (amx.cpp,
// attention_amx.cpp), inside their target pragma.

namespace {

#include "compiler/kernels/transpose512.h"

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
  template <int t>
  static void zero() {
    _tile_zero(t);
  }
  template <bool Int8, int Signs, int c, int a, int b>
  static void dot() {
    if constexpr (!Int8)
      _tile_dpbf16ps(c, a, b);
    else if constexpr (Signs == 0)
      _tile_dpbuud(c, a, b);
    else if constexpr (Signs == 1)
      _tile_dpbsud(c, a, b);
    else if constexpr (Signs == 2)
      _tile_dpbusd(c, a, b);
    else
      _tile_dpbssd(c, a, b);
  }
};

}  // namespace
