// AVX-512 quantized kernels (qimpl.h): the one-row GEMV on zmm for q8_0/q4_0/q4_k/q6_k
// (qgemv512.h), the other int8 dots on ymm (vpdpbusd with avx512_vnni, else vpmaddubsw), the
// decoded GEMM on 8x32 zmm tiles. Two copies, with and without avx512vnni.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/quant/qkernels.h"
#include "radix/error.h"

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c,avx2"))), \
                             apply_to = function)

#include "compiler/kernels/impl.h"

namespace {

#include "compiler/kernels/vec512.h"

#define RADIX_Q_NS qavx512
#define RADIX_Q_VNNI 0
#define RADIX_Q_ZMM 1
#define RADIX_Q_V V512
#define RADIX_Q_MR 8
#define RADIX_Q_NV 2
#include "compiler/kernels/quant/qimpl.h"
#undef RADIX_Q_NS
#undef RADIX_Q_VNNI

}  // namespace

#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c,avx2"))), \
                             apply_to = function)

namespace {
#define RADIX_Q_NS qavx512vnni
#define RADIX_Q_VNNI 2
#include "compiler/kernels/quant/qimpl.h"
}  // namespace

#pragma clang attribute pop

namespace radix::kernels {

QPath runQuantAvx512(const QProblem& p, int64_t n0, int64_t n1, bool vnni) {
  QPath path = QPath::scalar;
  if (vnni ? qavx512vnni::run(p, n0, n1, path) : qavx512::run(p, n0, n1, path)) return path;
  return runQuantX86_64(p, n0, n1);  // i8_channel / i4_group: the scalar path
}

}  // namespace radix::kernels
