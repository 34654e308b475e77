#pragma once
// Compiled code as the runtime holds it: the packed entry, what keeps it alive, result aliases.
// No MLIR or LLVM here: the runtime library builds without them.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "radix/detail/trace.h"

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
  /// The cache entry holding this code, "" when none was written.
  std::string entryDir;
  /// Why this code cannot run in this process (a GPU target without a device), "" when it can:
  /// calls throw it as radix::Error.
  std::string cannotRun;
  /// The CUDA device whose buffers the entry takes and returns; -1: the CPU's.
  int cudaDevice = -1;
  /// Seconds spent in each phase (for the compile log and the trace).
  double lowerSeconds = 0, llvmSeconds = 0, loadSeconds = 0;
};

/// Binds `code`, compiled for `target` ("cpu", "cuda:sm_90a"), to `platform`: the CUDA device
/// whose buffers it takes, or, for a GPU target without a device (Platform::cudaTarget), why it
/// cannot run ("[exe] Mlp is compiled for cuda:sm_90a without a device ...").
void placeOn(CompiledCode& code, const Platform& platform, std::string_view target, const std::string& name);

/// The CPU executable over compiled code (runtime/exe.cpp).
std::shared_ptr<Executable> makeCpuExecutable(std::string mlirText, Signature signature, CompiledCode code);

/// Validates CompileOptions::targetCpu / targetFeatures against LLVM's tables; set by the
/// compiler library when it is loaded (the runtime alone accepts any names).
using TargetChecker = void (*)(const CompileOptions&);
void setTargetChecker(TargetChecker checker);
std::atomic<TargetChecker>& targetChecker();

}  // namespace radix::detail
