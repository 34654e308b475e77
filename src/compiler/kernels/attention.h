#pragma once
// The fused attention kernel (no MLIR): compiled code calls radix_kernel_attention in place of
// nn::sdpa's composition (attention_lower.cpp). Flash-style: per (batch, key head, query block),
// Q·Kᵀ, the online softmax and ·V run over blocks of keys, and only the keys some query of the
// block sees are read (causal, window, keyLengths), so decode reads the used part of a cache.
#include <cstdint>

#include "compiler/kernels/kernels.h"

namespace radix::kernels {

/// The attention kernel's instruction sets (its own: it needs no more than AVX-512F).
enum class AttentionIsa : int32_t { x86_64 = 0, avx2 = 1, avx512 = 2, amx = 3 };
constexpr int kAttentionIsaCount = 4;

/// out = softmax(mask(scale · q·kᵀ)) · v for one call. Strides in elements, per batch axis (two
/// at most), head and position; the head dim is contiguous in every operand.
struct AttentionProblem {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  bool bf16 = false;                // q and out bf16, else f32
  Elem kv = Elem::f32;              // k and v: f32, f16 or bf16 (bf16 when bf16 is)
  const int32_t* offset = nullptr;  // position of query 0 among the keys; null: nk - nq
  const int32_t* lengths = nullptr; // keys at positions >= lengths[b] are masked; null: none
  int64_t lengthStride[2] = {0, 0}; // per batch axis
  int64_t batch[2] = {1, 1};
  int64_t hq = 1, hk = 1, nq = 1, nk = 1, hd = 1;
  int64_t qStride[4] = {0, 0, 0, 0};  // batch 0, batch 1, head, position
  int64_t kStride[4] = {0, 0, 0, 0};
  int64_t vStride[4] = {0, 0, 0, 0};
  int64_t oStride[4] = {0, 0, 0, 0};
  bool causal = false;
  int64_t window = 0;  // 0: none
  float scale = 1;
  float softcap = 0;   // 0: none
};

/// The best attention ISA this CPU runs.
AttentionIsa attentionHostIsa();
/// "avx512"
const char* attentionIsaName(AttentionIsa isa);
/// Calls whose compiled code asked for `isa` (tests prove the fused path ran, and which variant
/// the compile target selected, even where the host runs a lesser one).
uint64_t attentionCallCount(AttentionIsa isa);
/// Calls that ran on `isa`.
uint64_t attentionRunCount(AttentionIsa isa);
/// Key positions read since the process started (tests prove decode reads only the used cache).
uint64_t attentionKeysRead();

/// Per ISA (one TU each). `threads` >= 1, never nested in a parallel region. Returns the key
/// rows read.
uint64_t attentionX86_64(const AttentionProblem& p, int threads);
uint64_t attentionAvx2(const AttentionProblem& p, int threads);
uint64_t attentionAvx512(const AttentionProblem& p, int threads);
/// AMX tiles (attention_amx.cpp): bf16 prefill (q, k, v all bf16) with hd a multiple of 32 (at most 256) and no
/// softcap, where attentionAmxApplies(p); call only where amxBf16Available().
uint64_t attentionAmx(const AttentionProblem& p, int threads);
bool attentionAmxApplies(const AttentionProblem& p);

/// The arguments of radix_kernel_attention, in the order of its int64 array.
enum AttentionArg : int {
  kAttnQ = 0,  // base, element offset (and so on for each buffer)
  kAttnK = 2,
  kAttnV = 4,
  kAttnOut = 6,
  kAttnOffset = 8,   // base 0: none
  kAttnLengths = 10, // base 0: none
  kAttnDtype = 12,   // q and out: 0 f32, 2 bf16
  kAttnBatch = 13,   // 2 values
  kAttnHq = 15,
  kAttnHk,
  kAttnNq,
  kAttnNk,
  kAttnHd,
  kAttnQStrides = 20,  // 4 values each: batch 0, batch 1, head, position
  kAttnKStrides = 24,
  kAttnVStrides = 28,
  kAttnOutStrides = 32,
  kAttnLengthStrides = 36,  // 2 values
  kAttnCausal = 38,
  kAttnWindow,
  kAttnScale,    // f64 bits
  kAttnSoftcap,  // f64 bits, 0: none
  kAttnThreads,
  kAttnIsa,
  kAttnKvDtype,  // k and v: an Elem (f32, f16, bf16)
  kAttnArgCount
};

}  // namespace radix::kernels

extern "C" {
/// The symbol compiled code calls: `args` is the address of kAttnArgCount int64 values
/// (AttentionArg); isa an AttentionIsa (lowered to what the CPU runs); threads 0: one per core.
void radix_kernel_attention(int64_t args);
}
