#pragma once
// Rewrites of the module between compileModule's pipelines (module_rewrites.cpp; private to
// src/compiler). Each function documents its rewrite at its definition.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/executable.h"

namespace mlir {
class ModuleOp;
}

namespace radix::detail {

/// The traced entry, and its name in the lowered module: a JIT-ed `main` meets the program's own
/// and LLVM's special treatment of that name.
inline constexpr const char* kTracedEntry = "main";
inline constexpr const char* kEntry = "radix_entry";
/// Set on @radix_entry before bufferization (fast_ewise.cpp): the number of its (tensor)
/// arguments when none of them is donated, i.e. when every out-parameter added later is fresh.
inline constexpr const char* kFreshOutputsAttr = "radix.fresh_outputs_after";

// Before bufferization.
/// @main -> @radix_entry with donated arguments written in place; returns, per result, -1 or the
/// earlier result it duplicates.
std::vector<int32_t> prepareEntry(mlir::ModuleOp module, const Signature& signature);
void retypeZeroSizeBoundaries(mlir::ModuleOp module, std::vector<int32_t>& mainAlias);
void unshareFilledDestinations(mlir::ModuleOp module);
void writeLoopStateInPlace(mlir::ModuleOp module);

// After bufferization.
void dropDonatedSelfCopies(mlir::ModuleOp module, const Signature& signature, const std::vector<int32_t>& resultAlias);
void writeReshapedResultsInPlace(mlir::ModuleOp module);
void lowerSmallOpsToLoops(mlir::ModuleOp module);

// Before LLVM.
void keepCallsOutOfLine(mlir::ModuleOp module);
void addEntryKey(mlir::ModuleOp module, const std::string& text);
/// An external constant i8 array `symbol` holding `text`, which the runtime reads from the
/// loaded object: addConstantString(module, "radix_entry_key", key).
void addConstantString(mlir::ModuleOp module, const char* symbol, const std::string& text);

}  // namespace radix::detail
