// AVX2 + FMA (x86-64-v3) kernels: 6x16 f32 FMA tiles.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "compiler/kernels/kernels.h"

// Everything declared from here on is compiled for this ISA: only this file's own code (in an
// anonymous namespace, plus the run function), never a library template another TU could share.
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)

#include "compiler/kernels/impl.h"

namespace {

#include "compiler/kernels/vec256.h"

struct CfgF32 {
  using V = V256;
  using PackT = float;
  static constexpr int MR = 6, NV = 2, NR = NV * V::W, kPair = 1;
  static constexpr int64_t MC = 192, KC = 256, NC = 4096;
  static void micro(int64_t kc, const float* ap, const float* bp, float* c, int64_t scm, int64_t scn, int mr, int nr,
                    Ahead ahead = {}) {
    microF32<V, MR, NV>(kc, ap, bp, c, scm, scn, mr, nr, ahead);
  }
};

}  // namespace

namespace radix::kernels {
Path runAvx2(const Problem& p, int threads) { return runWith<V256, CfgF32>(p, threads); }
}  // namespace radix::kernels

#include "compiler/kernels/bytes_impl.h"

namespace radix::kernels {
void bytesGemmAvx2(const Problem& p, int threads) { bytesGemm(p, threads); }
}  // namespace radix::kernels

#include "compiler/kernels/conv_impl.h"

namespace radix::kernels {
void runConvGemmAvx2(const ConvGemmPlan& p, int threads) { convGemm<CfgF32>(p, threads); }
void runConvRowsAvx2(const ConvRowsPlan& p, int threads) { convRows<CfgF32>(p, threads); }
void runConvDirectAvx2(const ConvDirectPlan& p, int threads) { convDirect(p, threads); }
}  // namespace radix::kernels

#pragma clang attribute pop
