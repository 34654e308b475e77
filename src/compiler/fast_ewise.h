#pragma once
// Passes of the fast CPU elementwise/reduction path (fast_ewise.cpp), named in the lowering
// pipeline: radix-fuse-rows, radix-lower-rows{parallel=0|1}, radix-math-approx.

namespace mlir {
class Operation;
}

namespace radix::detail {

/// Copies between strided buffers (a KV cache row per head, an input into its zero frame) as
/// linalg.copy, which becomes loops: MLIR's generic memrefCopy walks the elements with index
/// arithmetic on a CPU, and a GPU's memcpy would copy the bytes in a row.
/// memref.copy %row, %subview : memref<64xf32> to memref<64xf32, strided<[1], offset: 128>> ->
/// linalg.copy
void lowerStridedCopies(mlir::Operation* root);

/// Registers the passes with MLIR's pass registry (once per process).
void registerFastEwisePasses();

}  // namespace radix::detail
