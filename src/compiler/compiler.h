#pragma once
// From a traced module to loaded native code, through the on-disk cache.
#include <memory>
#include <string>
#include <vector>

#include "radix/detail/trace.h"
#include "radix/platform.h"

namespace mlir {
class ModuleOp;
class Operation;
}

namespace radix::detail {

struct ProfileTable;

/// Packed entry point: one pointer per argument and out-parameter, each pointing to that
/// buffer's data pointer (static shapes, bare-pointer calling convention).
using PackedEntry = void (*)(void**);

/// resultAlias of a zero-size result: no out-parameter, nothing to copy.
constexpr int32_t kNoData = -2;

struct CompiledCode {
  PackedEntry entry = nullptr;
  std::shared_ptr<void> owner;  // keeps the JIT or loaded object alive
  bool fromCache = false;
  /// Per result: -1, or the earlier result it duplicates (the entry returns each value once;
  /// the runtime copies duplicates), or kNoData for a zero-size result the entry does not return.
  std::vector<int32_t> resultAlias;
  /// The per-op profile's counters, when compiled with profiling (runtime/profiler.h).
  std::shared_ptr<ProfileTable> profile;
  /// Seconds spent in each phase (for the compile log and the trace).
  double lowerSeconds = 0, llvmSeconds = 0, loadSeconds = 0;
};

/// Lowers a clone of `module` (printed, without locations, as `moduleText`: the hashed bytes)
/// to native code for `platform`, or loads it from the cache.
/// Throws radix::Error("[compile] ...") with the failing pass and dump path on failure.
CompiledCode compileModule(mlir::ModuleOp module, const std::string& moduleText, const Platform& platform,
                           const std::string& name, const Signature& signature);

/// Throws radix::Error("[compile] ...") unless the options' target CPU and features are known to
/// the host's LLVM target.
void checkTarget(const CompileOptions& options);

/// Removes the `bufferization.alloc_tensor ... copy(x)` that ops/contract.cpp and ops/conv.cpp put
/// before a contraction's operand to keep its producer out of the contraction's fusion: once
/// fusion is over (or before sharding, whose partitioner has no interface for them) they would
/// only copy. dropFusionBarriers(module) turns `alloc_tensor() copy(%x)` into `%x`.
void dropFusionBarriers(mlir::Operation* root);

/// The executable that runs compiled code on CPU buffers (src/runtime/exe.cpp).
std::shared_ptr<Executable> makeCpuExecutable(std::string mlirText, Signature signature, CompiledCode code);

}  // namespace radix::detail
