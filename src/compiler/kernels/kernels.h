#pragma once
// The contraction micro-kernel library (no MLIR): compiled code calls radix_kernel_contract,
// which runs a packed, blocked GEMM or a bandwidth GEMV for the ISA chosen at compile time.
#include <cstdint>

namespace radix::kernels {

/// Instruction sets, in increasing order; compiled code passes the one its target allows.
/// amx: avx512bf16 plus AMX-TILE/AMX-BF16 tiles (and the OS's tile permission, see hostIsa).
enum class Isa : int32_t { x86_64 = 0, avx2 = 1, avx512 = 2, avx512bf16 = 3, amx = 4 };
constexpr int kIsaCount = 5;
/// Element types of the operands: C is f32 for the floats, i32 for the 8-bit integers (which
/// both operands then are).
enum class Elem : int32_t { f32 = 0, f16 = 1, bf16 = 2, i8 = 3, u8 = 4 };
/// i8 or u8: an integer contraction into i32. isByte(Elem::u8) -> true
constexpr bool isByte(Elem e) { return e == Elem::i8 || e == Elem::u8; }
/// Bytes of one element: elemBytes(Elem::bf16) -> 2
constexpr int64_t elemBytes(Elem e) { return e == Elem::f32 ? 4 : isByte(e) ? 1 : 2; }
/// The code path a call took.
enum class Path : int32_t { gemm = 0, gemv = 1 };
constexpr int kPathCount = 2;

/// In radix_kernel_contract's `types` (bits 0-7 A's Elem, 8-15 B's): C = A . B instead of +=
/// (the zero fill before the contraction was dropped).
constexpr int64_t kContractOverwrite = int64_t(1) << 16;

/// C[b][i][j] += sum_k A[b][i][k] * B[b][k][j] (= with `overwrite`); strides in elements of
/// each operand's type.
struct Problem {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bBase = nullptr;  // B's buffer (b is bBase plus an offset): the packed-weight cache's key
  float* c = nullptr;           // int32_t* for 8-bit operands
  Elem aType = Elem::f32, bType = Elem::f32;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  int64_t sab = 0, sam = 0, sak = 0;
  int64_t sbb = 0, sbk = 0, sbn = 0;
  int64_t scb = 0, scm = 0, scn = 0;
  bool overwrite = false;
};

/// Whether runAmx runs an m x n product of these operand types on bf16 tiles (which honour
/// `overwrite` themselves; GEMVs keep the vector kernels). amxTilesTake(bf16, bf16, 64, 768) -> true
inline bool amxTilesTake(Elem a, Elem b, int64_t m, int64_t n) {
  return a == Elem::bf16 && b == Elem::bf16 && m != 1 && n != 1;
}
inline bool amxTilesTake(const Problem& p) { return amxTilesTake(p.aType, p.bType, p.m, p.n); }
/// Sets C's batch x m x n elements to zero (`threads` for a large contiguous C).
void zeroC(const Problem& p, int threads);

/// The best ISA this process's CPU runs. amx only when the CPU has AMX-TILE and AMX-BF16 and
/// Linux granted the tile state (arch_prctl(ARCH_REQ_XCOMP_PERM), asked once per process here).
Isa hostIsa();
/// Whether f32 B with contiguous columns is copied panel by panel inside the product (impl.h's
/// packAlong) rather than packed row by row before it. The copy reads B's rows far apart, which
/// pays where strided reads are cheap (AMD Zen 5: f32 64x4096x4096, B not cached, 0.75 -> 1.0 of
/// oneDNN) and costs where they are not (an Intel Xeon with AMX, KVM guest: 61x1023x517 78 ->
/// 47 GFLOP/s, 64x4096x4096 74 -> 66).
bool packAlongPays();
/// Tests: 1 or 0 forces packAlongPays() on or off for the process, -1 gives it back to the CPU.
void forcePackAlong(int on);
/// Calls that compiled code made asking for `isa` (before it is lowered to what the CPU runs).
uint64_t requestCount(Isa isa);
/// "avx512bf16"
const char* isaName(Isa isa);
/// Calls that took `path` on `isa` since the process started (tests prove the fast path ran).
uint64_t callCount(Path path, Isa isa);

/// Per ISA (one TU each): runs `p` on `threads` threads (>= 1, not nested), returns the path.
Path runX86_64(const Problem& p, int threads);
Path runAvx2(const Problem& p, int threads);
Path runAvx512(const Problem& p, int threads, bool bf16);
Path runAmx(const Problem& p, int threads);
/// The 8-bit contractions (C in i32) without tiles, compiled for each ISA (bytes_impl.h).
void bytesGemmX86_64(const Problem& p, int threads);
void bytesGemmAvx2(const Problem& p, int threads);
void bytesGemmAvx512(const Problem& p, int threads);
/// vpdpbusd tiles (bytes_vnni.cpp): only where the CPU has AVX-512 VNNI (hostHasAvx512Vnni).
void bytesGemmVnni(const Problem& p, int threads);
bool hostHasAvx512Vnni();
/// Whether runBytes puts an 8-bit contraction on the int8 tiles when the host runs `run`.
bool bytesOnTiles(const Problem& p, Isa run);
/// An 8-bit contraction (C in i32): on int8 tiles where bytesOnTiles, else with AVX-512 VNNI, else
/// the ISA's blocked kernel; honours `overwrite` on every path. Returns the ISA that ran it (amx for
/// the tiles).
Isa runBytes(const Problem& p, int threads, Isa run);

}  // namespace radix::kernels

extern "C" {
/// The symbol compiled code calls. Pointers are passed as integers (base address + element
/// offset); types are Elem values; isa an Isa value (lowered to what the CPU runs); threads 0
/// means one per core.
void radix_kernel_contract(int64_t aBase, int64_t aOffset, int64_t bBase, int64_t bOffset, int64_t cBase,
                           int64_t cOffset, int64_t types, int64_t batch, int64_t m, int64_t n, int64_t k,
                           int64_t sab, int64_t sam, int64_t sak, int64_t sbb, int64_t sbk, int64_t sbn,
                           int64_t scb, int64_t scm, int64_t scn, int64_t threads, int64_t isa);
/// Zeroes `bytes` bytes at base + offset (bytes): what a zero linalg.fill of a contiguous buffer
/// becomes. Large buffers are split across threads (0: one per core), so first touches are too.
void radix_kernel_zero(int64_t base, int64_t offset, int64_t bytes, int64_t threads);
/// The allocator of compiled code (runtime/alloc.cpp), which the kernels' scratch shares.
void* _mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size);
void _mlir_memref_to_llvm_free(void* block);
}
