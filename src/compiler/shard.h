#pragma once
// Sharded compilation (shard.cpp): @main partitioned over the processes of a grid, its
// collectives lowered to calls into src/runtime/mpi.cpp; compiled once, on rank 0.
#include <functional>
#include <string>

#include "radix/detail/trace.h"
#include "radix/platform.h"

namespace mlir {
class ModuleOp;
}

namespace radix::detail {

struct CompiledCode;

/// Runs a pass pipeline on the module being lowered; throws radix::Error("[compile] ...").
using RunPipeline = std::function<void(const std::string& pipeline, const char* what)>;

/// Inlines the module, annotates @main's arguments and results with shard.grid / shard.sharding
/// / shard.shard from their sharding flags, runs func.func(sharding-propagation, cse,
/// shard-partition) and lowers the resulting shard collectives to radix_mpi_* calls. @main then
/// takes and returns one partition's shards. Throws radix::Error("[compile] ...").
void partitionForProcesses(mlir::ModuleOp module, const Signature& signature, int numPartitions,
                           const RunPipeline& runPipeline);

/// Compiles once per grid: rank 0 runs `compileHere` (which also returns the object's bytes) and
/// broadcasts the object over MPI; the other ranks load it. A failure on rank 0 is thrown on
/// every rank. `keyText(resultAlias)` is what the object's radix_entry_key holds.
CompiledCode compileOnRoot(uint64_t key, const std::string& name,
                           const std::function<CompiledCode(std::string& object)>& compileHere,
                           const std::function<std::string(const std::vector<int32_t>&)>& keyText);

}  // namespace radix::detail
