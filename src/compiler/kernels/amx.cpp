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

struct HardwareTiles {
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

void amxInt8Run(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                const void* packedB, int32_t* c, int64_t ldc, bool accumulate, int threads) {
  tileGemmInt8<HardwareTiles>(m, n, k, a, lda, b, ldb, packedB, c, ldc, accumulate, threads);
}

}  // namespace radix::kernels

#pragma clang attribute pop
