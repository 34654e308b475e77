#pragma once
// After bufferization: convolutions (linalg.generic multiply-adds whose input is indexed by
// sums of loops, as Tensor::convolution emits them) -> calls to radix_kernel_conv (conv.h).
#include "compiler/kernels/lower.h"
#include "mlir/IR/AffineExpr.h"

namespace radix::kernels {

/// Replaces each convolution-shaped linalg.generic with a radix_kernel_conv call for the
/// target's ISA; returns how many. Plain contractions are left to lowerContractionsToKernels.
int lowerConvolutionsToKernels(mlir::ModuleOp module, const KernelTarget& target);

/// A floordiv term of an indexing expression: scale * (loop `dim` floordiv divisor).
struct FloorTerm {
  unsigned dim;
  int64_t divisor, scale;
};
/// Adds e * scale to per-loop coefficients `coef` (one per loop), with at most one floordiv
/// term in `floor`; false for any other expression. decompose(d0 * 2 + d3, 1, coef, floor)
/// adds 2 to coef[0] and 1 to coef[3].
bool decompose(mlir::AffineExpr e, int64_t scale, std::vector<int64_t>& coef, std::optional<FloorTerm>& floor);

/// True for a convolution or pooling generic (tensors or buffers) the kernels may take: row
/// fusion leaves it whole.
bool isWindowKernelOp(mlir::Operation* op);

/// True when RADIX_POOL_KERNELS=1: pooling runs radix_kernel_pool. Off by default: measured
/// slower than the generic loops (docs/compiler-notes.md). Not in the cache key: both
/// lowerings compute the same.
bool poolKernelsEnabled();

/// False when RADIX_CONV_KERNELS=0: convolutions stay loops (the reference lowering).
bool convKernelsEnabled();

}  // namespace radix::kernels
