#pragma once
// Fused-decode contractions over quantized weights (no MLIR). Compiled code calls
// radix_kernel_qcontract for C += A · dequant(W)ᵀ; each ISA file implements runQuant*.
#include <cstdint>

#include "compiler/kernels/kernels.h"
#include "radix/quant.h"

namespace radix::kernels {

/// C[i][j] += sum_k A[i][k] * W[j][k], W[j] = dequantize(row j of the packed weight).
/// A is f32 with unit stride along k; C is f32.
struct QProblem {
  const float* a = nullptr;
  const uint8_t* w = nullptr;        // packed rows, `wRowBytes` apart
  const void* scales = nullptr;      // i8_channel / i4_group only
  const void* zeros = nullptr;       // i4_group only (may be null): same Elem as the scales
  Elem scaleType = Elem::f32;
  float* c = nullptr;
  QuantType type = QuantType::none;
  int64_t m = 1, n = 1, k = 1, group = 0;
  int64_t sam = 0, wRowBytes = 0, scm = 0, scn = 1;
  // Set by the dispatcher where the CPU runs AMX-BF16 tiles: m >= kAmxMinM then runs gemmAmx.
  bool amx = false;
};

/// gemmAmx: the weights decoded to bf16 rows (256 KB at a time) and the activations rounded to
/// bf16, on tdpbf16ps tiles; from this many activation rows (fewer fill too little of a tile).
constexpr int64_t kAmxMinM = 16;

/// The code paths a quantized call can take (tests prove which one ran).
/// gemmInt8: int8 activations and weights through vpdpbusd (AVX-512 VNNI, m > 4); gemmAmx: see kAmxMinM.
enum class QPath : int32_t { scalar = 0, gemvF32 = 1, gemvInt8 = 2, gemmDecoded = 3, gemmAmx = 4, gemmInt8 = 5 };
constexpr int kQPathCount = 6;
/// Calls that took `path` since the process started.
uint64_t qcallCount(QPath path);
/// Same, counting only the calls that ran on `isa` (after lowering it to what the CPU runs).
uint64_t qcallCount(QPath path, Isa isa);

/// radix_kernel_qcontract's `types`: QuantType in bits 0..7, the scales' Elem in 8..15, A's Elem
/// in 16..23 (f16/bf16 activations are widened to f32 by the dispatcher before runQuant*), and
/// kQOverwrite: C holds nothing yet (the lowering dropped its zero fill), so each thread zeroes
/// its own rows of C before accumulating into them.
constexpr int kQScaleShift = 8, kQActShift = 16;
constexpr int64_t kQOverwrite = int64_t(1) << 24;
/// radix_kernel_qcontract's `isa`: an Isa value, plus this bit when the compile target has VNNI
/// (avx512_vnni or avx_vnni); the dispatcher passes vnni = true only where the CPU has it too.
constexpr int64_t kQIsaVnni = 1 << 8;
/// True when this CPU runs vpdpbusd for `isa` (avx512 paths: avx512_vnni; avx2: avx_vnni).
bool hostVnni(Isa isa);

/// Per ISA (one TU each): rows [n0, n1) of `p` on the calling thread; returns the path taken.
QPath runQuantX86_64(const QProblem& p, int64_t n0, int64_t n1);
QPath runQuantAvx2(const QProblem& p, int64_t n0, int64_t n1, bool vnni);
QPath runQuantAvx512(const QProblem& p, int64_t n0, int64_t n1, bool vnni);

}  // namespace radix::kernels

extern "C" {
/// The symbol compiled code calls (pointers as base + byte/element offset, as radix_kernel_contract).
/// types: QuantType | (scale Elem << 8) | (A Elem << 16). isa: the compile target's Isa (| kQIsaVnni),
/// lowered to what the CPU runs. threads 0 = one per core; the n rows are split across threads.
void radix_kernel_qcontract(int64_t aBase, int64_t aOffset, int64_t wBase, int64_t wOffset, int64_t sBase,
                            int64_t sOffset, int64_t zBase, int64_t zOffset, int64_t cBase, int64_t cOffset,
                            int64_t types, int64_t m, int64_t n, int64_t k, int64_t group, int64_t sam,
                            int64_t wRowBytes, int64_t scm, int64_t scn, int64_t threads, int64_t isa);
}
