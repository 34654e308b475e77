// Fused attention for AVX2 + FMA (x86-64-v3): 8-lane f32 vectors.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/kernels/attention.h"
#include "compiler/kernels/half.h"

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)

#define RADIX_ATTENTION_F16C 1
namespace {
#include "compiler/kernels/attention_impl.h"
}  // namespace

namespace radix::kernels {
uint64_t attentionAvx2(const AttentionProblem& p, int threads) { return Attention<8>::run(p, threads); }
}  // namespace radix::kernels

#pragma clang attribute pop
