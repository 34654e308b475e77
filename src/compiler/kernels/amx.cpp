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
