#pragma once
// From a traced module to loaded native code, through the on-disk cache.
#include <memory>
#include <string>
#include <vector>

#include "radix/detail/trace.h"
#include "radix/platform.h"
#include "runtime/executable.h"

namespace mlir {
class ModuleOp;
class Operation;
}

namespace radix::detail {

/// Lowers a clone of `module` (printed, without locations, as `moduleText`: the hashed bytes)
/// to native code for `platform`, or loads it from the cache.
/// Throws radix::Error("[compile] ...") with the failing pass and dump path on failure.
CompiledCode compileModule(mlir::ModuleOp module, const std::string& moduleText, const Platform& platform,
                           const std::string& name, const Signature& signature);

/// A hash of the code generator's and the compiled-code ABI's sources (src/compiler,
/// src/runtime), part of every cache key: codegenHash() -> "3f1c0a9e5b7d2e41"
const char* codegenHash();

/// Throws radix::Error("[compile] ...") unless the options' target CPU and features are known to
/// the host's LLVM target.
void checkTarget(const CompileOptions& options);

/// Removes the `bufferization.alloc_tensor ... copy(x)` that ops/contract.cpp and ops/conv.cpp put
/// before a contraction's operand to keep its producer out of the contraction's fusion: once
/// fusion is over (or before sharding, whose partitioner has no interface for them) they would
/// only copy. dropFusionBarriers(module) turns `alloc_tensor() copy(%x)` into `%x`.
void dropFusionBarriers(mlir::Operation* root);

}  // namespace radix::detail
