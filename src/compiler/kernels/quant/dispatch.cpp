// radix_kernel_qcontract: the symbol compiled code calls for C += A · dequant(W)ᵀ. It widens
// f16/bf16 activations to f32, lowers the requested ISA (and VNNI) to what this CPU runs, splits
// the n weight rows across OpenMP threads and counts the path taken.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "compiler/kernels/impl.h"
#include "compiler/kernels/quant/qkernels.h"

namespace radix::kernels {

namespace {
std::atomic<uint64_t> qcounters[kQPathCount][kIsaCount];

// Rows per thread are a multiple of this (the kernels' row tiles).
constexpr int64_t kRowAlign = 16;
// Problems with fewer multiply-adds run on the calling thread: a fork-join (a few microseconds)
// costs more. A 768 x 768 decode GEMV (590k, about 15 us on one core) is split.
constexpr double kMinParallelWork = 1 << 17;

float widen(const void* a, Elem e, int64_t i) {
  const uint16_t h = static_cast<const uint16_t*>(a)[i];
  return e == Elem::f16 ? f16ToF32(h) : bf16ToF32(h);
}
}  // namespace

uint64_t qcallCount(QPath path) {
  uint64_t n = 0;
  for (int i = 0; i < kIsaCount; ++i) n += qcounters[static_cast<int>(path)][i].load(std::memory_order_relaxed);
  return n;
}

uint64_t qcallCount(QPath path, Isa isa) {
  return qcounters[static_cast<int>(path)][static_cast<int>(isa)].load(std::memory_order_relaxed);
}

bool hostVnni(Isa isa) {
  static const bool avx = [] {
    // avx_vnni is CPUID.(EAX=7,ECX=1):EAX[4]; clang 22's __builtin_cpu_supports knows "avxvnni".
    __builtin_cpu_init();
    return __builtin_cpu_supports("avxvnni") != 0;
  }();
  switch (isa) {
    case Isa::avx512:
    case Isa::avx512bf16:
    case Isa::amx: return hostHasAvx512Vnni();
    case Isa::avx2: return avx;
    default: return false;
  }
}

// Weak fallbacks until the fast kernels (avx2.cpp, avx512.cpp) are linked in: the scalar path.
__attribute__((weak)) QPath runQuantAvx2(const QProblem& p, int64_t n0, int64_t n1, bool) {
  return runQuantX86_64(p, n0, n1);
}
__attribute__((weak)) QPath runQuantAvx512(const QProblem& p, int64_t n0, int64_t n1, bool) {
  return runQuantX86_64(p, n0, n1);
}

}  // namespace radix::kernels

using namespace radix::kernels;

extern "C" void radix_kernel_qcontract(int64_t aBase, int64_t aOffset, int64_t wBase, int64_t wOffset, int64_t sBase,
                                       int64_t sOffset, int64_t zBase, int64_t zOffset, int64_t cBase,
                                       int64_t cOffset, int64_t types, int64_t m, int64_t n, int64_t k, int64_t group,
                                       int64_t sam, int64_t wRowBytes, int64_t scm, int64_t scn, int64_t threads,
                                       int64_t isa) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  QProblem p;
  p.type = static_cast<radix::QuantType>(types & 0xff);
  p.scaleType = static_cast<Elem>((types >> kQScaleShift) & 0xff);
  const Elem aType = static_cast<Elem>((types >> kQActShift) & 0xff);
  const int scaleBytes = static_cast<int>(elemBytes(p.scaleType));
  p.w = reinterpret_cast<const uint8_t*>(wBase) + wOffset;
  if (sBase) p.scales = reinterpret_cast<const char*>(sBase) + sOffset * scaleBytes;
  if (zBase) p.zeros = reinterpret_cast<const char*>(zBase) + zOffset * scaleBytes;
  p.c = reinterpret_cast<float*>(cBase) + cOffset;
  p.m = m, p.n = n, p.k = k, p.group = group;
  p.wRowBytes = wRowBytes, p.scm = scm, p.scn = scn;
  // f16/bf16 activations: widened once per call into a contiguous {m, k} buffer.
  thread_local std::vector<float> widened;
  if (aType == Elem::f32) {
    p.a = reinterpret_cast<const float*>(aBase) + aOffset;
    p.sam = sam;
  } else {
    const char* a = reinterpret_cast<const char*>(aBase) + aOffset * 2;
    widened.resize(static_cast<size_t>(m * k));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j) widened[i * k + j] = widen(a, aType, i * sam + j);
    p.a = widened.data();
    p.sam = k;
  }
  // A cached object may ask for more than this CPU has: run the best it has.
  const Isa run = static_cast<Isa>(std::min<int64_t>(isa & 0xff, static_cast<int64_t>(hostIsa())));
  const bool vnni = (isa & kQIsaVnni) != 0 && hostVnni(run);
  p.amx = run == Isa::amx && vnni;  // run is amx only where hostIsa() saw the tiles granted
  // The int formats (separate scales) have only the scalar path.
  const bool scalarOnly = p.type == radix::QuantType::i8_channel || p.type == radix::QuantType::i4_group;
  const bool overwrite = (types & kQOverwrite) != 0;
  const auto runRows = [&](int64_t n0, int64_t n1) {
    if (overwrite)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = n0; j < n1; ++j) p.c[i * scm + j * scn] = 0;
    if (scalarOnly) return runQuantX86_64(p, n0, n1);
    switch (run) {
      case Isa::amx:
      case Isa::avx512bf16:
      case Isa::avx512: return runQuantAvx512(p, n0, n1, vnni);
      case Isa::avx2: return runQuantAvx2(p, n0, n1, vnni);
      default: return runQuantX86_64(p, n0, n1);
    }
  };
  int64_t t = threads > 0 ? threads : omp_get_max_threads();
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (omp_in_parallel() || work < kMinParallelWork) t = 1;
  t = std::clamp<int64_t>(t, 1, (n + kRowAlign - 1) / kRowAlign);
  QPath path = QPath::scalar;
  if (t == 1) {
    path = runRows(0, n);
  } else {
    // Rows split in kRowAlign-aligned chunks, one per thread.
    const int64_t chunk = ((n + t - 1) / t + kRowAlign - 1) / kRowAlign * kRowAlign;
#pragma omp parallel num_threads(static_cast<int>(t))
    {
      const int64_t i = omp_get_thread_num();
      const int64_t n0 = std::min(n, i * chunk), n1 = std::min(n, n0 + chunk);
      if (n0 < n1) {
        const QPath taken = runRows(n0, n1);
        if (i == 0) path = taken;
      }
    }
  }
  qcounters[static_cast<int>(path)][static_cast<int>(run)].fetch_add(1, std::memory_order_relaxed);
}
