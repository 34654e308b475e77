#pragma once
// After bufferization: linalg contractions -> calls into the kernel library (kernels.h).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/kernels/kernels.h"

namespace mlir {
class Location;
class ModuleOp;
class OpBuilder;
class Operation;
class Type;
class Value;
namespace func {
class CallOp;
class FuncOp;
}
namespace linalg {
class GenericOp;
}
}
namespace llvm {
template <typename T>
class ArrayRef;
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

/// The private declaration of the kernel symbol `name` (taking `args` i64 values) in `module`,
/// created on first use. declareKernel(m, "radix_kernel_zero", 4) -> func.func private @radix_kernel_zero(i64 x 4)
mlir::func::FuncOp declareKernel(mlir::ModuleOp module, const char* name, unsigned args);

/// A buffer as a kernel call passes it: its aligned base address and its offset in elements,
/// both i64. basePointerAndOffset(b, loc, memref<4x8xf32, strided<[8, 1], offset: 3>>) -> (base, 3)
std::pair<mlir::Value, mlir::Value> basePointerAndOffset(mlir::OpBuilder& b, mlir::Location loc, mlir::Value memref);

/// The value a fill writes, on tensors or buffers: a linalg.generic with no inputs and one init
/// whose body only yields a value from outside it (a generalized linalg.fill); else null.
mlir::Value filledValue(mlir::Operation* op);

/// True for a fill (filledValue) of a whole buffer, on buffers, with a constant whose bits are all
/// zero. isZeroFill(linalg.generic outs(%buf : memref<4x8xf32>) { yield %cst0 }) -> true
bool isZeroFill(mlir::Operation* op);

/// The buffer a value views through reshapes (an allocation or an argument).
/// bufferUnder(memref.expand_shape %buf : memref<32xf32> into memref<4x8xf32>) -> %buf
mlir::Value bufferUnder(mlir::Value v);

/// A static, row-major memref of `count` elements: two such views of one buffer list its
/// elements in the same order. contiguousOf(%v : memref<4x8xf32>, 32) -> true
bool contiguousOf(mlir::Value v, int64_t count);

/// The allocation or argument under a chain of views (reshapes, subviews, casts).
/// rootOf(memref.subview %buf[0, 1] [4, 4] [1, 1]) -> %buf
mlir::Value rootOf(mlir::Value v);

/// Whether moving a call (and the op it replaces) past `op` could change what it reads or
/// writes: `op` may write a buffer of `read`, or read or write one of `written` (roots). Only
/// generic ops on buffers and allocations are looked into; anything else might.
/// mayInterfere(linalg.generic outs(%c), {}, {%c}) -> true
bool mayInterfere(mlir::Operation* op, llvm::ArrayRef<mlir::Value> read, llvm::ArrayRef<mlir::Value> written);

/// The zero fill of the output of `op` (a linalg.generic on buffers) before it, with only ops
/// between that leave its buffer alone; else null. A call replacing `op` may then overwrite the
/// output instead of accumulating, without the fill. The fill may write the output through
/// another view of its buffer, if both views cover all of it.
/// zeroFillBefore(conv outs(%c)) after `linalg.generic outs(%c) { yield %zero }` -> that fill
mlir::Operation* zeroFillBefore(mlir::linalg::GenericOp op);

/// Replaces each zero fill of a whole contiguous buffer (a linalg.generic with no inputs that
/// yields a constant whose bits are all zero) with a call to radix_kernel_zero (a memset).
/// Returns how many were replaced.
int lowerZeroFillsToMemset(mlir::ModuleOp module, int threads);

/// The kernel ISA that code compiled for `target` asks for (the dispatch lowers it to what the
/// running CPU has): amx needs avx512bf16's features plus amx-tile and amx-bf16.
Isa isaOf(const KernelTarget& target);

/// Replaces each call of a function marked `radix.kernel = "attention"` (nn::sdpa, whose body is
/// the reference composition) with a call to radix_kernel_attention, and drops the functions no
/// longer called. Calls whose buffers the kernel cannot take keep the body. Returns how many
/// calls were replaced (attention_lower.cpp).
int lowerAttentionToKernels(mlir::ModuleOp module, const KernelTarget& target);

/// The attention kernel variant (an AttentionIsa value) compiled code asks for on `target`.
int attentionIsaFor(const KernelTarget& target);

/// A call of nn::sdpa's marked function as radix_kernel_attention's int64 array describes it:
/// the array's constant values (AttentionArg order; threads and isa left 0) and the array slot of
/// each call operand's buffer (its base; the element offset goes at slot + 1).
struct AttentionPlan {
  std::vector<int64_t> values;
  std::vector<int> buffers;
};
/// The plan of a call of `callee` (marked radix.kernel = "attention"), or nullopt when its
/// options or buffers are not what the array describes.
std::optional<AttentionPlan> planAttentionCall(mlir::func::CallOp call, mlir::func::FuncOp callee);
/// The module's calls of marked functions that have a plan; `marked`, when given, receives the
/// marked functions.
std::vector<std::pair<mlir::func::CallOp, AttentionPlan>> attentionCalls(mlir::ModuleOp module,
                                                                         std::vector<mlir::func::FuncOp>* marked = nullptr);
/// Fills a call's argument array before it, in an alloca at its function's entry (marked
/// kHostArrayAttr: host memory on every target) and returns its address as i64.
mlir::Value attentionArgArray(mlir::OpBuilder& b, mlir::func::CallOp call, const AttentionPlan& plan);
/// Marks an alloca of host code that stays in host memory when a GPU lowering moves the others.
constexpr const char* kHostArrayAttr = "radix.host_array";
/// An int64 array of `words` (i64 values) stored before `at`, in an alloca at its function's
/// entry marked kHostArrayAttr; its address as i64. hostArray(b, call, {base, offset, ...})
mlir::Value hostArray(mlir::OpBuilder& b, mlir::Operation* at, const std::vector<mlir::Value>& words);

/// True when lowerContractionsToKernels would replace `op` with a kernel call.
bool isKernelContraction(mlir::Operation* op);

/// True for a linalg.generic (2 inputs, 1 init) whose body is acc + ext(a) * ext(b).
bool isMulAddGeneric(mlir::Operation* op);

/// One group of a contraction's loops, collapsed to a single strided dim: its size and its
/// strides (in elements) in A, B and C.
struct ContractionDim {
  int64_t size = 1;
  int64_t s[3] = {0, 0, 0};
};
/// How lowerContractionsToKernels sees a contraction: (batch, M, N, K) and the loops it keeps
/// around the call (dims whose strides do not merge).
struct ContractionPlan {
  Elem aType = Elem::f32, bType = Elem::f32;
  ContractionDim batch, m, n, k;
  std::vector<ContractionDim> loops;
};
/// The operands, shape and strides of a contraction call, as radix_kernel_contract takes them
/// (aBase, aOffset, bBase, bOffset, cBase, cOffset, types, batch, m, n, k, then the strides of A,
/// B and C): 20 i64 values built at b's insertion point.
/// `flags` go into the types word (kContractOverwrite).
/// contractionCallArgs(b, loc, {a, b, c}, {0, 0, 0}, plan of a {2,3}x{3,4} matmul) -> 20 values
std::vector<mlir::Value> contractionCallArgs(mlir::OpBuilder& b, mlir::Location loc, const mlir::Value* base,
                                             const mlir::Value* offset, const ContractionPlan& plan,
                                             int64_t flags = 0);
/// The strides (in elements) of a statically shaped memref whose strides are all static, else
/// nullopt. staticStrides(memref<4x8xf32, strided<[8, 1], offset: 3>>) -> {8, 1}
std::optional<std::vector<int64_t>> staticStrides(mlir::Value memref);
/// The Elem of an f32, f16 or bf16 type, else nullopt: elemOf(bf16) -> Elem::bf16
std::optional<Elem> elemOf(mlir::Type t);
/// The plan of a linalg.generic on buffers that computes C += A * B, or nullopt.
std::optional<ContractionPlan> planContraction(mlir::Operation* op);
/// True when the compile target has every feature of `features` ("+avx512vnni,+avx512vl").
bool targetHasFeatures(const KernelTarget& target, const std::string& features);

}  // namespace radix::kernels
