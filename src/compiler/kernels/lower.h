#pragma once
// After bufferization: linalg contractions -> calls into the kernel library (kernels.h).
#include <string>

#include "compiler/kernels/kernels.h"

namespace mlir {
class ModuleOp;
class Operation;
}

namespace radix::kernels {

/// The compile target, as the compiler resolved it (host or CompileOptions override).
struct KernelTarget {
  std::string triple, cpu, features;
  int threads = 0;  // CompileOptions::threads
};

/// Replaces each linalg.generic that computes C += A * B (f32 accumulator; f32, f16 or bf16
/// operands, each maybe widened by arith.extf in the body) with a call to
/// radix_kernel_contract for the target's ISA. Returns how many were replaced.
int lowerContractionsToKernels(mlir::ModuleOp module, const KernelTarget& target);

/// True when lowerContractionsToKernels would replace `op` with a kernel call.
bool isKernelContraction(mlir::Operation* op);

/// The Isa that compiled code for `target` passes to the kernels.
Isa kernelIsa(const KernelTarget& target);

/// True for a linalg.generic (2 inputs, 1 init) whose body is acc + ext(a) * ext(b).
bool isMulAddGeneric(mlir::Operation* op);

}  // namespace radix::kernels
