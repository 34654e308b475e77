// radix_kernel_attention: unpacks the argument array, lowers the requested ISA to what this CPU
// runs, picks the thread count, counts the call; plus the baseline x86-64 (SSE2) variant.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/kernels/amx.h"
#include "compiler/kernels/attention.h"
#include "compiler/kernels/half.h"

namespace {
#include "compiler/kernels/attention_impl.h"

std::atomic<uint64_t> requested[radix::kernels::kAttentionIsaCount];
std::atomic<uint64_t> ran[radix::kernels::kAttentionIsaCount];
std::atomic<uint64_t> keys;
}  // namespace

namespace radix::kernels {

uint64_t attentionX86_64(const AttentionProblem& p, int threads) { return Attention<8>::run(p, threads); }

AttentionIsa attentionHostIsa() {
  static const AttentionIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
      return amxBf16Available() ? AttentionIsa::amx : AttentionIsa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
      return AttentionIsa::avx2;
    return AttentionIsa::x86_64;
  }();
  return isa;
}

const char* attentionIsaName(AttentionIsa isa) {
  switch (isa) {
    case AttentionIsa::x86_64: return "x86-64";
    case AttentionIsa::avx2: return "avx2";
    case AttentionIsa::avx512: return "avx512";
    case AttentionIsa::amx: return "amx";
  }
  return "?";
}

uint64_t attentionCallCount(AttentionIsa isa) { return requested[static_cast<int>(isa)].load(); }
uint64_t attentionRunCount(AttentionIsa isa) { return ran[static_cast<int>(isa)].load(); }
uint64_t attentionKeysRead() { return keys.load(); }

}  // namespace radix::kernels

using namespace radix::kernels;

extern "C" void radix_kernel_attention(int64_t args) {
  const int64_t* a = reinterpret_cast<const int64_t*>(args);
  AttentionProblem p;
  p.bf16 = a[kAttnDtype] == 2;
  const int64_t kv = a[kAttnKvDtype];
  if (kv != static_cast<int64_t>(Elem::f32) && kv != static_cast<int64_t>(Elem::f16) && kv != static_cast<int64_t>(Elem::bf16))
    return;
  p.kv = static_cast<Elem>(kv);
  const int64_t bytes = p.bf16 ? 2 : 4, kvBytes = elemBytes(p.kv);
  const auto at = [&](int i, int64_t size) { return reinterpret_cast<char*>(a[i]) + a[i + 1] * size; };
  p.q = at(kAttnQ, bytes), p.k = at(kAttnK, kvBytes), p.v = at(kAttnV, kvBytes), p.out = at(kAttnOut, bytes);
  if (a[kAttnOffset] != 0) p.offset = reinterpret_cast<const int32_t*>(a[kAttnOffset]) + a[kAttnOffset + 1];
  if (a[kAttnLengths] != 0) p.lengths = reinterpret_cast<const int32_t*>(a[kAttnLengths]) + a[kAttnLengths + 1];
  for (int i = 0; i < 2; ++i) {
    p.batch[i] = a[kAttnBatch + i];
    p.lengthStride[i] = a[kAttnLengthStrides + i];
  }
  p.hq = a[kAttnHq], p.hk = a[kAttnHk], p.nq = a[kAttnNq], p.nk = a[kAttnNk], p.hd = a[kAttnHd];
  for (int i = 0; i < 4; ++i) {
    p.qStride[i] = a[kAttnQStrides + i];
    p.kStride[i] = a[kAttnKStrides + i];
    p.vStride[i] = a[kAttnVStrides + i];
    p.oStride[i] = a[kAttnOutStrides + i];
  }
  p.causal = a[kAttnCausal] != 0;
  p.window = a[kAttnWindow];
  double scale, softcap;
  std::memcpy(&scale, &a[kAttnScale], 8);
  std::memcpy(&softcap, &a[kAttnSoftcap], 8);
  p.scale = static_cast<float>(scale), p.softcap = static_cast<float>(softcap);
  if (p.batch[0] * p.batch[1] <= 0 || p.hq <= 0 || p.hk <= 0 || p.nq <= 0 || p.hd <= 0 || p.hq % p.hk != 0) return;
  const int64_t want = std::clamp<int64_t>(a[kAttnIsa], 0, kAttentionIsaCount - 1);
  requested[want].fetch_add(1, std::memory_order_relaxed);
  // A cached object may ask for more than this CPU has: run the best it has.
  const AttentionIsa run = static_cast<AttentionIsa>(std::min<int64_t>(want, static_cast<int64_t>(attentionHostIsa())));
  int t = a[kAttnThreads] > 0 ? static_cast<int>(a[kAttnThreads]) : omp_get_max_threads();
  const double work = 4.0 * static_cast<double>(p.batch[0] * p.batch[1] * p.hq) * static_cast<double>(p.nq) *
                      static_cast<double>(std::max<int64_t>(p.nk, 1)) * static_cast<double>(p.hd);
  // A decode step (one query, 12 heads over a few hundred keys) is already worth a fork-join.
  if (omp_in_parallel() || work < 1.3e5) t = 1;
  t = std::max(t, 1);
  uint64_t read = 0;
  switch (run) {
    case AttentionIsa::amx: read = attentionAmxApplies(p) ? attentionAmx(p, t) : attentionAvx512(p, t); break;
    case AttentionIsa::avx512: read = attentionAvx512(p, t); break;
    case AttentionIsa::avx2: read = attentionAvx2(p, t); break;
    default: read = attentionX86_64(p, t); break;
  }
  ran[static_cast<int>(run)].fetch_add(1, std::memory_order_relaxed);
  keys.fetch_add(read, std::memory_order_relaxed);
}
