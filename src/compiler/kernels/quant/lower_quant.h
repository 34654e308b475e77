#pragma once
// Quantized weights in the compiler: dequantize ops (src/ops/quant.cpp) stay out of elementwise
// fusion, and after bufferization a contraction that reads one becomes a radix_kernel_qcontract
// call over the packed rows (qkernels.h), so the decoded weight is never written.
#include "compiler/kernels/lower.h"

namespace mlir {
class ModuleOp;
class Operation;
}  // namespace mlir

namespace radix::kernels {

/// The attribute that marks a dequantize linalg.generic; its value is quantName(type).
constexpr const char* kDequantizeAttr = "radix.dequantize";

/// True for a dequantize linalg.generic.
bool isDequantize(mlir::Operation* op);

/// Registers radix-fuse-elementwise-ops: linalg-fuse-elementwise-ops (same patterns, same
/// default control) except that a dequantize op is never fused into its consumers nor its
/// producers into it.
void registerQuantPasses();

/// After bufferization, before lowerContractionsToKernels: each contraction C += X · Wᵀ whose
/// W is the buffer a dequantize op writes becomes a radix_kernel_qcontract call; a dequantize
/// left without readers is erased with its buffer. Returns how many contractions were replaced.
int lowerQuantContractions(mlir::ModuleOp module, const KernelTarget& target);

}  // namespace radix::kernels
