// Fused attention for AVX-512 (F, BW, VL, DQ): 16-lane f32 vectors.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/kernels/attention.h"
#include "compiler/kernels/half.h"

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c"))), apply_to = function)

#define RADIX_ATTENTION_F16C 1
namespace {
#include "compiler/kernels/attention_impl.h"
}  // namespace

namespace radix::kernels {
uint64_t attentionAvx512(const AttentionProblem& p, int threads) { return Attention<16>::run(p, threads); }
}  // namespace radix::kernels

#pragma clang attribute pop
