#pragma once
// AMX outside the contraction dispatch: the tile permission, a direct u8 x s8 -> s32 entry to the
// int8 tile driver with B raw or packed by the caller (compiled i8/u8 contractions reach the same
// driver through runBytes), the quantized prompt path's bf16 rows GEMM, and the drivers on emulated
// tiles for tests. Every function here runs on any x86-64 CPU: the ones that use tiles check the
// CPU and the OS permission first and return false.
#include <cstddef>
#include <cstdint>

#include "compiler/kernels/kernels.h"

namespace radix::kernels {

/// True when the CPU has AMX-TILE and Linux granted this process the tile state
/// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); asked once, before any tile is used).
bool amxTilesPermitted();
/// amxTilesPermitted() and the CPU has AMX-BF16 (and the avx512bf16 base).
bool amxBf16Available();
/// amxTilesPermitted() and the CPU has AMX-INT8.
bool amxInt8Available();

/// C[m][n] (s32, row stride ldc) = A[m][k] (u8, row stride lda) . B[k][n] (s8, row stride ldb),
/// or C += A . B when `accumulate`; any m, n, k >= 1. threads 0: one per core.
/// Returns false, C untouched, when !amxInt8Available(): the caller runs its own kernel.
///   amxInt8Gemm(64, 4096, 4096, a, 4096, b, 4096, c, 4096);
bool amxInt8Gemm(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                 int32_t* c, int64_t ldc, bool accumulate = false, int threads = 1);

/// B packed once for amxInt8GemmPacked (weights: pack at load, reuse for every prompt).
/// Bytes of the packed B[k][n] (64-byte aligned buffer expected), and the packer (any CPU).
size_t amxInt8PackedBytes(int64_t k, int64_t n);
void amxInt8PackB(int64_t k, int64_t n, const int8_t* b, int64_t ldb, void* packed);
/// amxInt8Gemm on a B packed by amxInt8PackB (same k, n).
bool amxInt8GemmPacked(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const void* packedB,
                       int32_t* c, int64_t ldc, bool accumulate = false, int threads = 1);

/// The quantized prompt path (decoded weights on bf16 tiles): x[rows][k] (f32, row stride lda)
/// rounded to bf16 and packed as amxBf16RowsGemm's activations (32-row panels of k / 2 pairs, k
/// zero-padded to 32), into amxBf16PanelBytes(rows, k) bytes, 64-byte aligned.
///   amxPackRowsBf16(512, 768, x, 768, packed);
size_t amxBf16PanelBytes(int64_t rows, int64_t k);
/// out[i] = x[i] rounded to bf16 (to nearest even, vcvtneps2bf16), i < n; only where the host
/// has avx512bf16 (AMX hosts and Zen 4/5: it uses no tile instruction).
///   amxRoundBf16(row, 768, out);
void amxRoundBf16(const float* x, int64_t n, uint16_t* out);
void amxPackRowsBf16(int64_t rows, int64_t k, const float* x, int64_t lda, void* packed);
/// C[i][j] += sum_k x[i][k] w[j][k] for i < xRows, j < wRows: w bf16 rows (k contiguous, row stride
/// ldw), x packed by amxPackRowsBf16, C[i][j] at c[i * sci + j * scj]. One thread; only where
/// amxBf16Available().
///   amxBf16RowsGemm(512, 256, 768, packed, w, 768, c, 2048, 1);
void amxBf16RowsGemm(int64_t xRows, int64_t wRows, int64_t k, const void* xPacked, const uint16_t* w, int64_t ldw,
                     float* c, int64_t sci, int64_t scj);

/// Tests: the AMX drivers (blocking, packing, edge tiles, in-place A) on emulated tiles, in plain
/// C++ that any CPU runs; only the tile instructions themselves differ from the real path.
void amxEmulatedBf16Gemm(const Problem& p);
/// b or packedB (amxInt8PackB) as in amxInt8Gemm / amxInt8GemmPacked.
void amxEmulatedInt8Gemm(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b,
                         int64_t ldb, const void* packedB, int32_t* c, int64_t ldc, bool accumulate);

/// The 8-bit contraction (i8/u8 operands in any mix, C in i32) on emulated int8 tiles.
void amxEmulatedBytes(const Problem& p);

/// Internal (amx.cpp, compiled for AMX): call only when the matching *Available() holds.
void amxBytesRun(const Problem& p, int threads);
void amxInt8Run(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                const void* packedB, int32_t* c, int64_t ldc, bool accumulate, int threads);

}  // namespace radix::kernels
