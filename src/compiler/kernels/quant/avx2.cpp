// AVX2 + FMA quantized kernels (qimpl.h), twice: plain AVX2 (vpmaddubsw) and AVX2 + avx_vnni
// (vpdpbusd on ymm), each compiled under its own target so the plain path never executes VNNI.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "compiler/kernels/quant/qkernels.h"
#include "radix/error.h"

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)

#include "compiler/kernels/impl.h"

namespace {

#include "compiler/kernels/vec256.h"

#define RADIX_Q_NS qavx2
#define RADIX_Q_VNNI 0
#define RADIX_Q_V V256
#define RADIX_Q_MR 6
#define RADIX_Q_NV 2
#include "compiler/kernels/quant/qimpl.h"
#undef RADIX_Q_NS
#undef RADIX_Q_VNNI

}  // namespace

#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), apply_to = function)

namespace {
#define RADIX_Q_NS qavx2vnni
#define RADIX_Q_VNNI 1
#include "compiler/kernels/quant/qimpl.h"
}  // namespace

#pragma clang attribute pop

namespace radix::kernels {

QPath runQuantAvx2(const QProblem& p, int64_t n0, int64_t n1, bool vnni) {
  QPath path = QPath::scalar;
  if (vnni ? qavx2vnni::run(p, n0, n1, path) : qavx2::run(p, n0, n1, path)) return path;
  return runQuantX86_64(p, n0, n1);  // i8_channel / i4_group: the scalar path
}

}  // namespace radix::kernels
